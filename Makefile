# cpbench — the two commands: `make reproduce` (the main job) and `make test`.
# Both install what is missing (scripts/setup.sh) and build first.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build setup test reproduce clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 1

reproduce: build
	bash scripts/reproduce.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan
