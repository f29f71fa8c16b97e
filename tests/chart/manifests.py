"""Checks of the chart's rendered manifests (tests/chart/chart_test.sh renders them):
  manifests.py DEFAULT NAMESPACED OPTIONAL OPEN CERTMANAGER
DEFAULT: the default values; NAMESPACED: watchNamespaces team-a and team-b, an exporter namespace
and pods/proxy; OPTIONAL: the ServiceMonitor on, gatewayNamespaces [gateways], auth.pickers for
team-a and team-b and a metrics reader; OPEN: auth none, TLS and the NetworkPolicy off (the chart
before authentication); CERTMANAGER: certManager.enabled. Prints each problem and exits 1 if
there is any."""

import base64
import os
import subprocess
import sys
import tempfile

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


def controller_roles(docs):
    """The names of the Roles and ClusterRoles bound to the controller's ServiceAccount."""
    return {d["roleRef"]["name"] for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
            and any(s.get("kind") == "ServiceAccount" and s.get("name") == "eoc-operator"
                    for s in d.get("subjects", []))}


def check_least_privilege(docs, label):
    mine = controller_roles(docs)
    for kind in ("ClusterRole", "Role"):
        for ns, name, rule in rules_of(docs, kind):
            if name not in mine:
                continue
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
            for g in rule.get("apiGroups", []) for r in rule.get("resources", []) for v in rule["verbs"]}


default = load(sys.argv[1])
namespaced = load(sys.argv[2])
optional = load(sys.argv[3])
open_ = load(sys.argv[4])
certmanager = load(sys.argv[5])

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
# Authenticated by default, over TLS, from the mounted serving Secret.
tls_dir = "/etc/eoc-operator/tls"
secure = ["--pick-auth=kubernetes", "--metrics-auth=kubernetes",
          f"--pick-tls-cert-file={tls_dir}/tls.crt", f"--pick-tls-key-file={tls_dir}/tls.key",
          f"--pick-client-ca-file={tls_dir}/ca.crt", "--pick-client-certs=request",
          "--client-cert-user-prefix=eoc:", f"--metrics-tls-cert-file={tls_dir}/tls.crt",
          f"--metrics-tls-key-file={tls_dir}/tls.key"]
check([a for a in args if a in secure] == secure, f"args lack the secure defaults {secure}: {args}")
mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
volumes = {v["name"]: v for v in pod.get("volumes", [])}
check(mounts.get("tls", {}).get("mountPath") == tls_dir and mounts["tls"].get("readOnly") is True
      and "subPath" not in mounts["tls"], f"the TLS Secret is not mounted whole, read-only, at {tls_dir}: {mounts}")
check(volumes.get("tls", {}).get("secret", {}).get("secretName") == "eoc-operator-serving",
      f"the tls volume is not the Secret eoc-operator-serving: {volumes}")
check(psc.get("fsGroup") == 65532, "no fsGroup to read the 0440 key with")
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
for kind in ("ServiceMonitor", "PrometheusRule", "Role", "Certificate", "Issuer"):
    check(not [d for d in default if d["kind"] == kind and "leader-election" not in d["metadata"]["name"]],
          f"a {kind} is rendered by default")
for name in ("eoc-operator-pick", "eoc-operator-metrics"):
    check(one(default, "Service", name).get("spec", {}).get("type", "ClusterIP") == "ClusterIP",
          f"Service {name} is not ClusterIP")


# The certificates the chart makes: a CA, the serving certificate for the Services' names and
# the gateway's client certificate, each signed by the CA, in kubernetes.io/tls Secrets.
def pem_files(secret, directory):
    """Writes each key of the Secret's data to DIRECTORY/NAME-KEY; returns the paths by key."""
    out = {}
    for key, value in secret.get("data", {}).items():
        out[key] = os.path.join(directory, f"{secret['metadata']['name']}-{key}")
        with open(out[key], "wb") as f:
            f.write(base64.b64decode(value))
    return out


def openssl(*argv):
    run = subprocess.run(["openssl", *argv], capture_output=True, text=True, check=False)
    return run.stdout if run.returncode == 0 else "openssl failed: " + run.stderr


ca_secret = one(default, "Secret", "eoc-operator-ca")
serving = one(default, "Secret", "eoc-operator-serving")
client = one(default, "Secret", "eoc-operator-gateway-client")
for secret, keys in ((ca_secret, {"tls.crt", "tls.key"}), (serving, {"tls.crt", "tls.key", "ca.crt"}),
                     (client, {"tls.crt", "tls.key", "ca.crt"})):
    name = secret.get("metadata", {}).get("name")
    check(secret.get("type") == "kubernetes.io/tls", f"Secret {name} is not kubernetes.io/tls")
    check(set(secret.get("data", {})) == keys, f"Secret {name} holds {set(secret.get('data', {}))}, want {keys}")
    if "ca.crt" in keys:
        check(secret.get("data", {}).get("ca.crt") == ca_secret.get("data", {}).get("tls.crt"),
              f"Secret {name}'s ca.crt is not the CA's certificate")
