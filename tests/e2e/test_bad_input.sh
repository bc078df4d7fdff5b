#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad input gets a clear message and a non-zero exit, and leaves nothing half-started:
# no BPF program loaded, no port bound.
source "$(dirname "$0")/lib.sh"
require_root

bpf_prog_ids >"$WORK/progs.before"

# expect_error NAME PATTERN CMD...: CMD must exit non-zero and print PATTERN on stderr.
expect_error() {
  local name=$1
  shift
  expect_exit nonzero "$@"
  no_programs_left "$name"
  pass "$name: exit $EXIT_RC, '$EXIT_LINE'"
}

PORT=$(free_port)
printf 'listen: 127.0.0.1:%s\nprobes:\n  sched:\n    enabled: true\n    frobnicate: 3\n' "$PORT" >"$WORK/unknown.yaml"
expect_error "unknown key" "unknown.yaml:5: probes.sched.frobnicate: unknown key" \
  "$TAILCAUSE" run --config "$WORK/unknown.yaml"

printf 'top_k: lots\n' >"$WORK/type.yaml"
expect_error "wrong type" "type.yaml:1: top_k: expected an integer" \
  "$TAILCAUSE" run --config "$WORK/type.yaml"

printf 'probes:\n  tcp:\n    enabled: perhaps\n' >"$WORK/bool.yaml"
expect_error "wrong boolean" "bool.yaml:3: probes.tcp.enabled: expected true or false" \
  "$TAILCAUSE" run --config "$WORK/bool.yaml"

printf 'probes: [sched\n' >"$WORK/syntax.yaml"
expect_error "YAML syntax" "syntax.yaml:[0-9]+: invalid YAML" \
  "$TAILCAUSE" run --config "$WORK/syntax.yaml"

expect_error "missing config file" "does not exist|not.*file" \
  "$TAILCAUSE" run --config "$WORK/none.yaml"

expect_error "bad listen flag" "listen address 'nope'" "$TAILCAUSE" run --listen nope

expect_error "unknown flag" "frobnicate" "$TAILCAUSE" run --frobnicate

# A listen address already in use: refused before any probe is loaded.
/usr/bin/python3 -c "
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', $PORT)); s.listen(1); time.sleep(30)" &
HOLDER=$!
sleep 0.5
expect_error "listen address in use" "cannot listen on 127.0.0.1:$PORT: Address already in use" \
  "$TAILCAUSE" run --listen "127.0.0.1:$PORT"
kill $HOLDER; wait $HOLDER 2>/dev/null || true

# Without the capabilities: named, before anything is loaded.
expect_error "missing privileges" "missing capability CAP_BPF, CAP_PERFMON" \
  setpriv --bounding-set=-bpf,-perfmon,-sys_admin --inh-caps=-bpf,-perfmon,-sys_admin \
  "$TAILCAUSE" run --listen "127.0.0.1:$PORT"

# Missing or broken BTF: a clear message naming the file and what to do.
expect_error "missing BTF" "no usable BTF: /nonexistent/vmlinux does not exist.*--btf" \
  "$TAILCAUSE" run --listen "127.0.0.1:$PORT" --btf /nonexistent/vmlinux
head -c 4096 /dev/urandom >"$WORK/garbage.btf"
expect_error "corrupt BTF" "no usable BTF: .*garbage.btf is not valid BTF" \
  "$TAILCAUSE" run --listen "127.0.0.1:$PORT" --btf "$WORK/garbage.btf"

# The port is free again: nothing kept it.
/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', $PORT))" || fail "port still bound"
pass "nothing half-started"
