#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real Prometheus server scrapes the daemon (text and OpenMetrics negotiation as Prometheus
# does it) and can query the node-level series.
source "$(dirname "$0")/lib.sh"
require_root

start_daemon
PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tailcause
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
YAML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
# shellcheck disable=SC2034  # stop_pid reads it by name
PROM_PID=$!
on_exit 'stop_pid PROM_PID'

query() {
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

up=""
prometheus_sees_it() {  # the target up (in up), and its run-queue series stored
  up=$(query 'up{job="tailcause"}' 2>/dev/null || true)
  [ "$up" = "1" ] && [ -n "$(query 'count(tailcause_runqueue_latency_seconds_bucket)' 2>/dev/null || true)" ]
}
wait_until 30 "Prometheus to scrape the daemon" prometheus_sees_it || true
[ "$up" = "1" ] || fail "Prometheus does not see the target up: $(tail -5 "$WORK/prometheus.log")"
pass "Prometheus scrapes the daemon (up == 1)"

attached=$(query 'sum(tailcause_probe_attached)')
[ "$attached" = "6" ] || fail "sum(tailcause_probe_attached) = '$attached', want 6"
n=$(query 'count(count by (__name__) ({__name__=~"tailcause_.*"}))')
[ "${n:-0}" -ge 20 ] || fail "only $n tailcause metric names stored"
samples=$(query 'scrape_samples_scraped{job="tailcause"}')
pass "Prometheus stored $n tailcause metric names ($samples samples per scrape)"

# A quantile over the run-queue histogram works as a dashboard would compute it.
sleep 2
q=$(query 'histogram_quantile(0.99, sum by (le) (rate(tailcause_runqueue_latency_seconds_bucket[5s])))')
[ -n "$q" ] || fail "no run-queue latency quantile"
pass "P99 run-queue latency over 5 s: ${q}s"
