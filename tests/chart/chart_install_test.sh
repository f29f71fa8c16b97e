#!/usr/bin/env bash
# The Helm chart against the local control plane (EOC_KUBE_ENV), with real helm and kubectl:
# `helm template --validate` against the API server; `helm install` of the chart as it was before
# authentication (main at a297031, from git), whose Deployment the controller manager acts on;
# `helm upgrade` to this chart with its defaults and a picker namespace, after which every object
# it renders exists (the PodDisruptionBudget at the version the server serves: policy/v1beta1 on
# 1.20), the Deployment passes the auth and TLS flags and mounts the serving Secret, the CA,
# serving and gateway Secrets exist, and NOTES.txt gives the https pick endpoint; a second
# `helm upgrade` to watched namespaces swaps the ClusterRole for Roles and keeps the three Secrets
# byte for byte (lookup); `helm uninstall` leaves nothing behind but the CRD, as Helm does.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
chart=$root/charts/eoc-operator
[ -f "${EOC_KUBE_ENV:-}" ] || {
  echo "chart_install_test: no control plane (EOC_KUBE_ENV)" >&2
  exit 1
}
# shellcheck source=/dev/null
. "$EOC_KUBE_ENV"
export KUBECONFIG=$EOC_KUBECONFIG
helm() { "$root/scripts/helm" "$@"; }
fail() {
  echo "chart_install_test: FAIL: $*" >&2
  exit 1
}
# wait_for SECONDS WHAT COMMAND...: COMMAND succeeds within SECONDS, else the test fails.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 $((seconds * 2))); do
    "$@" && return
    sleep 0.5
  done
  fail "$what, after $seconds s"
}

# The chart before authentication, TLS and the NetworkPolicy came on by default.
previous=a297031
git -C "$root" cat-file -e "$previous^{commit}" 2>/dev/null ||
  fail "the previous chart's commit $previous is not in $root (a git checkout with its history)"

