# SPDX-License-Identifier: Apache-2.0
# The two commands users need: `make run` and `make test`. Both install missing
# Debian packages first (`make run` what building and running need, `make test` also what
# the tests need), so they work on a fresh Debian 12 machine as root.
#   make test CMAKE_ARGS=-DTAILCAUSE_WERROR=ON   extra CMake options (also from the environment)
BUILD      ?= build
ASAN_BUILD ?= build-asan
ARM64_BUILD ?= build-arm64
JOBS       ?= $(shell nproc)
ARGS       ?=
CMAKE_ARGS ?=
# ccache when there is one: rebuilds after a pull cost seconds.
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CONFIGURE = cmake -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo $(LAUNCHER) $(CMAKE_ARGS)

.PHONY: all deps deps-test gates build build-daemon build-tests build-asan run reload install deb test test-asan bench fuzz fuzz-merge vmlinux format clean cross-arm64

all: build

deps:
	@scripts/install-deps.sh run

deps-test:
	@scripts/install-deps.sh test

build: deps
	@$(CONFIGURE) -B $(BUILD) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Only what `run`, `install` and `deb` need: the daemon and the SDK library, no test targets.
build-daemon: deps
	@$(CONFIGURE) -B $(BUILD) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target tailcause tailcause_sdk

# The same tree, configured after the test packages are in (so GTest and Benchmark are found).
build-tests: deps-test
	@$(CONFIGURE) -B $(BUILD) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The unit tests (and fuzz harnesses) under AddressSanitizer + UBSan, built by clang in their
# own tree; only the targets the `sanitized` tests need.
build-asan: deps-test
	@CC=clang CXX=clang++ $(CONFIGURE) -B $(ASAN_BUILD) -DTAILCAUSE_SANITIZE=ON -DTAILCAUSE_FUZZ=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS) --target sanitized_tests

run: build-daemon
	$(BUILD)/tailcause run $(ARGS)

# `make install [PREFIX=/usr] [DESTDIR=/staging]`: the daemon, its configuration (/etc for the
# prefix /usr, else PREFIX/etc), recipes and systemd unit, the SDK (README, "Install").
PREFIX ?= /usr/local
install: build-daemon
	cmake --install $(BUILD) --prefix $(PREFIX)

# Debian packages in $(BUILD)/deb/: tailcause, libtailcause-sdk0, libtailcause-sdk-dev.
deb: build-daemon
	@command -v dpkg-shlibdeps >/dev/null || apt-get install -y --no-install-recommends dpkg-dev
	cd $(BUILD) && cpack -G DEB -B deb

# SIGHUP to the running daemon (PID=N, else the oldest `tailcause run`): it re-reads its
# configuration and the SLOs of glitch.slo_file. After editing deploy/prometheus/thresholds.yaml,
# also run deploy/prometheus/generate.py and reload Prometheus, so alerts and daemon agree.
reload:
	@pid=$${PID:-$$(pgrep -o -f '(^|/)tailcause run( |$$)')}; \
	  [ -n "$$pid" ] || { echo "make reload: no running 'tailcause run' (give PID=...)" >&2; exit 1; }; \
	  kill -HUP "$$pid" && echo "make reload: SIGHUP sent to tailcause $$pid"

test-asan: build-asan
	cd $(ASAN_BUILD) && ctest -L sanitized --output-on-failure --timeout 900

# The gates that need no build (scripts/gates/): format, shellcheck, one version, the layering
# of src/, SPDX headers. clang-tidy needs the build's compile_commands.json: ctest runs it.
gates:
	@scripts/install-deps.sh gates
	@scripts/gates/format.sh
	@scripts/gates/shell.sh
	@scripts/gates/version.sh
	@python3 tests/layering/test_layering.py
	@scripts/spdx.sh --check

test: build-tests test-asan
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build-tests
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

