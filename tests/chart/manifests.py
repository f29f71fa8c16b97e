"""Checks of the chart's rendered manifests (tests/chart/chart_test.sh renders them):
  manifests.py DEFAULT NAMESPACED OPTIONAL
DEFAULT: the default values; NAMESPACED: watchNamespaces team-a and team-b, an exporter namespace
and pods/proxy; OPTIONAL: the ServiceMonitor and the NetworkPolicy on. Prints each problem and
exits 1 if there is any."""

import sys

import yaml

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    check(len(found) == 1, f"{kind} {name or ''}: {len(found)} rendered, want 1")
    return found[0] if found else {}


def rules_of(docs, kind):
    return [(d["metadata"].get("namespace", ""), d["metadata"]["name"], r)
            for d in docs if d["kind"] == kind for r in d.get("rules", [])]


def check_least_privilege(docs, label):
    for kind in ("ClusterRole", "Role"):
        for ns, name, rule in rules_of(docs, kind):
            where = f"{label}: {kind} {ns}/{name} {rule}"
            for key in ("apiGroups", "resources", "verbs"):
                check("*" not in rule.get(key, []), f"{where}: a wildcard in {key}")
            check("secrets" not in rule.get("resources", []), f"{where}: Secrets")
            check(not {"delete", "deletecollection", "escalate", "bind", "impersonate"}
                  & set(rule.get("verbs", [])), f"{where}: a verb it does not need")
            check("nonResourceURLs" not in rule, f"{where}: non-resource URLs")


