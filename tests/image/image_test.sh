#!/usr/bin/env bash
# The image as users get it: built from the Dockerfile by scripts/image (cached: an unchanged tree
# is not built again), its configuration and contents checked, then its own binary run with
# `buildah run --isolation chroot` against the local control plane (EOC_KUBE_ENV) until /readyz
# answers 200. Needs root, buildah and debootstrap (scripts/bootstrap).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() {
  echo "image_test: FAIL: $*" >&2
  exit 1
}
[ -f "${EOC_KUBE_ENV:-}" ] || fail "no control plane (EOC_KUBE_ENV)"
# shellcheck source=/dev/null
. "$EOC_KUBE_ENV"
b() { "$root/scripts/image" buildah "$@"; }

work=$(mktemp -d)
ctr=
controller=
# The controller runs under buildah in a session of its own, so that all of it can be stopped.
cleanup() {
  [ -z "$controller" ] || kill -TERM -- "-$controller" 2>/dev/null || true
  [ -z "$controller" ] || wait "$controller" 2>/dev/null || true
  [ -z "$ctr" ] || b rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

image=$("$root/scripts/image" build)
echo "image_test: $image" >&2

# 1. Its configuration: the user, the entrypoint, the ports and the OCI labels.
b inspect --type image "$image" >"$work/inspect.json"
version=$("$root/scripts/image" version)
revision=$(git -C "$root" rev-parse HEAD)
python3 - "$work/inspect.json" "$version" "$revision" <<'PY' || fail "the image's configuration"
import json, sys
config = json.load(open(sys.argv[1]))["OCIv1"]["config"]
want_version, want_revision = sys.argv[2:4]
problems = []
def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: {got!r}, want {want!r}")
expect("User", config.get("User"), "65532:65532")
expect("Entrypoint", config.get("Entrypoint"), ["/usr/local/bin/eoc-controller"])
expect("Cmd", config.get("Cmd"), None)
expect("ExposedPorts", sorted(config.get("ExposedPorts", {})), ["8080/tcp", "8081/tcp", "8090/tcp"])
labels = config.get("Labels", {})
expect("version label", labels.get("org.opencontainers.image.version"), want_version)
revision = labels.get("org.opencontainers.image.revision", "")
if revision.removesuffix("-dirty") != want_revision:
    problems.append(f"revision label: {revision!r}, want {want_revision!r} (or with -dirty)")
for label in ("source", "title"):
    if labels.get(f"org.opencontainers.image.{label}", "unknown") == "unknown":
        problems.append(f"label org.opencontainers.image.{label} missing: {labels}")
for p in problems:
    print("image_test:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# 2. Its contents: the binary and its libraries, and no shell, no package manager, no other
# program; nothing writable but by root; every library the binary needs resolves inside the image.
# A soft open-files limit of 1024 under a hard one as high as this shell's, as a pod's runtime gives
# (containerd and CRI-O: 1048576; containerd 2.0: soft 1024, hard 524288), not buildah's default
# of 1024 for both: the controller raises its soft limit to the hard one and refuses to start when
# its connection caps cannot fit (README, "Open files").
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" != unlimited ] || hard_nofile=1048576
ctr=$(b from --pull=never --ulimit "nofile=1024:$hard_nofile" "$image")
mnt=$(b mount "$ctr")
[ -x "$mnt/usr/local/bin/eoc-controller" ] || fail "no /usr/local/bin/eoc-controller"
find "$mnt" -mindepth 1 \( -type f -o -type l \) -printf '/%P\n' | sort >"$work/files"
echo "image_test: $(wc -l <"$work/files") files: $(tr '\n' ' ' <"$work/files")" >&2
forbidden=$(grep -E '/(sh|bash|dash|ash|zsh|busybox|toybox|dpkg|dpkg-deb|apt|apt-get|aptitude|rpm|yum|dnf|microdnf|apk|perl|python3?)$' "$work/files" || true)
[ -z "$forbidden" ] || fail "the image holds $forbidden"
others=$(grep -vE '^/usr/local/bin/eoc-controller$|^/(usr/)?lib(64|/x86_64-linux-gnu)?/[^/]+\.so[.0-9]*$|^/etc/(passwd|group|nsswitch\.conf|os-release|ssl/certs/ca-certificates\.crt)$|^/var/lib/dpkg/status\.d/[^/]+$|^/usr/share/doc/eoc-operator/sbom\.spdx\.json$' "$work/files" || true)
[ -z "$others" ] || fail "the image holds files it does not need: $others"
executables=$(find "$mnt" -type f -perm /111 -printf '/%P\n' | grep -vE '^/(usr/)?lib' || true)
[ "$executables" = /usr/local/bin/eoc-controller ] || fail "executables other than the controller: $executables"
writable=$(find "$mnt" -mindepth 1 -perm /022 ! -type l -printf '/%P\n')
[ -z "$writable" ] || fail "writable by group or others: $writable"
owned=$(find "$mnt" -mindepth 1 \( ! -user 0 -o ! -group 0 \) -printf '/%P\n')
[ -z "$owned" ] || fail "not owned by root (so writable by the image's user): $owned"
missing=$(chroot "$mnt" /lib64/ld-linux-x86-64.so.2 --list /usr/local/bin/eoc-controller 2>&1 | grep 'not found' || true)
[ -z "$missing" ] || fail "libraries missing from the image: $missing"
# Its binary hardened as every build's is, and its records (the SBOM, the dpkg status stanzas) of
# every file it holds (the build stage's dpkg database is not this machine's: no --dpkg).
"$root/tests/scripts/hardening_test.sh" "$mnt/usr/local/bin/eoc-controller" || fail "the image's binary is not hardened"
python3 "$root/tests/image/sbom_check.py" "$mnt" "$version" || fail "the image's records (above)"
b umount "$ctr" >/dev/null

# 3. Its binary, as the image's user, against the local control plane (the CRD applied, as users
# do first): a kubeconfig and CA that user can read, mounted read-only; the ports on loopback
# (the chroot shares the host's network).
kubectl --kubeconfig "$EOC_KUBECONFIG" apply -f "$root/crds/eoc.dev_inferencepools.yaml" >&2
kubectl --kubeconfig "$EOC_KUBECONFIG" wait --for condition=established --timeout=60s \
  crd/inferencepools.eoc.dev >&2
ports=$(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')
read -r health metrics pick <<<"$ports"
mkdir "$work/config"
cp "$EOC_KUBE_CA" "$work/config/ca.crt"
sed "s|certificate-authority: .*|certificate-authority: /config/ca.crt|" "$EOC_KUBECONFIG" >"$work/config/kubeconfig"
chown -R 65532:65532 "$work/config"
chmod 0500 "$work/config" && chmod 0400 "$work/config/"*
setsid "$root/scripts/image" buildah run --isolation chroot --user 65532:65532 --volume "$work/config:/config:ro" "$ctr" -- \
  /usr/local/bin/eoc-controller --kubeconfig /config/kubeconfig \
  --health-probe-bind-address "127.0.0.1:$health" --metrics-bind-address "127.0.0.1:$metrics" \
  --pick-bind-address "127.0.0.1:$pick" >"$work/controller.log" 2>&1 &
controller=$!
ready=
for _ in $(seq 1 240); do
  kill -0 "$controller" 2>/dev/null || break
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/readyz")" = 200 ]; then
    ready=1
    break
  fi
  sleep 0.5
done
[ -n "$ready" ] || {
  cat "$work/controller.log" >&2
  fail "the image's controller did not answer /readyz 200 within 120 s"
}
# It runs as 65532, and it serves its metrics.
pid=$(pgrep -f "^/usr/local/bin/eoc-controller --kubeconfig /config/kubeconfig --health-probe-bind-address 127.0.0.1:$health" | head -1)
[ -n "$pid" ] || fail "the controller's process is not found"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
[ "$uid" = 65532 ] || fail "the controller runs as uid $uid"
page=$(curl -sf "http://127.0.0.1:$metrics/metrics") || fail "no /metrics from the image's controller"
grep -q '^eoc_' <<<"$page" || fail "no eoc_ metrics from the image's controller"
echo "image_test: the image's controller answered /readyz 200 as uid $uid" >&2
# It stops on SIGTERM (as the kubelet stops it), and all of buildah's processes with it.
kill -TERM -- "-$controller"
for _ in $(seq 1 60); do
  pgrep -s "$controller" >/dev/null || break
  sleep 0.5
done
! pgrep -s "$controller" >/dev/null || fail "processes left after SIGTERM: $(pgrep -a -s "$controller")"
! kill -0 "$pid" 2>/dev/null || fail "the controller ($pid) still runs after SIGTERM"
wait "$controller" || true
controller=