# Names of this run's own, so that a run cut short leaves nothing a later run trips on.
release=eoc-chart-$$
ns=$release
watched=("$release-a" "$release-b")
name=$release-eoc-operator
selector=app.kubernetes.io/instance=$release
work=$(mktemp -d)
cleanup() {
  helm uninstall "$release" --namespace "$ns" >/dev/null 2>&1 || true
  kubectl delete namespace "$ns" "${watched[@]}" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

kubectl create namespace "$ns" >/dev/null
helm template "$release" "$chart" --namespace "$ns" --validate >"$work/validated.yaml" ||
  fail "helm template --validate against the API server"

# Install the previous chart, as a cluster runs it today.
mkdir "$work/previous"
git -C "$root" archive "$previous" charts/eoc-operator | tar -x -C "$work/previous"
helm install "$release" "$work/previous/charts/eoc-operator" --namespace "$ns" >/dev/null ||
  fail "helm install of the previous chart ($previous)"
# The controller manager acts on the Deployment: a ReplicaSet and two pods (Pending: no kubelet).
count_pods() { [ "$(kubectl get pods --namespace "$ns" -l "$selector" -o name | wc -l)" -eq "$1" ]; }
wait_for 60 "the Deployment's two pods were not created" count_pods 2

# Upgrade to this chart: its defaults, and the gateway's certificate may pick in one namespace.
kubectl create namespace "${watched[0]}" >/dev/null
kubectl create namespace "${watched[1]}" >/dev/null
helm upgrade "$release" "$chart" --namespace "$ns" --set "auth.pickers[0].namespace=${watched[0]}" \
  --set 'auth.pickers[0].users={eoc:gateway}' >"$work/install.txt" || fail "helm upgrade from the previous chart"
grep -q "https://$name-pick.$ns.svc:8090/v1/pools/NAMESPACE/POOL/pick" "$work/install.txt" ||
  fail "NOTES.txt does not give the pick endpoint: $(cat "$work/install.txt")"
grep -q "$name-pick-headless.$ns.svc:8090" "$work/install.txt" ||
  fail "NOTES.txt does not give the headless Service"
grep -q "Secret $ns/$name-gateway-client" "$work/install.txt" ||
  fail "NOTES.txt does not name the gateway's certificate"
helm get manifest "$release" --namespace "$ns" >"$work/manifest.yaml"
rendered=$(grep -c '^kind: ' "$work/manifest.yaml")
kubectl get -f "$work/manifest.yaml" -o name >"$work/objects" || fail "objects of the release are missing"
[ "$(wc -l <"$work/objects")" -eq "$rendered" ] ||
  fail "$rendered objects rendered, $(wc -l <"$work/objects") found: $(cat "$work/objects")"
minor=$(kubectl version -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["minor"].rstrip("+"))')
want_pdb=policy/v1
[ "$minor" -ge 21 ] || want_pdb=policy/v1beta1
grep -B0 -A1 "^apiVersion: $want_pdb$" "$work/manifest.yaml" | grep -q '^kind: PodDisruptionBudget' ||
  fail "the PodDisruptionBudget is not $want_pdb on a 1.$minor API server"
kubectl get crd inferencepools.eoc.dev >/dev/null || fail "the CRD is not installed"
deployment() { kubectl get deployment "$name" --namespace "$ns" -o jsonpath="$1"; }
args=$(deployment '{.spec.template.spec.containers[0].args}')
for flag in --pick-auth=kubernetes --metrics-auth=kubernetes --pick-tls-cert-file=/etc/eoc-operator/tls/tls.crt \
  --pick-client-ca-file=/etc/eoc-operator/tls/ca.crt --pick-client-certs=request --metrics-tls-cert-file=; do
  grep -q -- "$flag" <<<"$args" || fail "the upgraded Deployment lacks $flag: $args"
done
[ "$(deployment '{.spec.template.spec.volumes[0].secret.secretName}')" = "$name-serving" ] ||
  fail "the upgraded Deployment does not mount $name-serving"
secrets() {
  for s in ca serving gateway-client; do
    kubectl get secret "$name-$s" --namespace "$ns" -o jsonpath='{.type} {.data}{"\n"}'
  done
}
secrets >"$work/secrets.before" || fail "the certificates' Secrets were not made"
[ "$(grep -c '^kubernetes.io/tls {.*"tls.crt":"[^"]' "$work/secrets.before")" -eq 3 ] ||
  fail "the certificates' Secrets: $(cut -c1-200 "$work/secrets.before")"
kubectl get role "$name-pick" --namespace "${watched[0]}" >/dev/null || fail "no pick Role in ${watched[0]}"
kubectl get clusterrole "$name-auth-delegator" >/dev/null || fail "no auth-delegator ClusterRole"

# Upgrade again: watched namespaces, so Roles there and no ClusterRole for the pools; the
# certificates are the same (the gateway's, mounted in nginx, keeps working).
helm upgrade "$release" "$chart" --namespace "$ns" --reuse-values \
  --set "watchNamespaces={${watched[0]},${watched[1]}}" >/dev/null || fail "helm upgrade"
secrets >"$work/secrets.after"
cmp -s "$work/secrets.before" "$work/secrets.after" || fail "the upgrade made new certificates"
! kubectl get clusterrole "$name" >/dev/null 2>&1 || fail "the upgrade left the pools' ClusterRole"
kubectl get clusterrole "$name-nodes" >/dev/null || fail "the upgrade removed the nodes' ClusterRole"
for w in "${watched[@]}"; do
  kubectl get role "$name" --namespace "$w" >/dev/null || fail "no Role in $w after the upgrade"
  kubectl get rolebinding "$name" --namespace "$w" >/dev/null || fail "no RoleBinding in $w"
done
args=$(deployment '{.spec.template.spec.containers[0].args}')
grep -q -- "--namespace=${watched[0]}" <<<"$args" || fail "the upgraded Deployment's args: $args"

# Uninstall: nothing of the release is left, but the CRD (Helm never deletes CRDs).
helm uninstall "$release" --namespace "$ns" --wait >/dev/null || fail "helm uninstall"
left() {
  kubectl get deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,networkpolicies,configmaps,secrets \
    --all-namespaces -l "$selector" -o name
  kubectl get clusterroles,clusterrolebindings -l "$selector" -o name
}
nothing_left() { [ -z "$(left)" ]; }
nothing_left || sleep 30 # the garbage collector deletes the ReplicaSet's pods
nothing_left || fail "objects left after helm uninstall: $(left | tr '\n' ' ')"
kubectl get crd inferencepools.eoc.dev >/dev/null || fail "helm uninstall removed the CRD"
echo "chart_install_test: ok ($rendered objects; PodDisruptionBudget $want_pdb on 1.$minor)" >&2
