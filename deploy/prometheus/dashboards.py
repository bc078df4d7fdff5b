# SPDX-License-Identifier: Apache-2.0
"""tailcause's Grafana dashboards, built from the thresholds (generate.py writes them).

Panels read the recording rules where one exists (so a panel and an alert show the same number)
and the raw histograms where exemplars matter (the exemplars carry trace_id). Template variables:
datasource, node (the scrape's instance), tenant, agent, and per dashboard stage or cgroup.
"""

DS = {"type": "prometheus", "uid": "${datasource}"}
NODE = 'instance=~"$node"'
TENANT = 'tenant=~"$tenant"'
AGENT = 'agent=~"$agent"'
RI = "$__rate_interval"


def sel(*parts):
    return "{" + ", ".join(p for p in parts if p) + "}"


def target(expr, legend="", ref="A", exemplar=False, fmt=None, instant=False):
    t = {"datasource": DS, "refId": ref, "expr": expr, "legendFormat": legend,
         "exemplar": exemplar}
    if fmt:
        t["format"] = fmt
    if instant:
        t["instant"] = True
        t["range"] = False
    return t


class Board:
    def __init__(self, uid, title, description, extra_vars=()):
        self.uid, self.title, self.description = uid, title, description
        self.panels = []
        self.y = 0
        self.x = 0
        self.extra_vars = list(extra_vars)

    def _pos(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += h
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        if self.x >= 24:
            self.x = 0
            self.y += h
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y = 0, self.y + 8
        self.panels.append({"type": "row", "title": title, "collapsed": False,
                            "id": len(self.panels) + 1, "panels": [],
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}})
        self.y += 1

    def panel(self, kind, title, description, targets, unit="s", w=12, h=8, stack=False,
              options=None, field_custom=None, transformations=None, repeat=None, interval=None,
              thresholds=None):
        custom = dict(field_custom or {})
        if kind == "timeseries":
            custom.setdefault("drawStyle", "line")
            custom.setdefault("fillOpacity", 60 if stack else 10)
            custom["stacking"] = {"mode": "normal" if stack else "none", "group": "A"}
        defaults = {"unit": unit, "custom": custom}
        if thresholds is not None:
            defaults["thresholds"] = {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "red", "value": thresholds}]}
        p = {"type": kind, "title": title, "description": description,
             "id": len(self.panels) + 1, "datasource": DS,
             "gridPos": self._pos(w, h), "targets": targets,
             "fieldConfig": {"defaults": defaults, "overrides": []},
             "options": options or {}}
        if transformations:
            p["transformations"] = transformations
        if repeat:
            p["repeat"] = repeat
            p["repeatDirection"] = "h"
            p["maxPerRow"] = 2
        if interval:
            p["interval"] = interval
        self.panels.append(p)

    def heatmap(self, title, description, targets, unit="s", w=12, h=8, calculate=False,
                interval=None):
        self.panel("heatmap", title, description, targets, unit=unit, w=w, h=h, interval=interval,
                   options={"calculate": calculate, "yAxis": {"unit": unit},
                            "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges",
                                                    "steps": 64},
                            "exemplars": {"color": "rgba(255,0,255,0.7)"},
                            "tooltip": {"mode": "single", "yHistogram": True},
                            "rowsFrame": {"layout": "auto"}})

    def json(self):
        def query_var(name, label, query, multi=True):
            return {"name": name, "label": label, "type": "query", "datasource": DS,
                    "query": {"query": query, "refId": name},
                    "refresh": 2, "includeAll": multi, "multi": multi, "allValue": ".*",
                    "current": {"text": "All", "value": "$__all"},
                    "sort": 1, "hide": 0}
        variables = [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "hide": 0, "refresh": 1},
            query_var("node", "Node", "label_values(tailcause_build_info, instance)"),
            query_var("tenant", "Tenant",
                      f"label_values(tailcause_requests_total{sel(NODE)}, tenant)"),
            query_var("agent", "Agent",
                      f"label_values(tailcause_requests_total{sel(NODE, TENANT)}, agent)"),
        ] + [query_var(*v) for v in self.extra_vars]
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["tailcause"], "schemaVersion": 39, "version": 1, "editable": True,
            "graphTooltip": 1, "refresh": "30s", "timezone": "",
            "time": {"from": "now-1h", "to": "now"},
            "links": [{"title": "tailcause dashboards", "type": "dashboards",
                       "tags": ["tailcause"], "asDropdown": True, "includeVars": True,
                       "keepTime": True, "icon": "external link", "tooltip": "",
                       "targetBlank": False, "url": ""}],
            "templating": {"list": variables},
            "panels": self.panels,
        }


