# shellcheck shell=bash
# What bench/pick and bench/gateway share; sourced, not run.
#   source "$root/bench/lib.sh"; bench_start   # sets $run (a scratch dir) and $pids, cleaned on exit

# A scratch directory in $run, and $pids: the processes to stop when the script exits.
bench_start() {
  run=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}

# A CA, a server certificate it signs for NAME and 127.0.0.1, and a client certificate it signs
# (CN gateway, O eoc-bench), RSA 2048 as the chart makes them, valid two days: DIR/ca.crt,
# DIR/server.crt and .key, DIR/client.crt and .key.
#   bench_certs DIR NAME
bench_certs() {
  local dir=$1 name=$2
  mkdir -p "$dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=eoc-bench-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  bench_cert "$dir" server "/CN=$name" "subjectAltName=DNS:$name,IP:127.0.0.1
extendedKeyUsage=serverAuth"
  bench_cert "$dir" client /O=eoc-bench/CN=gateway "extendedKeyUsage=clientAuth"
}
#   bench_cert DIR FILE_NAME SUBJECT EXTENSIONS
bench_cert() {
  local dir=$1 file=$2 subject=$3 extensions=$4
  openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$dir/$file.key" \
    -out "$dir/$file.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$file.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile <(echo "$extensions") -out "$dir/$file.crt" 2>/dev/null
}

# Waits up to 10 s for an HTTP answer (any status) from `curl -s CURL_ARGS... URL`; fails the
# script, naming URL, when none comes.
#   wait_answer URL [CURL_ARGS...]
wait_answer() {
  local url=$1
  shift
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url")" = 000 ] || return 0
    sleep 0.1
  done
  echo "bench: nothing answers $url" >&2
  exit 1
}

# One wrk run on core 1 (one thread, kept-alive connections): prints "requests/s p50 p99 failed",
# failed being answers other than 2xx and socket errors (connect, read, write, timeout) together.
#   wrk_figures CONNECTIONS SECONDS URL [LUA_SCRIPT]
wrk_figures() {
  local connections=$1 seconds=$2 url=$3 script=${4:-}
  taskset -c 1 wrk -t1 -c"$connections" -d"${seconds}s" --latency ${script:+-s "$script"} "$url" |
    awk '/Requests\/sec:/ { rps = $2 } /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
         / Non-2xx or 3xx responses:/ { bad += $5 }
         / Socket errors:/ { gsub(/,/, ""); bad += $4 + $6 + $8 + $10 }
         END { printf "%s %s %s %s\n", rps, p50, p99, bad + 0 }'
}

# Fails the script when a wrk run had failures (wrk_figures' fourth figure).
#   no_failures WHAT FAILED
no_failures() {
  [ "$2" = 0 ] || { echo "bench: $1: $2 answers other than 2xx or socket errors" >&2; exit 1; }
}

# a / b, two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# The commit measured, "with uncommitted changes" when any of the given paths has some.
#   commit_label ROOT PATH...
commit_label() {
  local root=$1
  shift
  local commit
  commit=$(git -C "$root" rev-parse --short HEAD)
  [ -z "$(git -C "$root" status --porcelain -- "$@")" ] || commit+=" with uncommitted changes"
  echo "$commit"
}
