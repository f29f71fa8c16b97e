#!/usr/bin/env bash
# The Helm chart without a cluster: `helm lint --strict`; its CRDs the same files as crds/; its
# version the project's; the rendered manifests' security settings, probes, ports and RBAC (read
# by tests/chart/manifests.py): the authenticated defaults (flags, certificates, NetworkPolicy),
# the pickers' Roles, auth none and cert-manager; the namespaced mode; the alerts (promtool); the
# dashboard's structure (tests/chart/dashboard.py); and bad values refused at install with a
# message that names them (values.schema.json, and the templates' own checks).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
chart=$root/charts/eoc-operator
helm() { "$root/scripts/helm" "$@"; }
py=/usr/bin/python3  # Debian's, with python3-yaml
failures=0
fail() {
  echo "chart_test: FAIL: $*" >&2
  failures=$((failures + 1))
}

helm lint --strict "$chart" >&2 || fail "helm lint --strict"

# The CRDs: the chart's crds/ holds exactly the files of crds/ (not its samples), byte for byte.
want=$(cd "$root/crds" && find . -maxdepth 1 -type f -name '*.yaml' | sort)
got=$(cd "$chart/crds" && find . -maxdepth 1 -type f | sort)
[ "$want" = "$got" ] || fail "the chart's crds/ holds [$got], crds/ holds [$want]"
for f in $want; do
  cmp -s "$root/crds/$f" "$chart/crds/$f" || fail "charts/eoc-operator/crds/$f differs from crds/$f (copy it)"
done

version=$(sed -n 's/^project(eoc-operator VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
grep -qx "version: $version" "$chart/Chart.yaml" || fail "Chart.yaml's version is not $version"
grep -qx "appVersion: \"$version\"" "$chart/Chart.yaml" || fail "Chart.yaml's appVersion is not $version"

# The manifests, as installed by default and in the namespaced mode.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
helm template eoc-operator "$chart" --namespace eoc-system >"$work/default.yaml" || fail "helm template (defaults)"
helm template eoc-operator "$chart" --namespace eoc-system --set 'watchNamespaces={team-a,team-b}' \
  --set 'rbac.exporterNamespaces={gpu-operator}' --set rbac.podsProxy=true >"$work/namespaced.yaml" ||
  fail "helm template (namespaced)"
cat >"$work/optional-values.yaml" <<'EOF'
serviceMonitor: {enabled: true}
networkPolicy: {gatewayNamespaces: [gateways]}
auth:
  pickers:
    - {namespace: team-a, users: ["eoc:gateway"]}
    - {namespace: team-b, groups: ["eoc:gateways"], serviceAccounts: [gateways/nginx], verbs: [create, get, delete]}
  metricsReaders: {serviceAccounts: [monitoring/prometheus-k8s]}
EOF
helm template eoc-operator "$chart" --namespace eoc-system --values "$work/optional-values.yaml" \
  >"$work/optional.yaml" || fail "helm template (ServiceMonitor, NetworkPolicy, pickers)"
helm template eoc-operator "$chart" --namespace eoc-system --set auth.pick=none --set auth.metrics=none \
  --set tls.enabled=false --set networkPolicy.enabled=false >"$work/open.yaml" ||
  fail "helm template (auth none, TLS and NetworkPolicy off)"
helm template eoc-operator "$chart" --namespace eoc-system --set certManager.enabled=true \
  >"$work/certmanager.yaml" || fail "helm template (cert-manager)"
$py "$root/tests/chart/manifests.py" "$work/default.yaml" "$work/namespaced.yaml" \
  "$work/optional.yaml" "$work/open.yaml" "$work/certmanager.yaml" || fail "the rendered manifests (above)"

# The alerts: the PrometheusRule's rules pass promtool check rules, and promtool test rules
# (tests/chart/alerts_test.yaml) fires each in its scenario and none while the fleet is healthy.
"$root/scripts/alert-rules" >"$work/rules.yaml" || fail "scripts/alert-rules"
promtool check rules "$work/rules.yaml" >&2 || fail "promtool check rules"
cp "$root/tests/chart/alerts_test.yaml" "$work/"
promtool test rules "$work/alerts_test.yaml" >&2 || fail "promtool test rules (tests/chart/alerts_test.yaml)"
alerts=$(grep -c '^ *- alert: ' "$work/rules.yaml")
tested=$(grep -o 'alertname: Eoc[A-Za-z]*' "$root/tests/chart/alerts_test.yaml" | sort -u | wc -l)
[ "$alerts" -eq "$tested" ] || fail "$alerts alerts, $tested of them tested"
# Without leader election there is no Lease to alert on.
helm template eoc-operator "$chart" --set prometheusRule.enabled=true --set leaderElection.enabled=false \
  --set replicaCount=1 --show-only templates/prometheusrule.yaml | grep -q EocNoLeader &&
  fail "EocNoLeader without leader election"

# The dashboard: its structure, its queries parsed by promtool, and the ConfigMap that ships it.
helm template eoc-operator "$chart" --set grafanaDashboard.enabled=true \
  --show-only templates/grafana-dashboard.yaml >"$work/dashboard-configmap.yaml" ||
  fail "helm template (the dashboard's ConfigMap)"
$py "$root/tests/chart/dashboard.py" "$chart/dashboards/eoc-operator.json" "$root/README.md" \
  "$work/dashboard-configmap.yaml" "$work/dashboard-rules.yaml" || fail "the dashboard (above)"
promtool check rules "$work/dashboard-rules.yaml" >&2 || fail "the dashboard's queries do not parse"

# Bad values: each refused, with a message naming what is wrong.
refused() {
  local want=$1
  shift
  local out
  if out=$(helm template eoc-operator "$chart" "$@" 2>&1); then
    fail "helm template $* was accepted"
  elif ! grep -qF -- "$want" <<<"$out"; then
    fail "helm template $*: the error does not say '$want': $out"
  fi
}
refused "replicaCount" --set replicaCount=0
refused "logLevel" --set controller.logLevel=loud
refused "imagee" --set imagee.tag=x
refused "podDeletionCost" --set controller.podDeletionCost=sometimes
refused "port" --set pick.port=70000
refused "watchNamespaces" --set 'watchNamespaces={Bad_Name}'
refused "leaderElection.enabled=false allows one replica only (replicaCount is 2)" --set leaderElection.enabled=false
refused "digest" --set image.digest=latest
refused "extraArgs" --set 'controller.extraArgs={leader-elect}'
refused "auth.pick must be one of the following" --set auth.pick=anyone
refused "tls.clientCerts must be one of the following" --set tls.clientCerts=maybe
refused "auth.pickers.0" --set 'auth.pickers[0].namespace=team-a'
refused "auth.pickers.0.verbs.0 must be one of the following" --set 'auth.pickers[0].namespace=team-a' \
  --set 'auth.pickers[0].users={eoc:gateway}' --set 'auth.pickers[0].verbs={update}'
refused "with certManager.enabled its Certificate needs certManager.issuerRef of kind ClusterIssuer" \
  --set certManager.enabled=true --set gateway.clientCertSecret.namespace=gateways
# One replica without leader election is fine.
helm template eoc-operator "$chart" --set leaderElection.enabled=false --set replicaCount=1 >/dev/null ||
  fail "one replica without leader election was refused"

[ "$failures" -eq 0 ] || {
  echo "chart_test: $failures failures" >&2
  exit 1
}
echo "chart_test: ok" >&2
