#!/usr/bin/env bash
# scripts/control-plane's spawn must return only once the component has exec'd: before that, its
# pid is bash's or setsid's, and a start that checked it then judged a starting kube-apiserver
# dead ("kube-apiserver exited during start-up"). Spawns etcd repeatedly and checks at once, as
# wait_for does; and a component that exits at once must still read as gone.
#   tests/scripts/control_plane_spawn_test.sh [ROUNDS]    (default 30; etcd from etcd-server)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rounds=${1:-30}
# shellcheck source=../../scripts/control-plane
source "$root/scripts/control-plane"
set +e
dir=$(mktemp -d)
trap 'stop_component etcd 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/logs" "$dir/pids"

passed=0 failed=0
for ((round = 1; round <= rounds; round++)); do
  spawn_etcd 2>/dev/null
  if running etcd; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "round $round: etcd (pid $(pid_of etcd)) not running right after spawn:" \
      "$(tr '\0' ' ' <"/proc/$(pid_of etcd)/cmdline" 2>/dev/null | cut -c1-60)" >&2
  fi
  stop_component etcd 2>/dev/null
done

# A binary that exits at once: spawn returns (no 10 s wait) and the process reads as gone.
t0=$(now_ms)
spawn etcd /usr/bin/etcd --no-such-flag --data-dir="$dir/etcd"
sleep 0.5
if ! running etcd && (($(now_ms) - t0 < 5000)); then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "an etcd that exits at once still reads as running, or spawn waited for it" >&2
fi
echo "spawn: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