def overview(t):
    g = t["glitch"]
    b = Board("tailcause-overview", "tailcause overview",
              "Per tenant and stage: latency against its SLO, where the time went (kernel "
              "causes, stacked), glitches and their causes, output anomalies, page-cache and GPU "
              "time. Exemplars on the latency panels open the trace of a slow request.",
              extra_vars=[("stage", "Stage", "label_values(tailcause_stage_duration_seconds_count"
                                             f"{sel(NODE, TENANT, AGENT)}, stage)")])
    s = sel(NODE, TENANT, AGENT)
    ss = sel(NODE, TENANT, AGENT, 'stage=~"$stage"')
    b.row("Latency")
    b.panel("timeseries", "Request P99 by tenant",
            f"P99 of whole requests (SLO {g['request_slo_ms']} ms). Exemplars: trace ids of slow "
            "requests.",
            [target(f"histogram_quantile(0.99, sum by (tenant, le) "
                    f"(rate(tailcause_request_duration_seconds_bucket{s}[{RI}])))",
                    "{{tenant}}", exemplar=True)], thresholds=g["request_slo_ms"] / 1000)
    b.panel("timeseries", "Stage P99 by tenant and stage",
            f"P99 per stage (SLO {g['stage_slo_ms']} ms unless listed in glitch.stage_slos_ms)."
            " Exemplars: trace ids of slow stages.",
            [target(f"histogram_quantile(0.99, sum by (tenant, stage, le) "
                    f"(rate(tailcause_stage_duration_seconds_bucket{ss}[{RI}])))",
                    "{{tenant}}/{{stage}}", exemplar=True)], thresholds=g["stage_slo_ms"] / 1000)
    b.heatmap("Stage latency heatmap",
              "Distribution of stage wall time over time (the daemon's histogram buckets); "
              "exemplar dots are traced slow stages.",
              [target(f"sum by (le) (rate(tailcause_stage_duration_seconds_bucket{ss}[{RI}]))",
                      "{{le}}", exemplar=True, fmt="heatmap")], w=24)
    b.row("Where the time went")
    b.panel("timeseries", "Stage time by kernel cause: $tenant",
            "Seconds per second of stage wall time, stacked by component (on_cpu, runqueue, "
            "cpu_throttled, block_io, network, lock, gpu, sleep, unattributed): the stack is the "
            "stage's wall time. One panel per tenant.",
            [target(f"sum by (stage, component) (rate(tailcause_stage_time_seconds_total{ss}"
                    f"[{RI}]))", "{{stage}} {{component}}")], stack=True, repeat="tenant",
            w=12)
    b.panel("timeseries", "Component share of stage time (recorded)",
            "tenant_agent_stage_component:tailcause_stage_time_seconds:share: the alerts' view.",
            [target("tenant_agent_stage_component:tailcause_stage_time_seconds:share"
                    f"{ss}", "{{tenant}}/{{stage}} {{component}}")], unit="percentunit",
            stack=True)
    b.panel("timeseries", "Helper threads' time beside the stages",
            "Time helper threads spent for a stage, in parallel with it (never part of its wall "
            "time).",
            [target(f"sum by (tenant, stage, component) (rate("
                    f"tailcause_stage_helper_seconds_total{ss}[{RI}]))",
                    "{{tenant}}/{{stage}} {{component}}")], stack=True)
    b.row("Glitches and incidents")
    b.panel("timeseries", "Glitches by cause",
            "Slow stages and requests, cache breakdowns and entropy spikes a second, by the "
            "cause their verdict names. `tailcause glitches --tenant T` lists them.",
            [target(f"sum by (tenant, stage, cause) (rate(tailcause_glitches_total"
                    f"{sel(NODE, TENANT)}[{RI}]))", "{{tenant}}/{{stage}} {{cause}}")],
            unit="ops", stack=True)
    b.panel("timeseries", "Output anomalies: share of requests with an entropy spike",
            f"tenant_agent:tailcause_entropy_spikes:share; alert over "
            f"{t['diagnostics']['output_anomaly']['share']:.0%}.",
            [target(f"tenant_agent:tailcause_entropy_spikes:share{sel(NODE, TENANT)}",
                    "{{tenant}}/{{agent}}")],
            unit="percentunit", thresholds=t["diagnostics"]["output_anomaly"]["share"])
    b.panel("timeseries", "Output entropy P50 / P99",
            "Entropy of the model's output distributions as the agent reports it.",
            [target(f"histogram_quantile(0.5, sum by (tenant, le) (rate("
                    f"tailcause_output_entropy_bucket{s}[{RI}])))", "{{tenant}} P50"),
             target(f"histogram_quantile(0.99, sum by (tenant, le) (rate("
                    f"tailcause_output_entropy_bucket{s}[{RI}])))", "{{tenant}} P99", ref="B")],
            unit="none")
    b.panel("timeseries", "Incidents under way",
            "Sustained slowdowns per tenant (`tailcause glitches --incidents`).",
            [target(f"tailcause_incidents_active{sel(NODE, TENANT)}", "{{tenant}}")],
            unit="none")
    b.row("LLM serving")
    b.panel("timeseries", "Time to first token P99",
            "Per tenant and agent.",
            [target(f"histogram_quantile(0.99, sum by (tenant, agent, le) (rate("
                    f"tailcause_time_to_first_token_seconds_bucket{s}[{RI}])))",
                    "{{tenant}}/{{agent}}")])
    b.panel("timeseries", "Time per output token P99",
            "Per tenant and agent.",
            [target(f"histogram_quantile(0.99, sum by (tenant, agent, le) (rate("
                    f"tailcause_time_per_output_token_seconds_bucket{s}[{RI}])))",
                    "{{tenant}}/{{agent}}")])
    b.row("Memory, page cache and GPU")
    m = t["diagnostics"]["memory_pressure"]
    b.panel("timeseries", "Page-cache misses per stage",
            "tenant_agent_stage:tailcause_stage_page_cache_misses:rate: lookups of file pages "
            "that were not cached, inside each stage.",
            [target(f"tenant_agent_stage:tailcause_stage_page_cache_misses:rate{ss}",
                    "{{tenant}}/{{stage}}")], unit="ops")
    b.panel("timeseries", "Major faults per stage",
            "tenant_agent_stage:tailcause_stage_major_faults:rate.",
            [target(f"tenant_agent_stage:tailcause_stage_major_faults:rate{ss}",
                    "{{tenant}}/{{stage}}")], unit="ops")
    b.panel("timeseries", "Block I/O share of the vector stages",
            f"Block I/O time / wall time of {m['stages']}; alert over {m['block_io_share']:.0%}.",
            [target("tenant_agent_stage_component:tailcause_stage_time_seconds:share"
                    + sel(NODE, TENANT, AGENT, f'stage=~"{m["stages"]}"', 'component="block_io"'),
                    "{{tenant}}/{{stage}}")], unit="percentunit", thresholds=m["block_io_share"])
    b.panel("timeseries", "Memory-cgroup reclaim",
            "cgroup:tailcause_memcg_reclaim_seconds:rate: seconds a second tasks spent in "
            "reclaim forced by their memory cgroup's limit.",
            [target(f"cgroup:tailcause_memcg_reclaim_seconds:rate{sel(NODE)}", "{{cgroup}}")],
            unit="s", thresholds=m["memcg_reclaim_seconds_per_s"])
    some = sel(NODE, 'kind="some"')
    b.panel("timeseries", "Memory stall (PSI)",
            "Share of time at least one task was stalled on memory (pressure stall information, "
            "'some'): per memory cgroup where it has its own memory.pressure (v2), else the "
            "node's (/proc/pressure/memory, the series 'node').",
            [target(f"sum by (cgroup) (rate(tailcause_memcg_pressure_stall_seconds_total{some}"
                    f"[{RI}])) or label_replace(sum(rate("
                    f"tailcause_memory_pressure_stall_seconds_total{some}[{RI}])), "
                    '"cgroup", "node", "", "")', "{{cgroup}}")],
            unit="percentunit")
    gpu = t["diagnostics"]["gpu_sync"]
    b.panel("timeseries", "GPU sync share of stage time",
            f"Time blocked in GPU synchronisation calls / wall time; alert over "
            f"{gpu['gpu_share']:.0%}.",
            [target("tenant_agent_stage_component:tailcause_stage_time_seconds:share"
                    + sel(NODE, TENANT, AGENT, 'stage=~"$stage"', 'component="gpu"'),
                    "{{tenant}}/{{stage}}")], unit="percentunit", thresholds=gpu["gpu_share"])
    return b


