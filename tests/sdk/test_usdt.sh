#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Root test of the SDK's USDT probes with bpftrace as an independent tracer:
#  A. C++ (sdk.hpp, probes in the binary): bpftrace -p attaches to a running sdk_user; every
#     probe fires with the values the program used; the semaphores read 0 before, non-zero
#     while attached, 0 after (read from /proc/PID/mem and as the program prints them).
#  B. Python (tailcause package -> libtailcause_sdk.so): the same, bpftrace -p on the library.
#  C. A Python process started after bpftrace attached to the library by path (the daemon's
#     case: agents start later): its probes are enabled from its first request.
# Run by ctest (sdk/CMakeLists.txt) with BUILD_DIR, SRC_DIR, PYTHON3 set.
set -euo pipefail

BUILD_DIR=${BUILD_DIR:?BUILD_DIR is the CMake build directory}
SRC_DIR=${SRC_DIR:?SRC_DIR is the source tree}
PYTHON3=${PYTHON3:-/usr/bin/python3}
HERE=$SRC_DIR/tests/sdk
USER_BIN=$BUILD_DIR/sdk/sdk_user
LIB=$(realpath "$BUILD_DIR/sdk/libtailcause_sdk.so")
PROBES=(request_begin request_end stage_begin stage_end context_attach context_detach
        cache_lookup token layer_begin layer_end output_quality)
SEMAPHORES=("${PROBES[@]/#/tailcause_}")
SEMAPHORES=("${SEMAPHORES[@]/%/_semaphore}")

fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ $EUID -ne 0 ]]; then
	echo "SKIP: bpftrace needs root"
	exit 77
fi
command -v bpftrace >/dev/null || fail "bpftrace is not installed"
[[ -x $USER_BIN && -f $LIB ]] || fail "build sdk_user and tailcause_sdk first ($BUILD_DIR/sdk)"

