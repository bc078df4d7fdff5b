#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/kubernetes, offline: each kustomization (the base and the arm64 and otlp-collector
# overlays) is rendered by `kubectl kustomize` and every object validated against the Kubernetes
# OpenAPI schemas (tests/e2e/k8s_validate: kubernetes-models' validators generated from them, the
# PodMonitor from the Prometheus Operator's CRD schema); then what the DaemonSet must have is
# checked: hostPID, the BTF / cgroupfs / tracefs mounts, capabilities instead of privileged, the
# scrape annotations, the overlays' node selector and OTEL_* variables. A broken manifest is
# shown to fail the validator. No root, no cluster. Skips (77) only when kubectl or node/npm are
# missing outside CI.
source "$(dirname "$0")/lib.sh"

if ! command -v kubectl >/dev/null || ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  [ -n "${CI:-}" ] && fail "kubectl, node and npm are needed (scripts/install-deps.sh test installs them)"
  echo "SKIP: kubectl or node/npm not installed (scripts/install-deps.sh test)"; exit 77
fi
dir="$SRC_DIR/tests/e2e/k8s_validate"
stamp="$dir/node_modules/.tailcause-lock"
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) $(node --version)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) >"$WORK/npm.log" 2>&1 ||
    { cat "$WORK/npm.log" >&2; fail "npm ci in $dir failed"; }
  echo "$want" >"$stamp"
fi

for k in base overlays/arm64 overlays/otlp-collector; do
  name=${k##*/}
  kubectl kustomize "$SRC_DIR/deploy/kubernetes/$k" >"$WORK/$name.yaml" 2>"$WORK/$name.err" ||
    { cat "$WORK/$name.err" >&2; fail "kubectl kustomize $k"; }
  node "$dir/validate.js" --dump "$WORK/$name.json" <"$WORK/$name.yaml" >"$WORK/$name.out" 2>&1 ||
    { cat "$WORK/$name.out" >&2; fail "$k does not validate"; }
  pass "$k: $(tail -1 "$WORK/$name.out") against the Kubernetes schemas"
done

# The validator is not a rubber stamp: a wrong type and a bad enum value are refused.
sed 's/containerPort: 9436/containerPort: "9436"/' "$WORK/base.yaml" | node "$dir/validate.js" >/dev/null 2>&1 &&
  fail "a string containerPort passed validation"
sed 's/protocol: TCP/protocol: TCPX/' "$WORK/base.yaml" | node "$dir/validate.js" >/dev/null 2>&1 &&
  fail "protocol TCPX passed validation"
pass "broken manifests are refused"

/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
def load(name):
    return {(o["kind"], o["metadata"]["name"]): o for o in json.load(open(f"{work}/{name}.json"))}

base = load("base")
kinds = sorted(k for k, _ in base)
for want in ["ConfigMap", "DaemonSet", "Namespace", "PodMonitor", "Service", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]:
    check(want in kinds, f"base lacks a {want}: {kinds}")
ds = base[("DaemonSet", "tailcause")]
pod = ds["spec"]["template"]["spec"]
c = pod["containers"][0]
check(pod.get("hostPID") is True, "hostPID is not set")
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
for path in ["/sys/kernel/btf", "/sys/fs/cgroup", "/sys/kernel/tracing", "/etc/tailcause"]:
    check(path in mounts, f"no mount at {path}")
for path in ["/sys/kernel/btf", "/sys/fs/cgroup", "/sys/kernel/tracing"]:
    m = mounts.get(path)
    check(m and vols[m["name"]].get("hostPath", {}).get("path") == path, f"{path} is not the host's")
sc = c["securityContext"]
check(sc.get("privileged") is False, "the container is privileged")
caps = set(sc["capabilities"]["add"])
check({"BPF", "PERFMON", "SYS_RESOURCE"} <= caps, f"capabilities {sorted(caps)}")
check(sc["capabilities"].get("drop") == ["ALL"], "capabilities are not dropped first")
ann = ds["spec"]["template"]["metadata"]["annotations"]
check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == "9436", f"annotations {ann}")
cm = next(o for (k, n), o in base.items() if k == "ConfigMap")
check(vols["config"]["configMap"]["name"] == cm["metadata"]["name"], "the DaemonSet mounts another ConfigMap")
check("pod_list:" in cm["data"]["tailcause.yaml"], "the configuration names no pod list")
pm = base[("PodMonitor", "tailcause")]
check(pm["spec"]["podMetricsEndpoints"][0]["port"] == "metrics", "the PodMonitor scrapes another port")
check(pm["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
      "the PodMonitor does not select the DaemonSet's pods")
svc = base[("Service", "tailcause")]
check(svc["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
      "the Service does not select the DaemonSet's pods")

arm = load("arm64")[("DaemonSet", "tailcause")]["spec"]["template"]["spec"]
check(arm.get("nodeSelector", {}).get("kubernetes.io/arch") == "arm64", "arm64 overlay: no arm64 node selector")
check(arm["containers"][0]["image"].endswith("-arm64"), f"arm64 overlay image {arm['containers'][0]['image']}")

otlp = load("otlp-collector")[("DaemonSet", "tailcause")]["spec"]["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value") for e in otlp["env"]}
check(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").startswith("http://"), f"otlp overlay env {env}")
check("OTEL_RESOURCE_ATTRIBUTES" in env and "OTEL_SERVICE_NAME" in env, "otlp overlay lost the base's variables")
names = [e["name"] for e in otlp["env"]]
check(names.index("NODE_NAME") < names.index("OTEL_RESOURCE_ATTRIBUTES"), "NODE_NAME must come before its use")

if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print("ok: the DaemonSet has hostPID, the host mounts, capabilities instead of privileged, scrape annotations; the overlays their changes")
PY
pass "Kubernetes manifests"