def granted(docs, kind):
    """(namespace, apiGroup, resource, verb) of every rule of the kind."""
    return {(ns, g, r, v) for ns, _, rule in rules_of(docs, kind)
            for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


default = load(sys.argv[1])
namespaced = load(sys.argv[2])
optional = load(sys.argv[3])

# The Deployment: two replicas, leader election, probes on their own port, resources, and the
# restrictive securityContext.
deploy = one(default, "Deployment", "eoc-operator")
spec = deploy.get("spec", {})
pod = spec.get("template", {}).get("spec", {})
check(spec.get("replicas") == 2, f"replicas {spec.get('replicas')}, want 2")
psc = pod.get("securityContext", {})
check(psc.get("runAsNonRoot") is True, "pod securityContext.runAsNonRoot is not true")
check(psc.get("runAsUser") == 65532, "pod securityContext.runAsUser is not 65532 (the image's)")
check(psc.get("seccompProfile") == {"type": "RuntimeDefault"}, "seccompProfile is not RuntimeDefault")
check(pod.get("serviceAccountName") == "eoc-operator", "the pod does not run as the chart's ServiceAccount")
containers = pod.get("containers", [])
check(len(containers) == 1, f"{len(containers)} containers, want 1")
c = containers[0] if containers else {}
csc = c.get("securityContext", {})
check(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem is not true")
check(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
check(csc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities.drop is not [ALL]")
check(c.get("image") == "localhost/eoc-operator:0.1.0", f"image {c.get('image')}")
args = c.get("args", [])
for a in ("--leader-elect", "--leader-election-namespace=eoc-system", "--pick-bind-address=:8090",
          "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"):
    check(a in args, f"args lack {a}: {args}")
check(not any(a.startswith("--namespace=") for a in args), "the default watches given namespaces")
check(not any(a.startswith("--exporter-namespaces") for a in args),
      "the default lets pools name exporter namespaces besides their own")
ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
check(ports == {"pick": 8090, "metrics": 8080, "health": 8081}, f"ports {ports}")
for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
    get = c.get(probe, {}).get("httpGet", {})
    check(get == {"path": path, "port": "health"}, f"{probe} {get}, want {path} on the health port")
requests = c.get("resources", {}).get("requests", {})
check({"cpu", "memory"} <= set(requests), f"resources.requests {requests}")
check(c.get("env", [{}])[0].get("name") == "POD_NAMESPACE", "no POD_NAMESPACE")

# Services: picks, headless picks, metrics, each selecting the pods.
selector = spec.get("selector", {}).get("matchLabels", {})
for name in ("eoc-operator-pick", "eoc-operator-pick-headless", "eoc-operator-metrics"):
    svc = one(default, "Service", name)
    check(svc.get("spec", {}).get("selector") == selector, f"Service {name} does not select the pods")
check(one(default, "Service", "eoc-operator-pick-headless").get("spec", {}).get("clusterIP") == "None",
      "the headless Service has a cluster IP")
pdb = one(default, "PodDisruptionBudget")
check(pdb.get("spec", {}).get("minAvailable") == 1, "PDB minAvailable is not 1")
for kind in ("ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Role"):
    check(not [d for d in default if d["kind"] == kind and "leader-election" not in d["metadata"]["name"]],
          f"a {kind} is rendered by default")

# RBAC: by default a ClusterRole for the pools, one for nodes, a Role for the Lease; no wildcard,
# no Secrets, no delete; pods/proxy only when asked for.
check_least_privilege(default, "default")
check_least_privilege(namespaced, "namespaced")
cluster = granted(default, "ClusterRole")
for want in (("", "eoc.dev", "inferencepools", "watch"), ("", "eoc.dev", "inferencepools/status", "update"),
             ("", "", "pods", "patch"), ("", "apps", "deployments/scale", "update"),
             ("", "", "nodes", "watch"), ("", "", "events", "create")):
    check(want in cluster, f"the ClusterRoles lack {want}")
check(not any(r == "pods/proxy" for _, _, r, _ in cluster), "pods/proxy is granted by default")
lease = granted(default, "Role")
check(("eoc-system", "coordination.k8s.io", "leases", "create") in lease, "no Lease create")
lease_rules = [r for _, n, r in rules_of(default, "Role") if "get" in r["verbs"]]
check(lease_rules and lease_rules[0].get("resourceNames") == ["eoc-operator"],
      "the Lease's get and update are not limited to its name")

# Namespaced: the pool rules in a Role per watched namespace, nothing of them cluster-wide.
check([d["metadata"]["name"] for d in namespaced if d["kind"] == "ClusterRole"] == ["eoc-operator-nodes"],
      "namespaced mode renders ClusterRoles other than the nodes'")
roles = granted(namespaced, "Role")
for ns in ("team-a", "team-b"):
    for want in (("eoc.dev", "inferencepools", "list"), ("", "pods", "watch"), ("", "pods/proxy", "get"),
                 ("apps", "statefulsets/scale", "get"), ("", "events", "patch")):
        check((ns,) + want in roles, f"namespaced mode: {ns} lacks {want}")
check(("gpu-operator", "", "pods", "watch") in roles, "no Role for the exporter namespace's pods")
check(not any(ns == "gpu-operator" and r != "pods" for ns, _, r, _ in roles),
      "the exporter namespace's Role grants more than pods")
nargs = one(namespaced, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
check("--namespace=team-a" in nargs and "--namespace=team-b" in nargs, f"namespaced args {nargs}")
# Pools may name exporter pods in the namespaces whose pods the chart grants a read of, no other.
exporter_args = [a for a in nargs if a.startswith("--exporter-namespaces")]
check(exporter_args == ["--exporter-namespaces=gpu-operator"],
      f"namespaced args allow exporter namespaces {exporter_args}, not rbac.exporterNamespaces")

# The optional objects.
monitor = one(optional, "ServiceMonitor")
metrics_svc = one(optional, "Service", "eoc-operator-metrics")
wanted = monitor.get("spec", {}).get("selector", {}).get("matchLabels", {})
labels = metrics_svc.get("metadata", {}).get("labels", {})
check(wanted and all(labels.get(k) == v for k, v in wanted.items()),
      "the ServiceMonitor does not select the metrics Service")
check([e.get("port") for e in monitor.get("spec", {}).get("endpoints", [])] == ["metrics"],
      "the ServiceMonitor does not scrape the metrics port")
check(not [d for d in optional if d["kind"] == "Service" and d["metadata"]["name"] != "eoc-operator-metrics"
           and wanted and all(d["metadata"]["labels"].get(k) == v for k, v in wanted.items())],
      "the ServiceMonitor also selects the pick Services")
policy = one(optional, "NetworkPolicy")
ingress = policy.get("spec", {}).get("ingress", [])
pick_rule = [r for r in ingress if {"port": "pick"} in r.get("ports", [])]
check(len(pick_rule) == 1 and pick_rule[0].get("from") ==
      [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateways"}}}],
      f"the pick port's rule: {pick_rule}")

for p in problems:
    print("manifests:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
