# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the end-to-end tests: start the real daemon, scrape it, clean up.
# Sourced by tests/e2e/test_*.sh; ctest sets TAILCAUSE, BUILD_DIR and SRC_DIR.
# shellcheck shell=bash
set -euo pipefail
: "${TAILCAUSE:?run through ctest (make test)}"
WORK=$(mktemp -d /tmp/tailcause-e2e.XXXXXX)
DAEMON_PID=""
RECEIVER_PID=""

# The cleanup stack: on_exit CMD adds CMD (a string, eval'd) to what runs when the test exits,
# the last added first; $WORK goes last (KEEP_WORK=1 keeps it, to look into after a failure).
# Scripts add to it instead of replacing the EXIT trap.
CLEANUPS=()
on_exit() { CLEANUPS+=("$1"); }
run_cleanups() {
  local rc=$? i
  set +e
  trap - ERR
  for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${CLEANUPS[i]}"; done
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap run_cleanups EXIT

# stop_pid VAR [SIGNAL]: ends the background process whose pid is in $VAR (when set) with
# SIGNAL (TERM), reaps it and clears VAR.
stop_pid() {
  local pid=${!1:-}
  printf -v "$1" '%s' ""
  [ -n "$pid" ] || return 0
  # wait answers the signal's status (143): under set -e that must not end the test.
  kill -"${2:-TERM}" "$pid" 2>/dev/null && { wait "$pid" 2>/dev/null || true; }
  return 0
}
on_exit 'stop_pid RECEIVER_PID'
on_exit 'stop_pid DAEMON_PID'

# The daemon's last words, and whether it still runs, under a failure.
daemon_tail() {
  [ -f "$WORK/daemon.log" ] || return 0
  if [ -n "${DAEMON_PID:-}" ] && ! kill -0 "$DAEMON_PID" 2>/dev/null; then
    echo "the daemon (pid $DAEMON_PID) is no longer running" >&2
  fi
  tail -20 "$WORK/daemon.log" >&2
}
# A command failing under `set -e` would otherwise end the test without a word.
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND" >&2; daemon_tail' ERR

fail() { echo "FAIL: $*" >&2; daemon_tail; exit 1; }
pass() { echo "ok: $*"; }

# wait_until TIMEOUT_S DESCRIPTION COMMAND...: runs COMMAND every 0.1 s until it succeeds, for
# TIMEOUT_S (whole) seconds and one last try. On time out it says "timed out after TIMEOUT_S s
# waiting for DESCRIPTION" on stderr and returns 1: callers add `|| fail ...` (or `|| true`).
# COMMAND is one simple command (a function for a pipeline or a test) run in this shell, with
# set -e off: it may set variables for the caller, or call fail to give up at once (the process
# it waits on has died). The variables here are prefixed so as not to hide the caller's.
wait_until() {
  local _wu_timeout=$1 _wu_what=$2 _wu_deadline
  shift 2
  [[ $_wu_timeout =~ ^[0-9]+$ ]] || fail "wait_until: timeout '$_wu_timeout' is not whole seconds"
  # EPOCHREALTIME is seconds.microseconds (the separator is the locale's): in microseconds.
  _wu_deadline=$((10#${EPOCHREALTIME//[!0-9]/} + _wu_timeout * 1000000))
  while :; do
    if "$@"; then return 0; fi
    ((10#${EPOCHREALTIME//[!0-9]/} < _wu_deadline)) || break
    sleep 0.1
  done
  echo "timed out after ${_wu_timeout}s waiting for $_wu_what" >&2
  return 1
}

# expect_exit CODE PATTERN CMD...: CMD must exit CODE (a number, or "nonzero" for any failure)
# and print PATTERN (an extended regex) on stderr. Its output stays in $WORK/out.txt and
# $WORK/err.txt; EXIT_RC and EXIT_LINE (the first stderr line matching) are set for the caller.
expect_exit() {
  local want=$1 pattern=$2
  shift 2
  EXIT_RC=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || EXIT_RC=$?
  if [ "$want" = nonzero ]; then
    [ "$EXIT_RC" -ne 0 ] || fail "$*: exit 0, want non-zero: $(cat "$WORK/err.txt")"
  else
    [ "$EXIT_RC" -eq "$want" ] || fail "$*: exit $EXIT_RC, want $want: $(cat "$WORK/err.txt")"
  fi
  grep -qE -- "$pattern" "$WORK/err.txt" || fail "$*: stderr lacks /$pattern/: $(cat "$WORK/err.txt")"
  # shellcheck disable=SC2034  # for the caller, as EXIT_RC
  EXIT_LINE=$(grep -E -- "$pattern" "$WORK/err.txt" | head -1)
}

require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    # In CI (root) this never triggers; elsewhere the test reports a skip as ctest's code 77.
    echo "SKIP: needs root"; exit 77
  fi
}

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_daemon ARGS...: runs `tailcause run ARGS` in the background, logs to $WORK/daemon.log,
# and waits until /metrics answers (sets PORT if --listen is not among ARGS).
# shellcheck disable=SC2120  # ARGS are optional
start_daemon() {
  PORT=${PORT:-$(free_port)}
  "$TAILCAUSE" run --listen "127.0.0.1:$PORT" "$@" >"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  wait_until 10 "the daemon to serve /metrics" daemon_serves || fail "daemon did not serve /metrics within 10 s"
}
# daemon_serves: whether /metrics answers; fails the test once the daemon has exited.
daemon_serves() {
  scrape -o /dev/null && return 0
  kill -0 "$DAEMON_PID" 2>/dev/null || fail "daemon exited early"
  return 1
}

stop_daemon() {
  kill "$DAEMON_PID"
  wait "$DAEMON_PID" || true
  DAEMON_PID=""
}

# Never `scrape | grep -q`: grep -q leaves at the first match, curl then dies of SIGPIPE on a
# large page and pipefail fails the line; `grep PATTERN >/dev/null` reads it all.
# shellcheck disable=SC2120  # curl's options are optional
scrape() { curl -sf "http://127.0.0.1:$PORT/metrics" "$@"; }

# metric_value 'name{labels}' -> prints the value of the exactly matching series, or nothing.
metric_value() { scrape | awk -v s="$1" '$1 == s { print $2 }'; }

# scrape_has [GREP-OPTIONS] PATTERN: whether a scrape line matches (a wait_until command).
scrape_has() { scrape | grep "$@" >/dev/null; }

# tailcause's BPF program ids as "name id" lines (bpftool's JSON, read with Debian's python3).
bpf_prog_ids() {
  bpftool prog show -j | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin):
    print(p.get("name", "?"), p["id"])' | sort
}

# no_programs_left NAME: fails unless every BPF program loaded since $WORK/progs.before (written
# by bpf_prog_ids) is gone within 5 s. The kernel frees a program after its last fd closes in
# deferred work, so one an exited command loaded (a feature probe's) may be listed for a moment.
no_programs_left() {
  wait_until 5 "$1's BPF programs to be freed" no_programs_added ||
    fail "$1: BPF programs left loaded: $(comm -13 "$WORK/progs.before" "$WORK/progs.now")"
}
# no_programs_added: whether every program loaded since progs.before is gone (a wait_until command).
no_programs_added() {
  bpf_prog_ids >"$WORK/progs.now"
  [ -z "$(comm -13 "$WORK/progs.before" "$WORK/progs.now")" ]
}

# The ids of the BPF programs a process holds open (from its fdinfo), one per line, sorted.
# The daemon opens and closes files meanwhile: a vanished fdinfo entry is not an error.
held_prog_ids() { { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk '{ print $2 }' | sort -u; }

# The ids of every BPF program loaded on the host, one per line, sorted.
all_prog_ids() { bpftool prog show -j | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin):
    print(p["id"])' | sort -u; }

# wait_for_series REGEX: waits up to 3 s for a scrape line matching REGEX (the first events
# are counted within moments of attaching); fails the test if none comes.
wait_for_series() { wait_until 3 "a series matching $1" scrape_has -E "$1" || fail "no series matching $1"; }

# npm_install_pinned DIR: DIR/node_modules as DIR/package-lock.json pins it, installed again
# only when the lock or node changed (npm's own cache, ~/.npm, keeps the downloads); install
# scripts never run (onnxruntime-node's would download CUDA parts). Skips (77) when node/npm
# are missing outside CI.
npm_install_pinned() {
  local dir="$1"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    [ -n "${CI:-}" ] && fail "node and npm are needed (scripts/install-deps.sh installs them)"
    echo "SKIP: node/npm not installed (scripts/install-deps.sh)"; exit 77
  fi
  local stamp="$dir/node_modules/.tailcause-lock"
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) $(node --version)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) >"$WORK/npm.log" 2>&1 ||
      { cat "$WORK/npm.log" >&2; fail "npm ci in $dir failed"; }
    echo "$want" >"$stamp"
  fi
}

# start_otlp_receiver ARGS...: the OTLP receiver of tests/e2e/otlp_receiver (decodes with the
# OpenTelemetry project's npm definitions), its packages installed as package-lock.json pins
# them; spans go to $WORK/spans.jsonl, POSTs to $WORK/requests.jsonl. Sets RPORT and
# RECEIVER_PID. Skips (77) when node/npm are missing outside CI.
# shellcheck disable=SC2120  # ARGS are optional
start_otlp_receiver() {
  local dir="$SRC_DIR/tests/e2e/otlp_receiver"
  npm_install_pinned "$dir"
  rm -f "$WORK/rport"
  node "$dir/receiver.js" --port 0 --ready "$WORK/rport" --out "$WORK/spans.jsonl" \
    --requests "$WORK/requests.jsonl" "$@" >"$WORK/receiver.log" 2>&1 &
  RECEIVER_PID=$!
  wait_until 10 "the OTLP receiver to listen" receiver_listens || fail "receiver did not listen within 10 s"
  # shellcheck disable=SC2034  # for the caller
  RPORT=$(cat "$WORK/rport")
}
# receiver_listens: whether the receiver wrote its port; fails the test once it has exited.
receiver_listens() {
  [ -s "$WORK/rport" ] && return 0
  kill -0 "$RECEIVER_PID" 2>/dev/null || { cat "$WORK/receiver.log" >&2; fail "receiver exited"; }
  return 1
}

# The zero-code tests' agent (tests/zerocode/agent.py) on Debian's interpreter, which sees
# python3-torch and python3-faiss: sets PY and AGENT; skips (77) without them, fails in CI.
require_zerocode_agent() {
  PY=/usr/bin/python3
  if ! "$PY" -c 'import torch, faiss' 2>/dev/null; then
    [ -n "${CI:-}" ] && fail "python3-torch and python3-faiss are needed (scripts/install-deps.sh test)"
    echo "SKIP: python3-torch / python3-faiss not installed (scripts/install-deps.sh test)"
    exit 77
  fi
  # shellcheck disable=SC2034  # for the caller
  AGENT="$SRC_DIR/tests/zerocode/agent.py"
}
