#!/usr/bin/env bash
# No token, key or certificate content in any log of the project's programs: run after every
# test on a control plane (the cleanup of its fixture, before the plane stops), it looks in the
# output each eoc-* child process left in DIR/child-logs/ for the plane's tokens (the admin's and
# nobody's), the body of every private key and certificate in DIR/pki/, and every secret a test
# recorded (tests/support/child_process.h, RecordSecret: the ServiceAccount tokens it made, the
# keys of the certificates it served). It names the log and the kind of secret, never the secret.
# First it checks itself: a secret planted in a log of its own must be found.
#
#   tests/scripts/no_secrets_in_logs.sh DIR
set -euo pipefail

dir=${1:?usage: no_secrets_in_logs.sh DIR}
logs="$dir/child-logs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# secrets_of DIR: one fixed string per line: the tokens, and each line of base64 (40 characters
# or more) in the PEM files and the recorded secrets.
secrets_of() {
  local d=$1
  if [ -f "$d/env" ]; then
    (
      # shellcheck disable=SC1091
      . "$d/env"
      printf '%s\n' "${EOC_KUBE_ADMIN_TOKEN:-}" "${EOC_KUBE_NOBODY_TOKEN:-}"
    )
  fi
  find "$d/pki" -type f \( -name '*.key' -o -name '*.crt' -o -name '*.pem' \) -print0 2>/dev/null |
    xargs -0 -r grep -h -E '^[A-Za-z0-9+/=]{40,}$' || true
  if [ -d "$d/child-logs/secrets" ]; then
    find "$d/child-logs/secrets" -type f -print0 | xargs -0 -r cat
  fi
}

# leaks SECRETS LOGDIR: prints "FILE: line N" for each line of a log holding a secret.
leaks() {
  local secrets=$1 logdir=$2
  grep -v -x -e '' "$secrets" >"$work/patterns" || true
  [ -s "$work/patterns" ] || return 0
  find "$logdir" -maxdepth 1 -type f -name '*.log' -print0 |
    xargs -0 -r grep -n -F -f "$work/patterns" -- /dev/null |
    sed -E 's/^([^:]+):([0-9]+):.*/\1: line \2/' || true
}

# The check of the check: a planted secret is found, and a clean log is not flagged.
mkdir -p "$work/self/child-logs/secrets" "$work/self/pki"
printf 'tok-%s\n' "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$work/self/child-logs/secrets/1"
printf '{"msg":"ok"}\n' >"$work/self/child-logs/eoc-clean.1.log"
printf '{"msg":"header","value":"Bearer %s"}\n' "$(cat "$work/self/child-logs/secrets/1")" \
  >"$work/self/child-logs/eoc-leaky.2.log"
secrets_of "$work/self" >"$work/self-secrets"
found=$(leaks "$work/self-secrets" "$work/self/child-logs")
if [ "$found" != "$work/self/child-logs/eoc-leaky.2.log: line 1" ]; then
  echo "FAIL: the check does not find a planted secret (found: ${found:-nothing})" >&2
  exit 1
fi

if [ ! -d "$logs" ]; then
  echo "no child logs in $logs: nothing ran on this plane"
  exit 0
fi
secrets_of "$dir" >"$work/secrets"
count=$(find "$logs" -maxdepth 1 -type f -name '*.log' | wc -l)
found=$(leaks "$work/secrets" "$logs")
if [ -n "$found" ]; then
  echo "FAIL: secrets in the logs of the project's programs (the secret itself not shown):" >&2
  printf '%s\n' "$found" >&2
  exit 1
fi
echo "ok: $(grep -c . "$work/secrets") secrets, none in $count logs"