WORK=$(mktemp -d /tmp/tailcause-sdk-usdt.XXXXXX)
CHILDREN=()
cleanup() {
	local pid
	for pid in "${CHILDREN[@]}"; do
		kill -INT "$pid" 2>/dev/null || true
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# wait_for FILE PATTERN [SECONDS]: until an extended regex matches a line of FILE.
wait_for() {
	local file=$1 pattern=$2 seconds=${3:-30} n
	for ((n = 0; n < seconds * 10; n++)); do
		grep -qE -- "$pattern" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "--- $file" >&2; tail -20 "$file" >&2 || true
	fail "timed out after ${seconds}s waiting for /$pattern/ in $file"
}

# expect_semaphores PID ELF zero|nonzero: every probe's semaphore in that process's memory.
expect_semaphores() {
	local pid=$1 elf=$2 want=$3 name value
	while read -r name value; do
		if [[ $want == zero && $value -ne 0 ]] || [[ $want == nonzero && $value -eq 0 ]]; then
			fail "$name is $value in process $pid ($elf), expected $want"
		fi
	done < <("$PYTHON3" "$HERE/read_semaphore.py" "$pid" "$elf" "${SEMAPHORES[@]}")
	echo "semaphores of $pid in $(basename "$elf"): all $want"
}

# start_tracer NAME TARGET [PID]: bpftrace printing every probe of TARGET; sets TRACER.
start_tracer() {
	local name=$1 target=$2 pid=${3:-}
	sed "s|@TARGET@|$target|g" "$HERE/probes.bt.in" >"$WORK/$name.bt"
	bpftrace ${pid:+-p "$pid"} "$WORK/$name.bt" >"$WORK/$name.out" 2>&1 &
	TRACER=$!
	CHILDREN+=("$TRACER")
	wait_for "$WORK/$name.out" '^READY' 60
}

# bpftrace now and then takes a SIGINT and stays in epoll_wait (seen in the runq peer test; a
# second SIGINT ends it): asked again every 2 s, for a minute at most. Under load it may take
# over 2 s to exit, and be gone by the time it is asked again: that kill's failure is no error.
stop_tracer() {
	local tick=0
	kill -INT "$TRACER" || fail "bpftrace ($1) had exited before it was stopped: $(tail -5 "$WORK/$1.out")"
	while kill -0 "$TRACER" 2>/dev/null && ((tick < 600)); do
		sleep 0.1
		tick=$((tick + 1))
		if ((tick % 20 == 0)); then kill -INT "$TRACER" 2>/dev/null || true; fi
	done
	kill -0 "$TRACER" 2>/dev/null && fail "bpftrace did not exit within 60 s of SIGINT"
	wait "$TRACER" || fail "bpftrace exited with $?: $(tail -5 "$WORK/$1.out")"
}

# lines_after FILE N: the lines of FILE past its first N.
lines_after() { tail -n +"$(($2 + 1))" "$1"; }

echo "== A: C++ probes in sdk_user, bpftrace -p"
"$USER_BIN" --interval-ms 20 >"$WORK/user.out" 2>&1 &
USER_PID=$!
CHILDREN+=("$USER_PID")
wait_for "$WORK/user.out" '^iteration 5 '
expect_semaphores "$USER_PID" "$USER_BIN" zero
grep -q 'iteration 5 sem request_begin=0 token=0 cache_lookup=0' "$WORK/user.out" ||
	fail "sdk_user saw non-zero semaphores before any tracer: $(grep 'iteration 5 ' "$WORK/user.out")"
start_tracer cpp "$USER_BIN" "$USER_PID"
sleep 2
expect_semaphores "$USER_PID" "$USER_BIN" nonzero
lines_traced=$(wc -l <"$WORK/user.out")
wait_for "$WORK/user.out" "^iteration $((lines_traced + 1)) "
lines_after "$WORK/user.out" "$lines_traced" | grep -E 'sem request_begin=[1-9][0-9]* token=[1-9][0-9]* cache_lookup=[1-9]' >/dev/null ||
	fail "sdk_user did not see its semaphores set while traced"
stop_tracer cpp
sleep 0.3
expect_semaphores "$USER_PID" "$USER_BIN" zero
lines_untraced=$(wc -l <"$WORK/user.out")
wait_for "$WORK/user.out" "^iteration $((lines_untraced + 1)) "
lines_after "$WORK/user.out" "$lines_untraced" | grep -vE 'sem request_begin=0 token=0 cache_lookup=0' &&
	fail "sdk_user still sees semaphores set after bpftrace exited"
kill "$USER_PID"
"$PYTHON3" "$HERE/check_events.py" "$WORK/cpp.out" --base-id 0x5d5000000000 --agent agent-cpp \
	--min-requests 20 || fail "C++ probe arguments (bpftrace output above)"

# B calls the probes through the C extension (tailcause._speedups) where the build made one,
# C through ctypes: bpftrace checks the arguments of both.
if [ "${TAILCAUSE_SPEEDUPS_BUILT:-0}" = 1 ]; then B_PROBES=Probes; else B_PROBES=_CtypesProbes; fi
echo "== B: Python package -> libtailcause_sdk.so ($B_PROBES), bpftrace -p"
export PYTHONPATH=$SRC_DIR/sdk/python TAILCAUSE_SDK_LIB=$LIB
"$PYTHON3" "$HERE/py_user.py" --interval-ms 20 >"$WORK/pyuser.out" 2>&1 &
PY_PID=$!
CHILDREN+=("$PY_PID")
wait_for "$WORK/pyuser.out" '^iteration 5 '
grep -qx "library $LIB" "$WORK/pyuser.out" || fail "py_user loaded $(grep ^library "$WORK/pyuser.out")"
grep -qx "probes $B_PROBES" "$WORK/pyuser.out" || fail "py_user calls its probes through $(grep ^probes "$WORK/pyuser.out")"
grep -qx 'iteration 5 enabled=0x0' "$WORK/pyuser.out" || fail "tailcause.enabled() before tracing"
expect_semaphores "$PY_PID" "$LIB" zero
start_tracer py "$LIB" "$PY_PID"
sleep 2
expect_semaphores "$PY_PID" "$LIB" nonzero
lines_traced=$(wc -l <"$WORK/pyuser.out")
wait_for "$WORK/pyuser.out" "^iteration $lines_traced "
lines_after "$WORK/pyuser.out" "$lines_traced" | grep -x 'iteration [0-9]* enabled=0x7ff' >/dev/null ||
	fail "tailcause.enabled() is not true for all 11 probes while traced"
stop_tracer py
sleep 0.3
expect_semaphores "$PY_PID" "$LIB" zero
lines_untraced=$(wc -l <"$WORK/pyuser.out")
wait_for "$WORK/pyuser.out" "^iteration $lines_untraced "
lines_after "$WORK/pyuser.out" "$lines_untraced" | grep -vx 'iteration [0-9]* enabled=0x0' &&
	fail "tailcause.enabled() still true after bpftrace exited"
kill "$PY_PID"
"$PYTHON3" "$HERE/check_events.py" "$WORK/py.out" --base-id 0x9e7000000000 --agent agent-py \
	--min-requests 20 || fail "Python probe arguments"

echo "== C: Python process (ctypes) started after bpftrace attached to the library by path"
start_tracer lib "$LIB"
TAILCAUSE_SDK_PURE_PYTHON=1 "$PYTHON3" "$HERE/py_user.py" --interval-ms 10 --iterations 60 \
	--base-id 0xc0c000000000 >"$WORK/pyuser2.out" 2>&1 &
PY2_PID=$!
CHILDREN+=("$PY2_PID")
wait_for "$WORK/pyuser2.out" '^iteration 3 enabled=0x7ff$'
grep -qx "probes _CtypesProbes" "$WORK/pyuser2.out" || fail "py_user calls its probes through $(grep ^probes "$WORK/pyuser2.out")"
expect_semaphores "$PY2_PID" "$LIB" nonzero
wait "$PY2_PID" || fail "py_user failed: $(tail -5 "$WORK/pyuser2.out")"
stop_tracer lib
"$PYTHON3" "$HERE/check_events.py" "$WORK/lib.out" --base-id 0xc0c000000000 --agent agent-py \
	--min-requests 55 || fail "probes of a process started after the tracer"

echo "== D: only the token probe traced: only its semaphore is set, only it fires"
sed "s|@TARGET@|$LIB|g" >"$WORK/token.bt" <<'EOF_BT'
BEGIN { printf("READY\n"); }
usdt:@TARGET@:tailcause:token { printf("E|token|%d|%lu|%lu\n", tid, arg0, arg1); }
EOF_BT
bpftrace "$WORK/token.bt" >"$WORK/token.out" 2>&1 &
TRACER=$!
CHILDREN+=("$TRACER")
wait_for "$WORK/token.out" '^READY' 60
"$PYTHON3" "$HERE/py_user.py" --interval-ms 5 --iterations 10 --base-id 0xd0d000000000 \
	>"$WORK/pyuser3.out" 2>&1 || fail "py_user failed: $(tail -5 "$WORK/pyuser3.out")"
stop_tracer token
# enum tailcause_sdk_probe: token is bit 7.
[[ $(grep -c 'enabled=0x80$' "$WORK/pyuser3.out") -eq 10 ]] ||
	fail "with only token traced, tailcause.enabled() read: $(grep -m3 enabled "$WORK/pyuser3.out")"
tokens=$(grep -c '^E|token|' "$WORK/token.out" || true)
[[ $tokens -eq 30 ]] || fail "expected 30 token events (10 requests x 3), got $tokens"
echo "token only: 30 token events, enabled mask 0x80"

echo "PASS"