def contention(t):
    d = t["diagnostics"]
    cg = t["selectors"]["inference_cgroups"]
    b = Board("tailcause-contention", "tailcause contention",
              "CPU contention and noisy neighbours per cgroup: throttling against the quota, "
              "run-queue latency, the run-queue depth (sampled densely while a cgroup is "
              "throttled) and who preempted whom.",
              extra_vars=[("cgroup", "Cgroup", "label_values(tailcause_runqueue_latency_seconds_"
                                               f"count{sel(NODE)}, cgroup)")])
    c = sel(NODE, 'cgroup=~"$cgroup"')
    b.row("Throttling")
    b.panel("timeseries", "Throttled share of CPU periods",
            f"cgroup:tailcause_cpu_throttled_periods:share; alert over "
            f"{d['cpu_contention']['throttled_share']:.0%}.",
            [target(f"cgroup:tailcause_cpu_throttled_periods:share{c}", "{{cgroup}}")],
            unit="percentunit", thresholds=d["cpu_contention"]["throttled_share"])
    b.panel("timeseries", "Throttled time and quota",
            "Seconds a second the cgroup was throttled, and its quota (CPUs).",
            [target(f"rate(tailcause_cpu_throttled_seconds_total{c}[{RI}])", "{{cgroup}} throttled"),
             target(f"tailcause_cpu_quota_seconds{c} / tailcause_cpu_period_seconds{c}",
                    "{{cgroup}} quota (CPUs)", ref="B")], unit="s")
    b.row("Run queue")
    b.panel("timeseries", "Run-queue latency P99 per cgroup",
            "cgroup:tailcause_runqueue_latency_seconds:p99: how long runnable tasks waited for "
            "a CPU.",
            [target(f"cgroup:tailcause_runqueue_latency_seconds:p99{c}", "{{cgroup}}")])
    b.heatmap("Run-queue latency heatmap", "All selected cgroups' run-queue waits over time.",
              [target(f"sum by (le) (rate(tailcause_runqueue_latency_seconds_bucket{c}[{RI}]))",
                      "{{le}}", fmt="heatmap")])
    b.panel("timeseries", "Run-queue depth P99 (per node)",
            "instance:tailcause_runqueue_length:p99: runnable tasks per CPU, sampled at "
            "probes.sched.runqlen_dense_hz while any cgroup is throttled, else sparse_hz.",
            [target(f"instance:tailcause_runqueue_length:p99{sel(NODE)}", "{{instance}}"),
             target(f"instance:tailcause_runqueue_length_while_throttled:p99{sel(NODE)}",
                    "{{instance}} while throttled", ref="B")],
            unit="none")
    b.heatmap("Run-queue depth per CPU", "Sampled run-queue length per CPU.",
              [target(f"sum by (le) (rate(tailcause_runqueue_length_bucket{sel(NODE)}[{RI}]))",
                      "{{le}}", fmt="heatmap")], unit="none")
    b.row("Noisy neighbours")
    b.panel("table", "Who preempted whom",
            "cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:rate: run-queue seconds a "
            "second a cgroup's tasks waited while another cgroup's tasks held the CPU (each "
            "wait goes to the cgroup that held it longest meanwhile; a cgroup's own tasks are "
            "left out), and that neighbour's share of the cgroup's whole run-queue wait.",
            [target(f"sort_desc(cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:rate{c})",
                    fmt="table", instant=True),
             target(f"cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:share{c}", ref="B",
                    fmt="table", instant=True)],
            unit="s", w=24,
            transformations=[{"id": "merge", "options": {}},
                             {"id": "organize", "options": {
                                 "excludeByName": {"Time": True, "job": True},
                                 "renameByName": {"Value #A": "wait s/s",
                                                  "Value #B": "share of wait"}}}])
    b.panel("timeseries", "Preempted wait by neighbour",
            f"Alert when one neighbour costs over {d['noisy_neighbour']['wait_seconds_per_s']} "
            f"s/s and {d['noisy_neighbour']['share']:.0%} of the wait.",
            [target(f"cgroup_by_cgroup:tailcause_cgroup_preempted_seconds:rate{c}",
                    "{{cgroup}} by {{by_cgroup}}")], stack=True)
    b.panel("timeseries", "Preemptions a second",
            "Times a runnable task of cgroup was switched out for a task of by_cgroup.",
            [target(f"sum by (cgroup, by_cgroup) (rate(tailcause_cgroup_preemptions_total{c}"
                    f"[{RI}]))", "{{cgroup}} by {{by_cgroup}}")], unit="ops")
    b.panel("timeseries", "Off-CPU time by state",
            "Seconds a second the cgroup's tasks spent off CPU in I/O or asleep.",
            [target(f"sum by (cgroup, state) (rate(tailcause_offcpu_seconds_total{c}[{RI}]))",
                    "{{cgroup}} {{state}}")], stack=True)
    return b


