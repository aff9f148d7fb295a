# cpbench — the two commands: `make reproduce` (the main job) and `make test`.
# Both install what is missing (scripts/setup.sh) and build first.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# `make install` puts cpbench in $(PREFIX)/bin (and the cuda plugin, where built, in
# $(PREFIX)/lib, where cpbench looks for it); `make install PREFIX=$$HOME/.local` needs no root
PREFIX ?= /usr/local

.PHONY: all build setup install test reproduce bench-plan gpu-bundle bundle-test clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 1

reproduce: build
	bash scripts/reproduce.sh $(BUILD)

# the speed targets of `cpbench plan` and of the simulator at 1,024 GPUs (a benchmark, not a test)
bench-plan: build
	bash scripts/bench-plan.sh $(BUILD)

# the offline bundle for a GPU machine (docs/cuda.md), and its proof in a bare Debian root
gpu-bundle:
	bash scripts/gpu-bundle.sh

bundle-test: gpu-bundle
	bash tests/bundle/bare_root.sh

# never delete a folder something is mounted under (a bind of /dev would take the machine's)
clean:
	@if grep -qE " $(CURDIR)/(build|build-asan|build-bundle|build-gpu)[/ ]" /proc/mounts; then \
	  echo "make clean: something is mounted under the build folders; unmount it first:" >&2; \
	  grep -E " $(CURDIR)/(build|build-asan|build-bundle|build-gpu)[/ ]" /proc/mounts >&2; exit 1; fi
	rm -rf $(BUILD) build-asan build-bundle build-gpu gpu-bundle
