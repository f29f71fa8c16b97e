#!/usr/bin/env bash
# The Helm chart against the local control plane (EOC_KUBE_ENV), with real helm and kubectl:
# `helm template --validate` against the API server; `helm install` creates every object it
# renders (the PodDisruptionBudget at the version the server serves: policy/v1beta1 on 1.20),
# prints NOTES.txt with the pick endpoint, and the controller manager acts on the Deployment;
# `helm upgrade` to watched namespaces swaps the ClusterRole for Roles; `helm uninstall` leaves
# nothing behind but the CRD, as Helm does.
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

# Install.
helm install "$release" "$chart" --namespace "$ns" >"$work/install.txt" || fail "helm install"
grep -q "http://$name-pick.$ns.svc:8090/v1/pools/NAMESPACE/POOL/pick" "$work/install.txt" ||
  fail "NOTES.txt does not give the pick endpoint: $(cat "$work/install.txt")"
grep -q "$name-pick-headless.$ns.svc:8090" "$work/install.txt" ||
  fail "NOTES.txt does not give the headless Service"
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
# The controller manager acts on the Deployment: a ReplicaSet and two pods (Pending: no kubelet).
count_pods() { [ "$(kubectl get pods --namespace "$ns" -l "$selector" -o name | wc -l)" -eq "$1" ]; }
wait_for 60 "the Deployment's two pods were not created" count_pods 2

# Upgrade: watched namespaces, so Roles there and no ClusterRole for the pools.
kubectl create namespace "${watched[0]}" >/dev/null
kubectl create namespace "${watched[1]}" >/dev/null
helm upgrade "$release" "$chart" --namespace "$ns" \
  --set "watchNamespaces={${watched[0]},${watched[1]}}" >/dev/null || fail "helm upgrade"
! kubectl get clusterrole "$name" >/dev/null 2>&1 || fail "the upgrade left the pools' ClusterRole"
kubectl get clusterrole "$name-nodes" >/dev/null || fail "the upgrade removed the nodes' ClusterRole"
for w in "${watched[@]}"; do
  kubectl get role "$name" --namespace "$w" >/dev/null || fail "no Role in $w after the upgrade"
  kubectl get rolebinding "$name" --namespace "$w" >/dev/null || fail "no RoleBinding in $w"
done
args=$(kubectl get deployment "$name" --namespace "$ns" -o jsonpath='{.spec.template.spec.containers[0].args}')
grep -q -- "--namespace=${watched[0]}" <<<"$args" || fail "the upgraded Deployment's args: $args"

# Uninstall: nothing of the release is left, but the CRD (Helm never deletes CRDs).
helm uninstall "$release" --namespace "$ns" --wait >/dev/null || fail "helm uninstall"
left() {
  kubectl get deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,networkpolicies,configmaps \
    --all-namespaces -l "$selector" -o name
  kubectl get clusterroles,clusterrolebindings -l "$selector" -o name
}
nothing_left() { [ -z "$(left)" ]; }
nothing_left || sleep 30 # the garbage collector deletes the ReplicaSet's pods
nothing_left || fail "objects left after helm uninstall: $(left | tr '\n' ' ')"
kubectl get crd inferencepools.eoc.dev >/dev/null || fail "helm uninstall removed the CRD"
echo "chart_install_test: ok ($rendered objects; PodDisruptionBudget $want_pdb on 1.$minor)" >&2