# After `make fuzz`: adds to the checked-in corpus (tests/fuzz/corpus/NAME) only those inputs
# found meanwhile that reach code it does not (libFuzzer's -merge=1), to commit with the change.
fuzz-merge:
	@set -e; for f in tests/fuzz/fuzz_*.cpp; do \
	  n=$$(basename $$f .cpp); c=$${n#fuzz_}; \
	  test -d $(FUZZ_BUILD)/fuzz/corpus/$$c || continue; \
	  $(FUZZ_BUILD)/fuzz/$$n -merge=1 -max_len=65536 tests/fuzz/corpus/$$c \
	    $(FUZZ_BUILD)/fuzz/corpus/$$c 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new files' || true; \
	done

vmlinux:
	scripts/gen-vmlinux.sh

# The arm64 cross build, on an x86-64 Debian 12 host: Debian's aarch64-linux-gnu toolchain and
# :arm64 libraries (cmake/toolchain-aarch64.cmake), the daemon, the SDK library, the BPF objects
# (bpf/arm64/vmlinux.h) and the unit tests; checks that the daemon and the SDK are AArch64 ELF,
# then runs the daemon's --version and the unit tests under qemu-user (ctest runs them through
# CMAKE_CROSSCOMPILING_EMULATOR). Release: no debug info, a third less to compile (never debugged
# here, only checked). The unit tests that cannot pass under qemu-user are left out,
# each for its reason:
#  ProcSelf.ParsesThisProcessesFiles, ProcessMetrics.ThisProcess: qemu-user writes the guest's
#    /proc/self/stat itself, with 0 for vsize and rss (they check both are > 0);
#  ExecMappings.ReadsAgainWhenAFileIsMapped: the same 0 vsize never changes, so the mapping it
#    adds is not seen before the 10 s refresh (the daemon does not run under qemu-user);
#  QdiscParse.PollsTheHost: qemu-user translates only rtnetlink's link, address and route
#    messages; its RTM_GETQDISC dump fails with EOPNOTSUPP;
#  BreakerSdkClient.{ReadsStatesFromARealBreakerSocket,IsSafeFromManyThreads,
#    OtherUsersAreRefusedByTheSocketsMode,ABusyDaemonIsEBUSY}: they exec the arm64
#    testprogs/breaker_server, which the kernel runs only where binfmt_misc hands aarch64 ELF
#    to qemu (not in a container without it): these run where that handler is enabled.
cross-arm64:
	@scripts/install-deps.sh cross-arm64
	@$(CONFIGURE) -B $(ARM64_BUILD) --no-warn-unused-cli -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DTAILCAUSE_BUILD_TESTS=ON >/dev/null
	@cmake --build $(ARM64_BUILD) -j$(JOBS) --target tailcause tailcause_sdk bpf_skeletons unit_test_programs
	@for f in $(ARM64_BUILD)/tailcause $(ARM64_BUILD)/sdk/libtailcause_sdk.so; do \
	  aarch64-linux-gnu-readelf -h $$f | grep -q 'Machine:.*AArch64' || \
	    { echo "cross-arm64: $$f is not AArch64: $$(file -bL $$f)" >&2; exit 1; }; \
	  echo "cross-arm64: $$f: $$(file -bL $$f | cut -d, -f1-2)"; \
	done
	@qemu-aarch64-static -L / $(ARM64_BUILD)/tailcause --version
	@skip=ProcSelf.ParsesThisProcessesFiles:ProcessMetrics.ThisProcess:QdiscParse.PollsTheHost; \
	  skip=$$skip:ExecMappings.ReadsAgainWhenAFileIsMapped; \
	  skip=$$skip:ExecMappings.WithAChangeFeedOnlyReportedProcessesAreLookedAt; \
	  b=BreakerSdkClient; \
	  grep -qsx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || { \
	    skip=$$skip:$$b.ReadsStatesFromARealBreakerSocket:$$b.IsSafeFromManyThreads; \
	    skip=$$skip:$$b.OtherUsersAreRefusedByTheSocketsMode:$$b.ABusyDaemonIsEBUSY; }; \
	  echo "cross-arm64: not run under qemu-user: $$(echo $$skip | tr : ' ')"; \
	  cd $(ARM64_BUILD) && GTEST_FILTER=-$$skip ctest -R '^unit' --output-on-failure --timeout 1800

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(ARM64_BUILD)

# Applies .clang-format (bpf/ and sdk/ have their own) to every C and C++ source.
format:
	@git ls-files '*.c' '*.cpp' '*.h' '*.hpp' | grep -v '/vmlinux.h$$' | xargs clang-format -i
