#!/bin/sh
# A stand-in exec credential plugin for the tests. The first argument picks its behaviour; the
# environment it is given may carry:
#   RUNS_FILE       a line is appended per run (the token of run N is "token-N")
#   EXEC_INFO_FILE  where to save $KUBERNETES_EXEC_INFO
#   API_VERSION     the apiVersion to answer with (default client.authentication.k8s.io/v1)
#   EXPIRY          status.expirationTimestamp, when set
set -eu
here=$(dirname "$0")
api=${API_VERSION:-client.authentication.k8s.io/v1}
runs=0
if [ -n "${RUNS_FILE:-}" ]; then
  echo run >>"$RUNS_FILE"
  runs=$(wc -l <"$RUNS_FILE" | tr -d ' ')
fi
if [ -n "${EXEC_INFO_FILE:-}" ]; then
  printf '%s' "${KUBERNETES_EXEC_INFO:-}" >"$EXEC_INFO_FILE"
fi

# Prints an ExecCredential whose status holds $1 (JSON members) and the expiry, if any.
answer() {
  expiry=""
  if [ -n "${EXPIRY:-}" ]; then expiry=",\"expirationTimestamp\":\"$EXPIRY\""; fi
  printf '{"apiVersion":"%s","kind":"ExecCredential","status":{%s%s}}\n' "$api" "$1" "$expiry"
}

# A PEM file as a JSON string body: newlines escaped.
json_pem() { awk '{ printf "%s\\n", $0 }' "$1"; }

case "${1:-}" in
  token) answer "\"token\":\"token-$runs\"" ;;
  args) shift; answer "\"token\":\"$*\"" ;;
  env) answer "\"token\":\"${PLUGIN_GREETING:-unset}\"" ;;
  cert)
    answer "\"clientCertificateData\":\"$(json_pem "$here/client.crt")\",\"clientKeyData\":\"$(json_pem "$here/client.key")\""
    ;;
  cert-without-key) answer "\"clientCertificateData\":\"$(json_pem "$here/client.crt")\"" ;;
  slow) sleep 0.5; answer "\"token\":\"token-$runs\"" ;;
  fail)
    i=0
    while [ $i -lt 2000 ]; do echo "noise line $i" >&2; i=$((i + 1)); done
    echo "error: the plugin broke" >&2
    exit 3
    ;;
  no-json) echo 'token: abc' ;;
  deep)  # a member nested 100,000 arrays deep (200 KB)
    open=$(head -c 100000 /dev/zero | tr '\0' '[')
    close=$(head -c 100000 /dev/zero | tr '\0' ']')
    printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"t"},"spec":%s%s}\n' \
      "$api" "$open" "$close"
    ;;
  no-token) answer "" ;;
  wrong-kind) printf '{"apiVersion":"%s","kind":"Secret","status":{"token":"t"}}\n' "$api" ;;
  bad-expiry) EXPIRY="tomorrow" answer "\"token\":\"t\"" ;;
  hang) sleep 30 ;;
  huge) head -c 3000000 /dev/zero | tr '\0' x ;;
  stderr-flood)
    head -c 3000000 /dev/zero | tr '\0' x >&2
    answer "\"token\":\"after-flood\""
    ;;
  *) echo "unknown mode: ${1:-}" >&2; exit 2 ;;
esac
