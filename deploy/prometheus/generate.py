#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates tailcause's Prometheus rules and Grafana dashboards from one thresholds file.

  deploy/prometheus/generate.py                       rewrite the checked-in outputs
  deploy/prometheus/generate.py --check               exit 1 when they differ from a fresh run
  deploy/prometheus/generate.py --overrides FILE --rules-out R [--dashboards-out DIR]
                                                      a variant (e.g. the e2e test's short `for:`)

--overrides is a YAML file deep-merged over deploy/prometheus/thresholds.yaml (or --thresholds).
Every metric name used here is one the daemon exports (src/core/record/schema.h); a test extracts each
expression and evaluates it against a real Prometheus scraping the daemon.
"""
import argparse
import copy
import json
import os
import sys

import yaml

import dashboards  # deploy/prometheus/dashboards.py, next to this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPIKE = 'cause="entropy_spike"'
MISS = 'result=~"miss|stale"'
BLOCK_IO = 'component="block_io"'
NETWORK = 'component="network"'


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def load(thresholds, overrides):
    with open(thresholds) as f:
        t = yaml.safe_load(f)
    if overrides:
        with open(overrides) as f:
            t = merge(t, yaml.safe_load(f) or {})
    known = {"response_timeout", "output_anomaly", "cpu_contention", "noisy_neighbour",
             "cache_breakdown", "memory_pressure", "network", "gpu_sync", "series_budget"}
    missing = known - set(t["diagnostics"])
    extra = set(t["diagnostics"]) - known
    if missing or extra:
        sys.exit(f"{thresholds}: diagnostics: missing {sorted(missing)}, unknown {sorted(extra)}")
    return t


def sel(*parts):
    """A label selector from non-empty matchers."""
    parts = [p for p in parts if p]
    return "{" + ", ".join(parts) + "}" if parts else ""


class Rules:
    def __init__(self, t):
        self.t = t
        self.w = t["window"]
        self.job = t["selectors"]["job"]
        self.groups = []

    def d(self, name):
        return self.t["diagnostics"][name]

    def alert(self, name, expr, diag, summary, description, anchor, labels=None):
        d = self.d(diag)
        a = {"alert": name, "expr": expr, "for": d["for"],
             "labels": {"severity": d["severity"], "diagnostic": diag, **(labels or {})},
             "annotations": {"summary": summary, "description": description,
                             "runbook_url": f"{self.t['runbook_url']}#{anchor}"}}
        return a

    def build(self):
        t, w, job = self.t, self.w, self.job
        n = t["min_samples"]
        g = t["glitch"]
        by_stage = "instance, job, tenant, agent, stage"
        by_req = "instance, job, tenant, agent"

        # 1. Response timeout -------------------------------------------------------------
        stage_p99 = "tenant_agent_stage:tailcause_stage_duration_seconds:p99"
        req_p99 = "tenant_agent:tailcause_request_duration_seconds:p99"
        # The SLO per stage: the listed stages' own, every other stage the default.
        listed = sorted(g.get("stage_slos_ms") or {})
        slo_terms = [f'{stage_p99}{{stage="{s}"}} > {g["stage_slos_ms"][s] / 1000:g}'
                     for s in listed]
        others = f'stage!~"{"|".join(listed)}"' if listed else ""
        slo_terms.append(f'{stage_p99}{sel(others)} > {g["stage_slo_ms"] / 1000:g}')
        enough_stages = (f"sum by ({by_stage}) (increase(tailcause_stage_duration_seconds_count"
                         f"{sel(job)}[{w}])) >= {n}")
        enough_reqs = (f"sum by ({by_req}) (increase(tailcause_request_duration_seconds_count"
                       f"{sel(job)}[{w}])) >= {n}")
        self.groups.append({"name": "tailcause-response-timeout", "rules": [
            {"record": stage_p99,
             "expr": f"histogram_quantile(0.99, sum by ({by_stage}, le) "
                     f"(rate(tailcause_stage_duration_seconds_bucket{sel(job)}[{w}])))"},
            {"record": req_p99,
             "expr": f"histogram_quantile(0.99, sum by ({by_req}, le) "
                     f"(rate(tailcause_request_duration_seconds_bucket{sel(job)}[{w}])))"},
            {"record": "tenant_agent_stage_component:tailcause_stage_time_seconds:share",
             "expr": f"sum by ({by_stage}, component) (rate(tailcause_stage_time_seconds_total"
                     f"{sel(job)}[{w}])) / ignoring (component) group_left sum by ({by_stage}) "
                     f"(rate(tailcause_stage_duration_seconds_sum{sel(job)}[{w}]))"},
            self.alert("TailcauseStageLatencyOverSLO",
                       "(" + " or ".join(f"({x})" for x in slo_terms) + f") and on ({by_stage}) "
                       f"({enough_stages})",
                       "response_timeout",
                       "{{ $labels.tenant }}/{{ $labels.stage }} P99 {{ $value | humanizeDuration }} "
                       "is over its SLO",
                       "Stage {{ $labels.stage }} of tenant {{ $labels.tenant }} (agent "
                       "{{ $labels.agent }}) on {{ $labels.instance }} has a P99 of "
                       "{{ $value | humanizeDuration }} over the last " + w + ", above its SLO "
                       "(tailcause thresholds glitch.stage_slo_ms / stage_slos_ms). Next: the "
                       "'tailcause overview' dashboard's component breakdown for this tenant and "
                       "stage shows which kernel cause grew; `tailcause glitches --tenant "
                       "{{ $labels.tenant }} --stage {{ $labels.stage }}` lists the slow stages "
                       "with their verdicts; the stage-latency heatmap's exemplars open the trace "
                       "of a slow one.", "response-timeout"),
            self.alert("TailcauseRequestLatencyOverSLO",
                       f"{req_p99} > {g['request_slo_ms'] / 1000:g} and on ({by_req}) "
                       f"({enough_reqs})",
                       "response_timeout",
                       "{{ $labels.tenant }} request P99 {{ $value | humanizeDuration }} is over "
                       "its SLO",
                       "Requests of tenant {{ $labels.tenant }} (agent {{ $labels.agent }}) on "
                       "{{ $labels.instance }} have a P99 of {{ $value | humanizeDuration }} over "
                       "the last " + w + ", above glitch.request_slo_ms. Next: the 'tailcause "
                       "overview' dashboard shows which stage grew; `tailcause glitches --tenant "
                       "{{ $labels.tenant }} --stage request` lists the slow requests and the "
                       "stage that explains each; their trace ids are the request-latency "
                       "exemplars.", "response-timeout"),
        ]})

        # 2. Model output anomaly ---------------------------------------------------------
        d = self.d("output_anomaly")
        # Per tenant and agent: two agents of one tenant (a chat model, a code model) drift
        # apart, and the one whose outputs went bad is the one to look at.
        share = "tenant_agent:tailcause_entropy_spikes:share"
        self.groups.append({"name": "tailcause-output-anomaly", "rules": [
            {"record": share,
             "expr": f'sum by (instance, job, tenant, agent) (rate(tailcause_glitches_total'
                     f'{sel(job, SPIKE)}[{w}])) / sum by (instance, job, '
                     f"tenant, agent) (rate(tailcause_requests_total{sel(job)}[{w}]))"},
            self.alert("TailcauseOutputAnomaly",
                       f"{share} > {d['share']:g} and on (instance, job, tenant, agent) sum by "
                       f"(instance, job, tenant, agent) (increase(tailcause_requests_total"
                       f"{sel(job)}[{w}])) >= {n}",
                       "output_anomaly",
                       "{{ $labels.tenant }}/{{ $labels.agent }}: {{ $value | "
                       "humanizePercentage }} of requests had an output-entropy spike",
                       "{{ $value | humanizePercentage }} of tenant {{ $labels.tenant }}'s "
                       "requests to agent {{ $labels.agent }} on {{ $labels.instance }} over the "
                       "last " + w + " produced an "
                       "output whose entropy rose over the request's baseline (the daemon's "
                       "entropy.rise / entropy.outputs), above the " + f"{d['share']:.0%}" +
                       " threshold. Next: `tailcause glitches --tenant {{ $labels.tenant }} "
                       "--stage generation` shows each spike with the kernel anomaly joined to "
                       "it (a run-queue or throttled wait, block I/O, a major fault); the "
                       "'tailcause overview' dashboard's output-anomaly panel shows when it "
                       "started; the generation heatmap's exemplars open a spiking request.",
                       "output-anomaly"),
        ]})

        # 3. CPU contention ----------------------------------------------------------------
        d = self.d("cpu_contention")
        cg = t["selectors"]["inference_cgroups"]
        thr = "cgroup:tailcause_cpu_throttled_periods:share"
        self.groups.append({"name": "tailcause-cpu-contention", "rules": [
            {"record": thr,
             "expr": f"sum by (instance, job, cgroup) (rate(tailcause_cpu_throttled_periods_total"
                     f"{sel(job, cg)}[{w}])) / sum by (instance, job, cgroup) "
                     f"(rate(tailcause_cpu_periods_total{sel(job, cg)}[{w}]))"},
            {"record": "cgroup:tailcause_runqueue_latency_seconds:p99",
             "expr": f"histogram_quantile(0.99, sum by (instance, job, cgroup, le) "
                     f"(rate(tailcause_runqueue_latency_seconds_bucket{sel(job, cg)}[{w}])))"},
            {"record": "instance:tailcause_runqueue_length:p99",
             "expr": f"histogram_quantile(0.99, sum by (instance, job, le) "
                     f"(rate(tailcause_runqueue_length_bucket{sel(job)}[{w}])))"},
            # The depth while a cgroup is throttled: the dense samples alone.
            {"record": "instance:tailcause_runqueue_length_while_throttled:p99",
             "expr": "histogram_quantile(0.99, sum by (instance, job, le) "
                     "(rate(tailcause_runqueue_length_bucket" + sel(job, 'throttling="true"')
                     + f"[{w}])))"},
            self.alert("TailcauseCpuThrottled",
                       f"{thr} > {d['throttled_share']:g} and on (instance, job, cgroup) sum by "
                       f"(instance, job, cgroup) (rate(tailcause_cpu_periods_total{sel(job, cg)}"
                       f"[{w}])) >= {d['min_periods_per_s']:g}",
                       "cpu_contention",
                       "cgroup {{ $labels.cgroup }} throttled in {{ $value | humanizePercentage }}"
                       " of its CPU periods",
                       "Cgroup {{ $labels.cgroup }} on {{ $labels.instance }} hit its CPU quota "
                       "in {{ $value | humanizePercentage }} of its periods over the last " + w +
                       f" (threshold {d['throttled_share']:.0%}): its threads wait for the next "
                       "period instead of running. Next: the 'tailcause contention' dashboard "
                       "(throttled share, quota, run-queue P99 and the run-queue depth sampled "
                       "densely while throttled); `tailcause glitches` lists the stages slowed "
                       "with cause cpu_throttled; raise the quota (cpu.max) or move work out.",
                       "cpu-contention"),
        ]})

        # 4. Noisy neighbour ---------------------------------------------------------------
        d = self.d("noisy_neighbour")
        pair = "cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:rate"
        pair_share = "cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:share"
        raw = (f"sum by (instance, job, cgroup, by_cgroup) "
               f"(rate(tailcause_cgroup_preempted_seconds_total{sel(job, cg)}[{w}]))")
        # A cgroup preempting itself is no neighbour: drop the pairs whose by_cgroup is cgroup.
        own = (f'label_replace(sum by (instance, job, cgroup) (rate('
               f'tailcause_cgroup_preempted_seconds_total{sel(job, cg)}[{w}])), "by_cgroup", '
               f'"$1", "cgroup", "(.*)")')
        self.groups.append({"name": "tailcause-noisy-neighbour", "rules": [
            {"record": pair,
             "expr": f"{raw} unless on (instance, job, cgroup, by_cgroup) {own}"},
            {"record": pair_share,
             "expr": f"{pair} / on (instance, job, cgroup) group_left sum by (instance, job, "
                     f"cgroup) (rate(tailcause_runqueue_latency_seconds_sum{sel(job, cg)}"
                     f"[{w}]))"},
            self.alert("TailcauseNoisyNeighbour",
                       f"{pair} > {d['wait_seconds_per_s']:g} and on (instance, job, cgroup, "
                       f"by_cgroup) {pair_share} >= {d['share']:g}",
                       "noisy_neighbour",
                       "cgroup {{ $labels.by_cgroup }} keeps {{ $labels.cgroup }} waiting for the "
                       "CPU",
                       "Tasks of cgroup {{ $labels.cgroup }} on {{ $labels.instance }} waited "
                       "{{ printf \"%.2f\" $value }} s a second in the run queue while tasks of "
                       "{{ $labels.by_cgroup }} held the CPU, at least " + f"{d['share']:.0%}" +
                       " of all their run-queue wait over the last " + w + ". Next: the "
                       "'tailcause contention' dashboard's who-preempted-whom table; "
                       "`tailcause glitches` shows stages with cause runqueue naming this "
                       "neighbour; give the neighbour a lower cpu.weight or separate CPUs "
                       "(cpuset).", "noisy-neighbour"),
        ]})

        # 5. Vector-cache breakdown --------------------------------------------------------
        d = self.d("cache_breakdown")
        ratio = "tenant_cache:tailcause_cache_lookups:breakdown_ratio"
        lookups = f"rate(tailcause_cache_lookups_total{sel(job)}[{w}])"
        self.groups.append({"name": "tailcause-cache-breakdown", "rules": [
            {"record": ratio,
             "expr": f'sum by (instance, job, tenant, cache) (rate(tailcause_cache_lookups_total'
                     f'{sel(job, MISS)}[{w}])) / sum by (instance, job, '
                     f"tenant, cache) ({lookups})"},
            {"record": "tenant_cache:tailcause_cache_hit_age_seconds:p95",
             "expr": f"histogram_quantile(0.95, sum by (instance, job, tenant, cache, le) "
                     f"(rate(tailcause_cache_hit_age_seconds_bucket{sel(job)}[{w}])))"},
            {"record": "tenant_cache:tailcause_cache_hit_age_seconds:p99",
             "expr": f"histogram_quantile(0.99, sum by (instance, job, tenant, cache, le) "
                     f"(rate(tailcause_cache_hit_age_seconds_bucket{sel(job)}[{w}])))"},
            {"record": "tenant:tailcause_requests:rate",
             "expr": f"sum by (instance, job, tenant) (rate(tailcause_requests_total{sel(job)}"
                     f"[{w}]))"},
            self.alert("TailcauseVectorCacheBreakdown",
                       f"{ratio} >= {d['ratio']:g} and on (instance, job, tenant, cache) sum by "
                       f"(instance, job, tenant, cache) (increase(tailcause_cache_lookups_total"
                       f"{sel(job)}[{w}])) >= {d['min_lookups']}",
                       "cache_breakdown",
                       "{{ $labels.tenant }}'s cache {{ $labels.cache }} misses or returns stale "
                       "results for {{ $value | humanizePercentage }} of lookups",
                       "(miss + stale) / lookups of cache {{ $labels.cache }} for tenant "
                       "{{ $labels.tenant }} on {{ $labels.instance }} is "
                       "{{ $value | humanizePercentage }} over the last " + w +
                       f" (threshold {d['ratio']:.0%}): its requests do the full embedding and "
                       "retrieval again. Next: the 'tailcause cache' dashboard (the tenant "
                       "table of QPS, breakdown rate and embedding P99; stale-age P95/P99); "
                       "`tailcause glitches --tenant {{ $labels.tenant }}` lists the "
                       "cache_breakdown glitches; check the cache's capacity, TTL and the "
                       "tenant's key spread.", "cache-breakdown"),
            self.alert("TailcauseVectorCacheStale",
                       f"tenant_cache:tailcause_cache_hit_age_seconds:p99 > "
                       f"{d['stale_age_p99_seconds']:g}",
                       "cache_breakdown",
                       "{{ $labels.tenant }}'s cache {{ $labels.cache }} serves hits "
                       "{{ $value | humanizeDuration }} old (P99)",
                       "The P99 age of what cache {{ $labels.cache }} returned to tenant "
                       "{{ $labels.tenant }} on {{ $labels.instance }} is "
                       "{{ $value | humanizeDuration }} over the last " + w + ". Next: the "
                       "'tailcause cache' dashboard's stale-age panel; shorten the TTL or "
                       "refresh the entries.", "cache-breakdown"),
        ]})

        # 6. Memory and page-cache pressure ------------------------------------------------
        d = self.d("memory_pressure")
        st = f'stage=~"{d["stages"]}"'
        io_share = 'tenant_agent_stage_component:tailcause_stage_time_seconds:share'
        misses = "tenant_agent_stage:tailcause_stage_page_cache_misses:rate"
        self.groups.append({"name": "tailcause-memory-pressure", "rules": [
            {"record": misses,
             "expr": f"sum by ({by_stage}) (rate(tailcause_stage_page_cache_misses_total"
                     f"{sel(job)}[{w}]))"},
            {"record": "tenant_agent_stage:tailcause_stage_major_faults:rate",
             "expr": f"sum by ({by_stage}) (rate(tailcause_stage_major_faults_total{sel(job)}"
                     f"[{w}]))"},
            {"record": "cgroup:tailcause_memcg_reclaim_seconds:rate",
             "expr": f"sum by (instance, job, cgroup) (rate(tailcause_memcg_reclaim_seconds_total"
                     f"{sel(job)}[{w}]))"},
            self.alert("TailcausePageCachePressure",
                       f'{io_share}{sel(st, BLOCK_IO)} > '
                       f"{d['block_io_share']:g} and on ({by_stage}) {misses}{sel(st)} >= "
                       f"{d['page_cache_misses_per_s']:g} and on ({by_stage}) ({enough_stages})",
                       "memory_pressure",
                       "{{ $labels.tenant }}/{{ $labels.stage }} spends "
                       "{{ $value | humanizePercentage }} of its time in block I/O",
                       "Stage {{ $labels.stage }} of tenant {{ $labels.tenant }} on "
                       "{{ $labels.instance }} spent {{ $value | humanizePercentage }} of its wall "
                       "time in block I/O over the last " + w + ", missing the page cache: its "
                       "vectors or model weights are read from disk. Next: the 'tailcause "
                       "overview' dashboard's page-cache panel (misses and major faults per "
                       "stage) and the memory-cgroup reclaim panel; `tailcause glitches --tenant "
                       "{{ $labels.tenant }} --stage {{ $labels.stage }}` names the memory "
                       "cgroup when its limit forces reclaim; raise the memory limit or keep "
                       "the index resident (mlock, hugepages).", "memory-pressure"),
            self.alert("TailcauseMemcgReclaim",
                       f"cgroup:tailcause_memcg_reclaim_seconds:rate > "
                       f"{d['memcg_reclaim_seconds_per_s']:g}",
                       "memory_pressure",
                       "memory cgroup {{ $labels.cgroup }} reclaims {{ printf \"%.2f\" $value }} s a "
                       "second at its limit",
                       "Tasks of memory cgroup {{ $labels.cgroup }} on {{ $labels.instance }} "
                       "spent {{ printf \"%.2f\" $value }} s a second in reclaim forced by the "
                       "cgroup's memory limit over the last " + w + ": page cache they need is "
                       "being evicted. Next: the 'tailcause overview' dashboard's memory panels; "
                       "`tailcause glitches` shows block_io verdicts naming this cgroup; raise "
                       "memory.max.", "memory-pressure"),
        ]})

        # 7. Network ----------------------------------------------------------------------
        d = self.d("network")
        tp = t["selectors"]["tcp_pairs"]
        net = "tenant_agent_stage:tailcause_stage_network_seconds:mean"
        self.groups.append({"name": "tailcause-network", "rules": [
            {"record": net,
             "expr": f'sum by ({by_stage}) (rate(tailcause_stage_time_seconds_total'
                     f'{sel(job, NETWORK)}[{w}])) / sum by ({by_stage}) '
                     f"(rate(tailcause_stage_duration_seconds_count{sel(job)}[{w}]))"},
            {"record": "pair:tailcause_tcp_connection_duration_seconds:p99",
             "expr": f"histogram_quantile(0.99, sum by (instance, job, local, remote, le) (rate("
                     f"tailcause_tcp_connection_duration_seconds_bucket{sel(job, tp)}[{w}])))"},
            {"record": "pair:tailcause_tcp_rtt_seconds:p99",
             "expr": f"histogram_quantile(0.99, sum by (instance, job, local, remote, le) (rate("
                     f"tailcause_tcp_rtt_seconds_bucket{sel(job, tp)}[{w}])))"},
            {"record": "pair:tailcause_tcp_retransmits:rate",
             "expr": f"sum by (instance, job, local, remote) (rate(tailcause_tcp_retransmits_total"
                     f"{sel(job, tp)}[{w}]))"},
            self.alert("TailcauseStageNetworkWait",
                       f"{net} > {d['network_seconds_per_stage']:g} and on ({by_stage}) "
                       f"({enough_stages})",
                       "network",
                       "{{ $labels.tenant }}/{{ $labels.stage }} waits "
                       "{{ $value | humanizeDuration }} per stage on TCP peers",
                       "Stage {{ $labels.stage }} of tenant {{ $labels.tenant }} on "
                       "{{ $labels.instance }} spent {{ $value | humanizeDuration }} on average "
                       "waiting on the network over the last " + w + ". Next: the 'tailcause "
                       "network' dashboard (service pair P99 connection time, RTT, "
                       "retransmits, the pair x hour heatmap); `tailcause glitches --tenant "
                       "{{ $labels.tenant }} --stage {{ $labels.stage }}` names the peer of each "
                       "slow stage.", "network"),
            self.alert("TailcauseTcpRttHigh",
                       f"pair:tailcause_tcp_rtt_seconds:p99 > {d['rtt_p99_seconds']:g}",
                       "network",
                       "TCP {{ $labels.local }} -> {{ $labels.remote }} RTT P99 "
                       "{{ $value | humanizeDuration }}",
                       "The kernel's smoothed RTT of service pair {{ $labels.local }} -> "
                       "{{ $labels.remote }} on {{ $labels.instance }} has a P99 of "
                       "{{ $value | humanizeDuration }} over the last " + w + ". Next: the "
                       "'tailcause network' dashboard's pair x hour heatmap (one pair or all? "
                       "since when?); check the path (tc qdisc, the peer's load).", "network"),
            self.alert("TailcauseTcpRetransmits",
                       f"pair:tailcause_tcp_retransmits:rate > {d['retransmits_per_s']:g}",
                       "network",
                       "TCP {{ $labels.local }} -> {{ $labels.remote }} retransmits "
                       "{{ $value | humanize }}/s",
                       "Service pair {{ $labels.local }} -> {{ $labels.remote }} on "
                       "{{ $labels.instance }} retransmits {{ $value | humanize }} segments a "
                       "second over the last " + w + ": packets are lost on the way. Next: the "
                       "'tailcause network' dashboard; the stages waiting on this peer show in "
                       "`tailcause glitches` with cause network.", "network"),
        ]})

        # 8. GPU synchronisation stalls ----------------------------------------------------
        d = self.d("gpu_sync")
        self.groups.append({"name": "tailcause-gpu-sync", "rules": [
            self.alert("TailcauseGpuSyncStall",
                       f'{io_share}{{component="gpu"}} > {d["gpu_share"]:g} and on ({by_stage}) '
                       f"({enough_stages})",
                       "gpu_sync",
                       "{{ $labels.tenant }}/{{ $labels.stage }} spends "
                       "{{ $value | humanizePercentage }} of its time in GPU sync calls",
                       "Stage {{ $labels.stage }} of tenant {{ $labels.tenant }} on "
                       "{{ $labels.instance }} spent {{ $value | humanizePercentage }} of its "
                       "wall time blocked in GPU synchronisation calls (recipes of kind "
                       "gpu_sync, e.g. cudaStreamSynchronize) over the last " + w + ". Next: the "
                       "'tailcause overview' dashboard's component breakdown (gpu); the layer x "
                       "batch heatmap shows whether one layer or batch size stalls; "
                       "`tailcause glitches --tenant {{ $labels.tenant }}` lists the stalled "
                       "stages with their traces.", "gpu-sync"),
        ]})

        # 9. Series budget -----------------------------------------------------------------
        self.groups.append({"name": "tailcause-series-budget", "rules": [
            self.alert("TailcauseSeriesFolded",
                       f"sum by (instance, job, family) (increase(tailcause_series_folded_total"
                       f"{sel(job)}[{w}])) > 0",
                       "series_budget",
                       "{{ $labels.instance }} folds {{ $labels.family }} series into __other__",
                       "The daemon on {{ $labels.instance }} holds as many {{ $labels.family }} "
                       "series as its limits: section allows, and put {{ $value | humanize }} "
                       "observations of other label combinations into the series whose labels "
                       "are all __other__ over the last " + w + ". Per-tenant views miss them. "
                       "Next: the web UI names the folding above its stage bars; look for an "
                       "agent that puts ids in tenant or stage names, or raise "
                       "limits.{{ $labels.family }}_series.", "series-budget"),
        ]})
        return {"groups": self.groups}


class Literal(str):
    pass


def dump_rules(rules):
    class Dumper(yaml.SafeDumper):
        pass

    def str_rep(dumper, data):
        style = ">" if len(data) > 90 and "\n" not in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(str, str_rep)
    head = ("# SPDX-License-Identifier: Apache-2.0\n"
            "# Generated by deploy/prometheus/generate.py from deploy/prometheus/thresholds.yaml:"
            " do not edit.\n")
    return head + yaml.dump(rules, Dumper=Dumper, sort_keys=False, width=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", default=os.path.join(HERE, "thresholds.yaml"))
    ap.add_argument("--overrides", help="YAML deep-merged over the thresholds")
    ap.add_argument("--rules-out", default=os.path.join(HERE, "rules", "tailcause.rules.yaml"))
    ap.add_argument("--dashboards-out", default=os.path.join(ROOT, "deploy", "grafana",
                                                             "dashboards"))
    ap.add_argument("--check", action="store_true",
                    help="compare with the files instead of writing them")
    a = ap.parse_args()
    t = load(a.thresholds, a.overrides)
    outputs = {a.rules_out: dump_rules(Rules(t).build())}
    if a.dashboards_out:
        for name, board in dashboards.build(t).items():
            outputs[os.path.join(a.dashboards_out, name)] = json.dumps(board, indent=2) + "\n"
    stale = []
    for path, text in outputs.items():
        if a.check:
            try:
                with open(path) as f:
                    if f.read() == text:
                        continue
            except FileNotFoundError:
                pass
            stale.append(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("out of date (run deploy/prometheus/generate.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
