# The two commands users need: `make run` and `make test`. Both install missing
# Debian packages first, so they work on a fresh Debian 12 machine as root.
BUILD ?= build
JOBS  ?= $(shell nproc)
ARGS  ?=

.PHONY: all deps build run test bench fuzz vmlinux clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/tailcause run $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	bench/run.sh $(BUILD)

# Every libFuzzer harness (tests/fuzz/) for FUZZ_SECONDS each, in a clang build with
# address+undefined sanitizers; findings land in $(FUZZ_BUILD)/fuzz/artifacts.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DTAILCAUSE_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $$(cd tests/fuzz && ls fuzz_*.cpp | sed 's/\.cpp$$//')
	@set -e; for f in tests/fuzz/fuzz_*.cpp; do \
	  n=$$(basename $$f .cpp); \
	  echo "fuzz: $${n#fuzz_} for $(FUZZ_SECONDS) s"; \
	  tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz/$$n $${n#fuzz_} $(FUZZ_SECONDS) . $(FUZZ_BUILD)/fuzz; \
	done

vmlinux:
	scripts/gen-vmlinux.sh

clean:
	rm -rf $(BUILD)