def cache(t):
    d = t["diagnostics"]["cache_breakdown"]
    b = Board("tailcause-cache", "tailcause cache",
              "Vector-cache health per tenant: the tenant table of QPS, breakdown rate and "
              "embedding P99, (miss + stale) / lookups over time, and how stale the hits are.")
    n = sel(NODE, TENANT)
    b.panel("table", "Tenants: QPS, cache breakdown rate, embedding P99",
            "One row per tenant: requests a second, (miss + stale) / lookups of its caches, and "
            "the P99 of its embedding stage.",
            [target(f"sum by (tenant) (tenant:tailcause_requests:rate{n})", fmt="table",
                    instant=True),
             target(f"max by (tenant) (tenant_cache:tailcause_cache_lookups:breakdown_ratio{n})",
                    ref="B", fmt="table", instant=True),
             target("max by (tenant) (tenant_agent_stage:tailcause_stage_duration_seconds:p99"
                    + sel(NODE, TENANT, 'stage="embedding"') + ")",
                    ref="C", fmt="table", instant=True)],
            unit="none", w=24,
            transformations=[{"id": "merge", "options": {}},
                             {"id": "organize", "options": {
                                 "excludeByName": {"Time": True},
                                 "renameByName": {"Value #A": "QPS",
                                                  "Value #B": "cache breakdown rate",
                                                  "Value #C": "embedding P99 (s)"}}}])
    b.panel("timeseries", "Breakdown ratio: (miss + stale) / lookups",
            f"tenant_cache:tailcause_cache_lookups:breakdown_ratio; alert at {d['ratio']:.0%}.",
            [target(f"tenant_cache:tailcause_cache_lookups:breakdown_ratio{n}",
                    "{{tenant}} {{cache}}")], unit="percentunit", thresholds=d["ratio"])
    b.panel("timeseries", "Lookups by result",
            "Cache lookups a second: hit, miss, stale.",
            [target(f"sum by (tenant, cache, result) (rate(tailcause_cache_lookups_total{n}"
                    f"[{RI}]))", "{{tenant}} {{cache}} {{result}}")], unit="ops", stack=True)
    b.panel("timeseries", "Stale age of hits P95 / P99",
            "Age of what a hit returned (tenant_cache:tailcause_cache_hit_age_seconds:p95/p99).",
            [target(f"tenant_cache:tailcause_cache_hit_age_seconds:p95{n}",
                    "{{tenant}} {{cache}} P95"),
             target(f"tenant_cache:tailcause_cache_hit_age_seconds:p99{n}",
                    "{{tenant}} {{cache}} P99", ref="B")], thresholds=d["stale_age_p99_seconds"])
    b.panel("timeseries", "Daemon's breakdown verdicts",
            "tailcause_cache_breakdown_ratio as the daemon's own detector sees it (window "
            "cache_breakdown.window_s), and breakdowns it declared.",
            [target(f"tailcause_cache_breakdown_ratio{n}", "{{tenant}} {{cache}} ratio"),
             target(f"sum by (tenant, cache) (increase(tailcause_cache_breakdowns_total{n}"
                    f"[{RI}]))", "{{tenant}} {{cache}} breakdowns", ref="B")],
            unit="none")
    b.panel("timeseries", "Closed loop: competition, quotas, warm-ups",
            "tailcause_cache_competition (the index libtailcause_cache's feedback loop sizes "
            "quotas from: over 0.3 shrinks a tenant's quota toward 20% of its base, under it "
            "lets it grow), the quota its last rebalance set, and entries warmed up.",
            [target(f"tailcause_cache_competition{n}", "{{tenant}} {{cache}} competition"),
             target(f"tailcause_cache_quota_bytes{n} / 1048576",
                    "{{tenant}} {{cache}} quota (MiB)", ref="B"),
             target("sum by (tenant, cache) (increase(tailcause_cache_action_entries_total"
                    + sel(NODE, TENANT, 'action="warmup"') + f"[{RI}]))",
                    "{{tenant}} {{cache}} warmed entries", ref="C")],
            unit="none")
    return b


