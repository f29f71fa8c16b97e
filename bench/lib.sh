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

# One wrk run on core 1 (one thread, kept-alive connections): prints "requests/s p50 p99 non-2xx".
#   wrk_figures CONNECTIONS SECONDS URL [LUA_SCRIPT]
wrk_figures() {
  local connections=$1 seconds=$2 url=$3 script=${4:-}
  taskset -c 1 wrk -t1 -c"$connections" -d"${seconds}s" --latency ${script:+-s "$script"} "$url" |
    awk '/Requests\/sec:/ { rps = $2 } /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
         / Non-2xx or 3xx responses:/ { bad = $5 }
         END { printf "%s %s %s %s\n", rps, p50, p99, bad + 0 }'
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
