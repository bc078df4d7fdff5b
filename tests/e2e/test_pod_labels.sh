#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# namespace / pod / container labels on per-cgroup series, from real cgroup directories named as
# the kubelet names them: a Burstable pod under the cgroupfs driver (kubepods/burstable/pod<uid>/
# <container id>) whose pod is in the kubelet pod list given by kubernetes.pod_list (a file
# here), and a BestEffort pod under the systemd driver (kubepods.slice/.../kubepods-besteffort-
# pod<uid>.slice/cri-containerd-<id>.scope) that is not in it (uid and short id). A CPU hog under
# a 10% quota in each container cgroup makes the throttling series appear. Creates the
# directories in the hierarchy the daemon reads (v1 cpu or v2) and removes them after.
source "$(dirname "$0")/lib.sh"
require_root

if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
  ROOT=/sys/fs/cgroup V=2
elif [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
  ROOT=/sys/fs/cgroup/cpu V=1
else
  echo "SKIP: no cgroup hierarchy with the cpu controller"; exit 77
fi

hex64() { printf '%s' "$1" | sha256sum | cut -c1-64; }
tag=$(printf '%08x' $$)
UID1="$tag-7d2b-4c8e-9a1f-3b6d2e4c5a7f"
UID2="$tag-1111-4222-8333-444455556666"
ID1=$(hex64 "container-1-$$")
ID2=$(hex64 "container-2-$$")
C1="/kubepods/burstable/pod$UID1/$ID1"
C2="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID2//-/_}.slice/cri-containerd-$ID2.scope"

CREATED=()
HOGS=()
make_cgroup() {  # creates each missing directory of $1 (remembered for removal)
  local path="" part
  IFS=/ read -ra parts <<<"${1#/}"
  for part in "${parts[@]}"; do
    if [ "$V" = 2 ]; then echo +cpu >"$ROOT$path/cgroup.subtree_control" 2>/dev/null || true; fi
    path="$path/$part"
    if [ ! -d "$ROOT$path" ]; then
      mkdir "$ROOT$path"
      CREATED+=("$ROOT$path")
    fi
  done
}
cleanup_cgroups() {
  local p i
  for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for ((i = ${#CREATED[@]} - 1; i >= 0; i--)); do rmdir "${CREATED[i]}" 2>/dev/null; done
}
on_exit cleanup_cgroups

for c in "$C1" "$C2"; do
  make_cgroup "$c"
  if [ "$V" = 1 ]; then
    echo 100000 >"$ROOT$c/cpu.cfs_period_us"
    echo 10000 >"$ROOT$c/cpu.cfs_quota_us"
  else
    echo "10000 100000" >"$ROOT$c/cpu.max"
  fi
  # A CPU hog moved into the container's cgroup before it starts spinning.
  bash -c 'echo $$ >"$1/cgroup.procs" && exec timeout 120 sh -c "while :; do :; done"' _ "$ROOT$c" &
  HOGS+=($!)
done
sleep 0.2
for i in 0 1; do
  kill -0 "${HOGS[i]}" 2>/dev/null || fail "the hog of cgroup $((i + 1)) did not start"
done
grep -qx "${HOGS[0]}" "$ROOT$C1/cgroup.procs" || fail "hog not in $C1"
pass "cgroups as the kubelet names them (v$V, $ROOT): $C1 and $C2, a 10% hog in each"

cat >"$WORK/pods.json" <<JSON
{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[
 {"metadata":{"name":"rag-0","namespace":"agents","uid":"$UID1"},
  "status":{"phase":"Running","containerStatuses":[{"name":"rag","containerID":"containerd://$ID1"}]}}]}
JSON
cat >"$WORK/daemon.yaml" <<YAML
probes:
  throttle:
    interval_ms: 200
kubernetes:
  pod_list: $WORK/pods.json
journal:
  path: ""
breaker:
  socket: ""
  state_file: ""
YAML
start_daemon --config "$WORK/daemon.yaml"

want1="cgroup=\"$C1\",namespace=\"agents\",pod=\"rag-0\",container=\"rag\""
want2="cgroup=\"$C2\",pod=\"$UID2\",container=\"${ID2:0:12}\""
wait_for() {
  wait_until 10 "a series with $1" scrape_has -F "$1" && return 0
  scrape | grep -F kubepods | head -5 >&2
  fail "no series with $1"
}
wait_for "tailcause_cpu_throttled_periods_total{$want1}"
pass "named from the pod list: {$want1}"
wait_for "tailcause_cpu_throttled_periods_total{$want2}"
pass "not in the pod list: uid and short container id {$want2}"

scrape >"$WORK/metrics.txt"
# Every series of those cgroups carries the labels; no other series got any.
# (by_cgroup, the preempting cgroup of tailcause_cgroup_preemptions_total, gets no pod labels.)
bad=$(grep -E "[{,]cgroup=\"$C1\"" "$WORK/metrics.txt" | grep -vF 'pod="rag-0"' || true)
[ -z "$bad" ] || fail "series of $C1 without the pod labels: $bad"
bad=$(grep -E '(^|[{,])pod="' "$WORK/metrics.txt" | grep -vF "kubepods" || true)
[ -z "$bad" ] || fail "pod labels on series of no kubepods cgroup: $bad"
n=$(grep -cF 'pod="rag-0"' "$WORK/metrics.txt")
promtool check metrics <"$WORK/metrics.txt" >"$WORK/lint.txt" 2>&1 || fail "promtool rejected: $(cat "$WORK/lint.txt")"
pass "$n series of the named pod, none elsewhere; promtool accepts the scrape"

# Process self-metrics, Prometheus client names, on the same endpoint.
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
  process_open_fds process_max_fds process_start_time_seconds; do
  grep -qE "^$m [0-9.e+]+$" "$WORK/metrics.txt" || fail "no $m"
done
rss=$(awk '$1 == "process_resident_memory_bytes" { print $2 }' "$WORK/metrics.txt")
want_rss=$(( $(awk '/^VmRSS:/ { print $2 }' /proc/"$DAEMON_PID"/status) * 1024 ))
/usr/bin/python3 -c "import sys; r, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 0.5 * w < r < 2 * w else 1)" "$rss" "$want_rss" ||
  fail "process_resident_memory_bytes $rss, /proc says $want_rss"
fds=$(awk '$1 == "process_open_fds" { print $2 }' "$WORK/metrics.txt")
[ "$fds" -ge 5 ] || fail "process_open_fds $fds"
pass "process_* self-metrics (resident $rss bytes, $fds fds)"