def network(t):
    d = t["diagnostics"]["network"]
    tp = t["selectors"]["tcp_pairs"]
    b = Board("tailcause-network", "tailcause network",
              "TCP service pairs (local, remote; a client's ephemeral port is '*'): P99 "
              "connection time and RTT, retransmits, the pair x hour heatmap, and how long each "
              "tenant's stages wait on the network.")
    p = sel(NODE, tp)
    b.heatmap("Service pair x hour: P99 connection duration",
              "One row per service pair, one cell per hour: the P99 of connections that closed "
              "in that hour.",
              [target(f"histogram_quantile(0.99, sum by (local, remote, le) (rate("
                      f"tailcause_tcp_connection_duration_seconds_bucket{p}[1h])))",
                      "{{local}} -> {{remote}}")], w=24, h=10, interval="1h")
    b.panel("timeseries", "P99 connection duration by pair",
            "pair:tailcause_tcp_connection_duration_seconds:p99.",
            [target(f"pair:tailcause_tcp_connection_duration_seconds:p99{sel(NODE)}",
                    "{{local}} -> {{remote}}")])
    b.panel("timeseries", "RTT P99 by pair",
            f"pair:tailcause_tcp_rtt_seconds:p99 (kernel smoothed RTT); alert over "
            f"{d['rtt_p99_seconds']} s.",
            [target(f"pair:tailcause_tcp_rtt_seconds:p99{sel(NODE)}", "{{local}} -> {{remote}}")],
            thresholds=d["rtt_p99_seconds"])
    b.panel("timeseries", "Retransmits by pair",
            f"pair:tailcause_tcp_retransmits:rate; alert over {d['retransmits_per_s']}/s.",
            [target(f"pair:tailcause_tcp_retransmits:rate{sel(NODE)}", "{{local}} -> {{remote}}")],
            unit="ops", thresholds=d["retransmits_per_s"])
    b.panel("timeseries", "Bytes by pair",
            "Sent and received bytes a second.",
            [target(f"sum by (local, remote) (rate(tailcause_tcp_sent_bytes_total{p}[{RI}]))",
                    "{{local}} -> {{remote}} sent"),
             target(f"sum by (local, remote) (rate(tailcause_tcp_received_bytes_total{p}[{RI}]))",
                    "{{local}} -> {{remote}} received", ref="B")], unit="Bps")
    b.panel("timeseries", "Network wait per stage",
            f"tenant_agent_stage:tailcause_stage_network_seconds:mean: mean time a stage waits on "
            f"TCP peers; alert over {d['network_seconds_per_stage']} s.",
            [target(f"tenant_agent_stage:tailcause_stage_network_seconds:mean"
                    f"{sel(NODE, TENANT, AGENT)}", "{{tenant}}/{{stage}}")],
            thresholds=d["network_seconds_per_stage"], w=24)
    return b