with tempfile.TemporaryDirectory() as tmp:
    ca = pem_files(ca_secret, tmp)
    for secret, want in ((serving, "eoc-operator-pick.eoc-system.svc"), (client, "gateway")):
        files = pem_files(secret, tmp)
        if "tls.crt" not in files or "tls.crt" not in ca:
            continue
        name = secret["metadata"]["name"]
        check(openssl("verify", "-CAfile", ca["tls.crt"], files["tls.crt"]).strip().endswith(": OK"),
              f"{name}'s certificate does not verify against the CA")
        subject = openssl("x509", "-in", files["tls.crt"], "-noout", "-subject", "-nameopt", "RFC2253")
        check(subject.strip() == f"subject=CN={want}", f"{name}'s subject: {subject}")
        key_of = openssl("pkey", "-in", files["tls.key"], "-pubout")
        check(key_of == openssl("x509", "-in", files["tls.crt"], "-noout", "-pubkey"),
              f"{name}'s key is not its certificate's")
    if "tls.crt" in pem_files(serving, tmp):
        names = openssl("x509", "-in", pem_files(serving, tmp)["tls.crt"], "-noout", "-ext", "subjectAltName")
        for svc in ("eoc-operator-pick", "eoc-operator-pick-headless", "eoc-operator-metrics"):
            for dns in (svc, f"{svc}.eoc-system.svc", f"{svc}.eoc-system.svc.cluster.local"):
                check(f"DNS:{dns}," in names.strip() + ",", f"the serving certificate lacks {dns}: {names}")

# The NetworkPolicy, on by default: no gateway namespace named, so no rule admits the pick port;
# /metrics from the monitoring namespace alone; the probes' port from anywhere; no rule without
# ports (which would open every port).
policy = one(default, "NetworkPolicy")
ingress = policy.get("spec", {}).get("ingress", [])
check(policy.get("spec", {}).get("policyTypes") == ["Ingress"], "the NetworkPolicy does not isolate ingress")
check(all(r.get("ports") for r in ingress), f"an ingress rule without ports: {ingress}")
by_port = {p["port"]: r.get("from") for r in ingress for p in r.get("ports", [])}
check("pick" not in by_port, f"the pick port is admitted with no gateway namespace named: {by_port.get('pick')}")
check(by_port.get("metrics") == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
      f"/metrics is admitted from {by_port.get('metrics')}, want the monitoring namespace")
check("health" in by_port and by_port["health"] is None, "the probes' port is not open to the kubelet")

# RBAC: by default a ClusterRole for the pools, one for nodes, a Role for the Lease; no wildcard,
# no Secrets, no delete; pods/proxy only when asked for.
check_least_privilege(default, "default")
check_least_privilege(namespaced, "namespaced")
cluster = granted(default, "ClusterRole")
check({d["metadata"]["name"] for d in default if d["kind"] == "ClusterRole"} ==
      {"eoc-operator", "eoc-operator-nodes", "eoc-operator-auth-delegator", "eoc-operator-metrics-reader"},
      "the default ClusterRoles: " + str([d["metadata"]["name"] for d in default if d["kind"] == "ClusterRole"]))
delegator = [r for _, n, r in rules_of(default, "ClusterRole") if n == "eoc-operator-auth-delegator"]
check(delegator == [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}],
      f"the auth-delegator ClusterRole: {delegator}")
