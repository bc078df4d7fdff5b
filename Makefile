# The two commands users need: `make run` and `make test`. Both install missing
# Debian packages first, so they work on a fresh Debian 12 machine as root.
BUILD ?= build
JOBS  ?= $(shell nproc)
ARGS  ?=

.PHONY: all deps build run test bench vmlinux clean

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

vmlinux:
	scripts/gen-vmlinux.sh

clean:
	rm -rf $(BUILD)
