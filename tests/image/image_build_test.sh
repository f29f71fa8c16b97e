#!/usr/bin/env bash
# The image's records of what it holds, without a container engine or a compile: scripts/image-build
# lays out this build's controller (EOC_IMAGE_BINARY) in a temporary root, and sbom_check.py checks
# its SBOM and dpkg status stanzas against the files and this machine's dpkg database. First the
# check is shown to fail on a root without the records and on each kind of disagreement.
#   image_build_test.sh EOC_CONTROLLER
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
binary=$1
fail() {
  echo "image_build_test: FAIL: $*" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
image=$work/root
version=$("$root/scripts/image" version)
EOC_IMAGE_BINARY=$binary "$root/scripts/image-build" "$root" "$image"
check() { python3 "$root/tests/image/sbom_check.py" "$image" "$version" "$@"; }

# expect_failure WHAT TEXT [--dpkg]: the check fails on the root as it is now, saying TEXT.
expect_failure() {
  local what=$1 text=$2
  shift 2
  if check "$@" 2>"$work/out"; then
    fail "the check passes $what"
  fi
  grep -qF -- "$text" "$work/out" || {
    cat "$work/out" >&2
    fail "the check fails $what without saying '$text'"
  }
  echo "image_build_test: $what: $(grep -F -- "$text" "$work/out" | head -1)" >&2
}

# 1. The check fails on what it must catch, each change undone after.
sbom=$image/usr/share/doc/eoc-operator/sbom.spdx.json
mv "$sbom" "$work/sbom"
expect_failure "a root without records (image-build before them)" "no SBOM as JSON"
cp "$work/sbom" "$sbom"
library=$image/lib/x86_64-linux-gnu/libc.so.6
cp "$library" "$work/library"
printf 'x' >>"$library"
expect_failure "a library changed after the SBOM" "/lib/x86_64-linux-gnu/libc.so.6: SHA1"
cp "$work/library" "$library"
mv "$image/var/lib/dpkg/status.d/libc6" "$work/stanza"
expect_failure "a package without its status stanza" "/var/lib/dpkg/status.d/libc6: (None"
mv "$work/stanza" "$image/var/lib/dpkg/status.d/libc6"
touch "$image/lib/x86_64-linux-gnu/libextra.so.1"
expect_failure "a file the SBOM lacks" "/lib/x86_64-linux-gnu/libextra.so.1 is in the image but not in the SBOM"
rm "$image/lib/x86_64-linux-gnu/libextra.so.1"
mv "$image/etc/os-release" "$work/os-release"
expect_failure "a file the image lacks" "/etc/os-release is in the SBOM but not a file in the image"
mv "$work/os-release" "$image/etc/os-release"
# libssl.so.3 given to libc6: the SBOM agrees with itself, dpkg says otherwise.
python3 - "$sbom" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ids = {f["fileName"]: f["SPDXID"] for f in doc["files"]}
libc6 = next(p["SPDXID"] for p in doc["packages"] if p["name"] == "libc6")
for r in doc["relationships"]:
    if r["relatedSpdxElement"] == ids["./lib/x86_64-linux-gnu/libssl.so.3"]:
        r["spdxElementId"] = libc6
json.dump(doc, open(sys.argv[1], "w"))
PY
expect_failure "a file given to the wrong package" "the SBOM says libc6's" --dpkg
cp "$work/sbom" "$sbom"

# 2. The records as image-build made them.
check --dpkg || fail "the image's records disagree with its files or with dpkg (above)"
echo "image_build_test: $(find "$image/var/lib/dpkg/status.d" -type f | wc -l) dpkg status stanzas and" \
  "an SBOM of every file in the image, checksums and owners as dpkg has them" >&2
