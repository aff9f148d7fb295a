# sim.cmake — simulator tests that need MPI (included by tests/CMakeLists.txt).
#
# sim_vs_cpu: every method's tracked peaks on the cpu backend (real trial under mpirun)
# equal the simulator's for the same small problem: same schedule, same bytes.
add_executable(sim_vs_cpu ${CMAKE_CURRENT_SOURCE_DIR}/mpi/sim_vs_cpu.c)
target_link_libraries(sim_vs_cpu PRIVATE cpb_cli)
cpb_mpi_test(sim_vs_cpu_np2 2 $<TARGET_FILE:sim_vs_cpu> --quick)
cpb_mpi_test(sim_vs_cpu_np4 4 $<TARGET_FILE:sim_vs_cpu>)
# an odd world: its own shapes (GQA 2 and 3, kv heads above, at and below C; lengths off powers of two)
cpb_mpi_test(sim_vs_cpu_np3 3 $<TARGET_FILE:sim_vs_cpu>)
# every method under --tp 2 (tp 2 x cp 2, then tp 2 x cp 3: the odd shapes)
cpb_mpi_test(sim_vs_cpu_tp2_np4 4 $<TARGET_FILE:sim_vs_cpu> --quick --tp 2)
cpb_mpi_test(sim_vs_cpu_tp2_np6 6 $<TARGET_FILE:sim_vs_cpu> --quick --tp 2)

# `cpbench run --backend sim`: a result, and the refusals of bad input (exit 2)
cpb_cmd_test(sim_run_layer ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 1M)
cpb_cmd_test(sim_run_model ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 256K
             --scope model --seq-stop 1M)
# bad input exits with 2 (not merely non-zero) and says what is wrong
set(SIM_EXPECT sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/expect_exit.sh)
cpb_cmd_test(sim_run_unknown_gpu ${SIM_EXPECT} 2 - "unknown GPU profile 'v100'.*h100-sxm" --
             ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 1M --gpu v100)
cpb_cmd_test(sim_run_refused_shape ${SIM_EXPECT} 2 - "ulysses needs H % C == 0" --
             ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 6 --seq 6M)
cpb_cmd_test(sim_run_model_needs_sim ${SIM_EXPECT} 2 - "use --backend sim" --
             ${CPBENCH} run --backend cpu --method ulysses --model tiny --seq 256 --scope model)
# the training setup and fpdt's schedule: printed; a host too small is an OOM (exit 0) whose
# reason names host memory; an unknown setup is bad input
cpb_cmd_test(sim_run_model_deepspeed ${SIM_EXPECT} 0 - "peak in four buckets: model states 14.96 GiB" --
             ${CPBENCH} run --backend sim --method fpdt --fpdt-impl pipelined --framework deepspeed --model llama3-8b
             --gpus 8 --seq 256K --scope model --seq-stop 256K)
cpb_cmd_test(sim_run_model_host_ram ${SIM_EXPECT} 0 - "host-oom — host memory: needs" --
             ${CPBENCH} run --backend sim --method upipe --model llama3-8b --gpus 8 --seq 1M --scope model
             --seq-stop 1M --host-ram 16G)
cpb_cmd_test(sim_run_model_unknown_framework ${SIM_EXPECT} 2 - "--framework 'nosuch': expected one of torchtitan" --
             ${CPBENCH} run --backend sim --method upipe --model llama3-8b --gpus 8 --seq 1M --scope model
             --framework nosuch)
# the training setup's parts: a part on the command line overrides the preset's and the
# assumptions block says so; a meaningless combination is refused (exit 2); a model that
# does not fit names the usual fixes the setup lacks
cpb_cmd_test(sim_run_model_part_override ${SIM_EXPECT} 0 - "checkpoint offload  off \\[command line\\]" --
             ${CPBENCH} run --backend sim --method upipe --model llama3-8b --gpus 8 --seq 256K --scope model
             --seq-stop 256K --framework alst --ckpt-offload off)
cpb_cmd_test(sim_run_model_part_refused ${SIM_EXPECT} 2 - "--ckpt-offload on offloads the checkpointed layer inputs" --
             ${CPBENCH} run --backend sim --method upipe --model llama3-8b --gpus 8 --seq 256K --scope model
             --ckpt none --ckpt-offload on)
# --pp (model_scope_pp.h): layers that do not split over the stages are refused with exit 2,
# naming --pp and Megatron's uneven first / last stage; a pp that does not divide the GPUs too;
# an uneven split runs and the assumptions block and pipeline line say so
cpb_cmd_test(sim_run_model_pp_layers_refused ${SIM_EXPECT} 2 - "--pp 3 does not divide the model's 32 layers.*--pp-first-layers" --
             ${CPBENCH} run --backend sim --method ring --model llama2-7b --gpus 6 --seq 48K --scope model --pp 3)
cpb_cmd_test(sim_run_model_pp_gpus_refused ${SIM_EXPECT} 2 - "--pp 3 does not divide the 8 GPUs" --
             ${CPBENCH} run --backend sim --method ring --model llama2-7b --gpus 8 --seq 64K --scope model --pp 3)
cpb_cmd_test(sim_run_model_pp_uneven ${SIM_EXPECT} 0 - "pipeline: 3 stages, layers 10 first, 10 last, 12 on each other stage" --
             ${CPBENCH} run --backend sim --method ring --model llama2-7b --gpus 6 --seq 48K --scope model --pp 3
             --pp-first-layers 10 --pp-last-layers 10 --grad-accum 4 --seq-stop 48K)
cpb_cmd_test(sim_run_model_oom_names_fixes ${SIM_EXPECT} 0 - "usual fixes.*--fused-loss on" --
             ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 1M --scope model
             --seq-stop 1M --framework hf-zero3)

# issue 24: --attn fa2|fa3 are simulator-only estimates (labelled), fa3 needs a Hopper
# profile, the cpu backend refuses them (exit 2, nothing written); the implementation per
# call class is printed (a delta backward runs on our kernels whatever --attn says)
cpb_cmd_test(sim_run_fa3_labelled ${SIM_EXPECT} 0 - "estimates: attn.fa3" --
             ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 64K --gpu h100 --attn fa3)
cpb_cmd_test(sim_run_fa3_refused_off_hopper ${SIM_EXPECT} 2 - "FlashAttention-3 runs on Hopper GPUs only.*a800-80g" --
             ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 64K --gpu a800-80g --attn fa3)
cpb_cmd_test(cpu_run_fa2_refused ${SIM_EXPECT} 2 - "--attn fa2 is a simulator-only accounting input" --
             ${CPBENCH} run --backend cpu --method ulysses --model tiny --seq 64 --attn fa2)
cpb_cmd_test(sim_run_attn_per_class ${SIM_EXPECT} 0 - "attention: forward cudnn, backward own" --
             ${CPBENCH} run --backend sim --method upipe --model llama3-8b --gpus 8 --seq 64K --upipe-bwd delta)
