# CLI refusals: bad arguments exit with code 2, say what is wrong, and write nothing.
set(CPB_EXPECT sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/expect_exit.sh)
set(CPB_CLI_DUMP ${CMAKE_CURRENT_BINARY_DIR}/cli_refusal_dump.h5)
function(cpb_cli_test name)
  cpb_cmd_test(cli_${name} ${ARGN})
endfunction()
function(cpb_cli_refusal name pattern)
  cpb_cli_test(${name} ${CPB_EXPECT} 2 ${CPB_CLI_DUMP} ${pattern} -- ${ARGN})
endfunction()
# argument errors are found before MPI starts: no mpirun needed
cpb_cli_refusal(unknown_method "unknown method 'nosuch'"
  ${CPBENCH} verify --method nosuch --model tiny --seq 64 --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(unknown_preset "unknown preset 'gpt5'.*llama3-8b"
  ${CPBENCH} verify --method ulysses --model gpt5 --seq 64 --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(missing_value "--seq: missing value"
  ${CPBENCH} verify --method ulysses --model tiny --dump ${CPB_CLI_DUMP} --seq)
cpb_cli_refusal(bad_dtype "--dtype 'fp16': expected fp32 or bf16"
  ${CPBENCH} verify --method ulysses --model tiny --seq 64 --dtype fp16 --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(bad_size "--seq '12q'"
  ${CPBENCH} verify --method ulysses --model tiny --seq 12q --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(unknown_option "unknown option '--sequence'"
  ${CPBENCH} verify --method ulysses --model tiny --sequence 64 --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(unknown_command "unknown command 'verfy'" ${CPBENCH} verfy --method ulysses)
# shape errors need the world size: under mpirun
cpb_cli_refusal(seq_not_divisible "--seq 65 is not divisible by the 2 ranks"
  ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --allow-run-as-root --bind-to none
  ${CPBENCH} verify --method ulysses --model tiny --seq 65 --dump ${CPB_CLI_DUMP})
cpb_cli_refusal(method_refuses "ulysses needs H % C == 0"
  ${MPIEXEC_EXECUTABLE} -np 3 --oversubscribe --allow-run-as-root --bind-to none
  ${CPBENCH} verify --method ulysses --model tiny --seq 96 --dump ${CPB_CLI_DUMP})
# a refusal under --expect-refuse passes, acceptance fails (exit 1)
cpb_cli_test(expect_refuse_passes ${MPIEXEC_EXECUTABLE} -np 3 --oversubscribe --allow-run-as-root
  --bind-to none ${CPBENCH} verify --method ulysses --model tiny --seq 96 --expect-refuse)
cpb_cli_test(expect_refuse_accepted ${CPB_EXPECT} 1 - "accepted a shape it was expected to refuse" --
  ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --allow-run-as-root --bind-to none
  ${CPBENCH} verify --method ulysses --model tiny --seq 64 --expect-refuse)
# under --method all a method that refuses the shape is reported as refused (never
# "skipped") and does not fail the run; the others still run and pass (exit 0)
cpb_cli_test(method_all_reports_refused ${CPB_EXPECT} 0 - "^ulysses: refused \\(not a failure under --method all\\): ulysses needs H % C == 0" --
  ${MPIEXEC_EXECUTABLE} -np 3 --oversubscribe --allow-run-as-root --bind-to none
  ${CPBENCH} verify --method all --model tiny --seq 96)
cpb_cli_test(list ${CPB_EXPECT} 0 - "llama3-8b +4096 +32 +8 +128" -- ${CPBENCH} list)
# The cuda backend's tools (backends/cuda/tools) are built in every configuration: the
# self-test runs here on the cpu backend against itself (its own code checked: every check
# runs, every one passes), under mpirun on 2 ranks for the collectives; bench-kernels
# refuses a backend that models time.
cpb_cli_test(selftest_cpu ${CPB_EXPECT} 0 - "selftest cpu: [0-9]+ passed, 0 failed" --
  ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --allow-run-as-root --bind-to none ${CPBENCH} selftest --backend cpu)
cpb_cli_refusal(bench_kernels_sim "the sim backend models time" ${CPBENCH} bench-kernels --backend sim)
cpb_cli_refusal(device_props_cpu "the cpu backend has no devices to describe" ${CPBENCH} device-props --backend cpu)
cpb_cli_refusal(unknown_backend "unknown backend 'gpu'.*cpu, sim, cuda"
  ${CPBENCH} run --backend gpu --method ulysses --model tiny --seq 64)
# every case of the issue's "Why" list, table-driven (tests/cli/why_cases.txt): the exit
# code, the message, and the files left as they were
cpb_cmd_test(cli_why_cases bash ${CMAKE_SOURCE_DIR}/tests/cli/run_cases.sh ${CPBENCH} ${MPIEXEC_EXECUTABLE}
  ${CMAKE_CURRENT_BINARY_DIR}/cli_why_cases ${CMAKE_SOURCE_DIR}/tests/cli/why_cases.txt)
set_tests_properties(cli_why_cases PROPERTIES TIMEOUT 900)
# the longer scenarios of that list, a script each: a disk that fills up mid-sweep, a rank
# stopped mid-sweep (the watchdog), an --isolate sweep killed while its trial runs
cpb_cmd_test(cli_full_disk bash ${CMAKE_SOURCE_DIR}/tests/cli/full_disk.sh ${CPBENCH}
  ${CMAKE_CURRENT_BINARY_DIR}/cli_full_disk)
cpb_cmd_test(cli_stopped_rank bash ${CMAKE_SOURCE_DIR}/tests/cli/stopped_rank.sh ${CPBENCH} ${MPIEXEC_EXECUTABLE}
  ${CMAKE_CURRENT_BINARY_DIR}/cli_stopped_rank)
cpb_cmd_test(cli_isolate_orphan bash ${CMAKE_SOURCE_DIR}/tests/cli/isolate_orphan.sh ${CPBENCH}
  ${CMAKE_CURRENT_BINARY_DIR}/cli_isolate_orphan)
# --model-config: a Hugging Face config.json as the model; a bad file is refused (exit 2)
# naming the field and what was expected, before anything runs or is written
set(CPB_HF ${CMAKE_CURRENT_SOURCE_DIR}/data/hf)
cpb_cli_refusal(model_config_wrong_type "hidden_size: expected a positive integer, got a string"
  ${CPBENCH} run --backend sim --method ulysses --model-config ${CPB_HF}/bad/hidden-string.json --gpus 8 --seq 1M
  --out ${CPB_CLI_DUMP})
cpb_cli_refusal(model_config_missing_field "num_hidden_layers: missing"
  ${CPBENCH} sweep --backend sim --method ulysses --model-config ${CPB_HF}/bad/missing-layers.json --gpus 8
  --seq-list 1M --out ${CPB_CLI_DUMP})
cpb_cli_refusal(model_config_not_json "not JSON \\(line 14"
  ${CPBENCH} run --backend sim --method ulysses --model-config ${CPB_HF}/bad/truncated.json --gpus 8 --seq 1M)
cpb_cli_refusal(model_config_and_preset "give --model PRESET or --model-config FILE, not both"
  ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --model-config ${CPB_HF}/Qwen3-32B.json
  --gpus 8 --seq 1M)
cpb_cli_test(model_config_run_model_scope ${CPB_EXPECT} 0 - "upipe on Qwen3-32B~[0-9a-f]+, scope model \\(whole model: 64 layers" --
  ${CPBENCH} run --backend sim --method upipe --model-config ${CPB_HF}/Qwen3-32B.json --gpus 8 --seq 512K
  --scope model --seq-stop 1M)
cpb_cli_test(model_config_multimodal ${CPB_EXPECT} 0 - "ulysses on Mistral-Small-3.1-24B~" --
  ${CPBENCH} run --backend sim --method ulysses --model-config ${CPB_HF}/Mistral-Small-3.1-24B.json --gpus 8 --seq 1M)
# a model the estimate cannot describe is refused (exit 2), the field named, before anything
# runs or is written: a mixture of experts, sliding-window attention, latent attention
cpb_cli_refusal(model_config_moe "not modelled, refused: num_local_experts = 8, num_experts_per_tok = 2: a mixture of experts"
  ${CPBENCH} run --backend sim --method ulysses --model-config ${CPB_HF}/refused/Mixtral-8x7B-v0.1.json --gpus 8
  --seq 1M --scope model --out ${CPB_CLI_DUMP})
cpb_cli_refusal(model_config_sliding_window "not modelled, refused: sliding_window = 4096"
  ${CPBENCH} plan --model-config ${CPB_HF}/refused/Mistral-7B-v0.1.json --gpus 8 --seq 1M --out ${CPB_CLI_DUMP})
cpb_cli_refusal(model_config_latent_attention "kv_lora_rank = 512, q_lora_rank = 1536: multi-head latent attention"
  ${CPBENCH} sweep --backend sim --method ulysses --model-config ${CPB_HF}/refused/DeepSeek-V3.json --gpus 8
  --seq-list 1M --out ${CPB_CLI_DUMP})
# a two-matrix GELU MLP with biases (Phi-2) is modelled and stated in the header; the step's
# MFU under both conventions
cpb_cli_test(model_config_two_matrix_mlp ${CPB_EXPECT} 0 - "^model: two-matrix MLP \\(up, down. gelu_new\\), embeddings untied, biases: q,k,v,o,mlp,head, LayerNorm x1" --
  ${CPBENCH} run --backend sim --method ulysses --model-config ${CPB_HF}/Phi-2.json --gpus 8 --seq 256K --scope model)
cpb_cli_test(model_mfu ${CPB_EXPECT} 0 - "MFU of the 989 TFLOP/s peak: [0-9.]+% causal \\([0-9.]+ TFLOP/s\\), [0-9.]+% megatron \\([0-9.]+ TFLOP/s\\), [0-9.]+% nemo" --
  ${CPBENCH} run --backend sim --method ulysses --model llama3-8b --gpus 8 --seq 1M --scope model)
# plan: bad input exits 2 before any search
cpb_cli_refusal(plan_bad_config "num_key_value_heads: expected a divisor of num_attention_heads"
  ${CPBENCH} plan --model-config ${CPB_HF}/bad/kv-heads-not-divisor.json --gpus 8 --seq 1M --out ${CPB_CLI_DUMP})
cpb_cli_refusal(plan_needs_a_length "give --seq S .* or --max-context"
  ${CPBENCH} plan --model llama3-8b --gpus 8 --out ${CPB_CLI_DUMP})
cpb_cli_refusal(plan_needs_gpus "--gpus C is required" ${CPBENCH} plan --model llama3-8b --seq 1M --out ${CPB_CLI_DUMP})
# (issue 25: plan --method M1,M2 restricts the search, as --methods does; both at once are refused)
cpb_cli_refusal(plan_not_a_method "--method and --methods say the same" ${CPBENCH} plan --model llama3-8b --gpus 8
  --seq 1M --method ulysses --methods ring --out ${CPB_CLI_DUMP})
cpb_cli_refusal(plan_on_the_simulator "searches on the simulator" ${CPBENCH} plan --backend cpu --model llama3-8b
  --gpus 8 --seq 1M --out ${CPB_CLI_DUMP})

# the recommendation's options of `cpbench plan` (issue 25 §1: --min-headroom, --methods,
# --stack, --top, the uncalibrated mark, the rows' plan column), table-driven
cpb_cmd_test(cli_plan_cases bash ${CMAKE_SOURCE_DIR}/tests/cli/run_cases.sh ${CPBENCH} ${MPIEXEC_EXECUTABLE}
  ${CMAKE_CURRENT_BINARY_DIR}/cli_plan_cases ${CMAKE_SOURCE_DIR}/tests/cli/plan_cases.txt)
set_tests_properties(cli_plan_cases PROPERTIES TIMEOUT 300)