def layers(t):
    b = Board("tailcause-layers", "tailcause layers",
              "Model layer timing by batch size (needs probes.attrib.layers: true): the layer x "
              "batch-size heatmap of mean layer time, and the same as a matrix.")
    n = sel(NODE)
    mean = (f"sum by (layer, batch_size) (rate(tailcause_layer_duration_seconds_sum{n}[{RI}])) / "
            f"sum by (layer, batch_size) (rate(tailcause_layer_duration_seconds_count{n}[{RI}]))")
    b.heatmap("Layer x batch size: mean layer time over time",
              "One row per (layer, batch size), coloured by its mean time in each interval.",
              [target(mean, "layer {{layer}} batch {{batch_size}}")], w=24, h=10)
    b.panel("table", "Layer x batch size matrix (mean layer time)",
            "Rows: layers; columns: batch sizes; cells: mean time per call over the range.",
            [target(f"sum by (layer, batch_size) (increase(tailcause_layer_duration_seconds_sum"
                    f"{n}[$__range])) / sum by (layer, batch_size) (increase("
                    f"tailcause_layer_duration_seconds_count{n}[$__range]))", fmt="table",
                    instant=True)], w=24,
            transformations=[{"id": "groupingToMatrix", "options": {
                "columnField": "batch_size", "rowField": "layer", "valueField": "Value"}}])
    b.panel("timeseries", "Layer P99 by layer",
            "P99 of each layer's time.",
            [target(f"histogram_quantile(0.99, sum by (layer, le) (rate("
                    f"tailcause_layer_duration_seconds_bucket{n}[{RI}])))", "layer {{layer}}")],
            w=24)
    return b


def build(t):
    return {f"{b.uid}.json": b.json()
            for b in (overview(t), contention(t), cache(t), network(t), layers(t))}