check("eoc-operator-auth-delegator" in controller_roles(default), "the auth-delegator ClusterRole is not bound")
reader = [r for _, n, r in rules_of(default, "ClusterRole") if n == "eoc-operator-metrics-reader"]
check(reader == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}], f"the metrics-reader ClusterRole: {reader}")
check("eoc-operator-metrics-reader" not in controller_roles(default), "the controller may read its own /metrics")
check(not [d for d in default if d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"] == "eoc-operator-metrics-reader"],
      "the metrics reader is bound by default")
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
check(sorted(d["metadata"]["name"] for d in namespaced if d["kind"] == "ClusterRole") ==
      ["eoc-operator-auth-delegator", "eoc-operator-metrics-reader", "eoc-operator-nodes"],
      "namespaced mode renders ClusterRoles other than the nodes', the reviews' and /metrics'")
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
endpoint = (monitor.get("spec", {}).get("endpoints") or [{}])[0]
check(endpoint.get("scheme") == "https", f"the ServiceMonitor scrapes {endpoint.get('scheme')}, want https")
check(endpoint.get("tlsConfig") == {"ca": {"secret": {"name": "eoc-operator-serving", "key": "ca.crt"}},
                                    "serverName": "eoc-operator-metrics.eoc-system.svc"},
      f"the ServiceMonitor's tlsConfig: {endpoint.get('tlsConfig')}")
check(endpoint.get("bearerTokenFile") == "/var/run/secrets/kubernetes.io/serviceaccount/token",
      "the ServiceMonitor presents no ServiceAccount token")
policy = one(optional, "NetworkPolicy")
ingress = policy.get("spec", {}).get("ingress", [])
pick_rule = [r for r in ingress if {"port": "pick"} in r.get("ports", [])]
check(len(pick_rule) == 1 and pick_rule[0].get("from") ==
      [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateways"}}}],
      f"the pick port's rule: {pick_rule}")
# auth.pickers: a Role in each namespace granting the pick (and the session verbs asked for),
# bound to the named identities; the metrics reader bound to Prometheus's ServiceAccount.
picks = {ns: r for ns, n, r in rules_of(optional, "Role") if n == "eoc-operator-pick"}
check(picks == {"team-a": {"apiGroups": ["eoc.dev"], "resources": ["inferencepools/pick"], "verbs": ["create"]},
                "team-b": {"apiGroups": ["eoc.dev"], "resources": ["inferencepools/pick"],
                           "verbs": ["create", "get", "delete"]}}, f"the pickers' Roles: {picks}")
bindings = {d["metadata"]["namespace"]: d for d in optional
            if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "eoc-operator-pick"}
check(bindings.get("team-a", {}).get("subjects") ==
      [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "eoc:gateway"}],
      f"team-a's pick RoleBinding: {bindings.get('team-a')}")
check(bindings.get("team-b", {}).get("subjects") ==
      [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "eoc:gateways"},
       {"kind": "ServiceAccount", "namespace": "gateways", "name": "nginx"}],
      f"team-b's pick RoleBinding: {bindings.get('team-b')}")
check(all(b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "eoc-operator-pick"}
          for b in bindings.values()), "a pick RoleBinding names another role")
readers = one(optional, "ClusterRoleBinding", "eoc-operator-metrics-reader")
check(readers.get("subjects") == [{"kind": "ServiceAccount", "namespace": "monitoring", "name": "prometheus-k8s"}]
      and readers.get("roleRef", {}).get("name") == "eoc-operator-metrics-reader",
      f"the metrics reader's binding: {readers}")

# Open (auth none, TLS and the NetworkPolicy off): the controller's arguments of before, no
# certificate, no review permission, no metrics reader.
open_args = one(open_, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
check(not [a for a in open_args if a.startswith(("--pick-auth", "--metrics-auth", "--pick-tls", "--metrics-tls",
                                                  "--pick-client", "--client-cert"))],
      f"auth none and TLS off still pass {open_args}")
check(not [d for d in open_ if d["kind"] in ("Secret", "NetworkPolicy", "Certificate")],
      "auth none and TLS off render Secrets, Certificates or a NetworkPolicy")
check(not one(open_, "Deployment")["spec"]["template"]["spec"].get("volumes"), "auth none and TLS off mount volumes")
check({d["metadata"]["name"] for d in open_ if d["kind"] == "ClusterRole"} == {"eoc-operator", "eoc-operator-nodes"},
      "auth none renders the review or metrics ClusterRoles")

# cert-manager: Certificates from a CA Issuer the chart makes, no Secret of the chart's own; the
# same files mounted.
check(not [d for d in certmanager if d["kind"] == "Secret"], "certManager.enabled still renders Secrets")
cm_serving = one(certmanager, "Certificate", "eoc-operator-serving").get("spec", {})
check(cm_serving.get("secretName") == "eoc-operator-serving" and
      "eoc-operator-pick.eoc-system.svc" in cm_serving.get("dnsNames", []) and
      cm_serving.get("issuerRef") == {"kind": "Issuer", "name": "eoc-operator-ca"},
      f"the serving Certificate: {cm_serving}")
cm_client = one(certmanager, "Certificate", "eoc-operator-gateway-client").get("spec", {})
check(cm_client.get("commonName") == "gateway" and cm_client.get("subject") == {"organizations": ["gateways"]}
      and "client auth" in cm_client.get("usages", []), f"the gateway's Certificate: {cm_client}")
check(one(certmanager, "Certificate", "eoc-operator-ca").get("spec", {}).get("isCA") is True, "no CA Certificate")
check(one(certmanager, "Issuer", "eoc-operator-ca").get("spec", {}).get("ca") == {"secretName": "eoc-operator-ca"},
      "the CA Issuer does not sign with the CA's Secret")
cm_pod = one(certmanager, "Deployment")["spec"]["template"]["spec"]
check(cm_pod.get("volumes") == pod.get("volumes"), "cert-manager's Secret is not mounted as the chart's own")

for p in problems:
    print("manifests:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
