#!/usr/bin/env bash
# eoc-sim end to end on a cut-down trace: the autoscaling example's first 20 minutes, its JSON
# accounting, its plots, and its autoscaler's every tick checked against the model of Ray Serve's
# policy (ray_policy_check.py).
#   sim_cli.sh EOC_SIM REPO_ROOT
set -euo pipefail
sim=$1 root=$2
scenario=$root/examples/sim/autoscale.yaml
if [ ! -f "$root/../shared/traces/azure-llm-2023-code.csv" ]; then
  echo "sim_cli: no ../shared beside the repository; skipped"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sim" "$scenario" --quiet --duration-seconds 1200 --json "$dir/out.json" --plots "$dir/plots" \
  --autoscaler-record "$dir/ticks.csv" >"$dir/table.txt"
cat "$dir/table.txt"
python3 - "$dir/out.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert len(doc["runs"]) == 2, doc["runs"]
for run in doc["runs"]:
    total = run["finished"] + run["shed"] + run["timedOut"]
    assert run["requests"] == doc["requests"] == total, (run["policy"], total)
    assert run["scaleUps"] > 0 and run["scaleDowns"] > 0, run["policy"]
    assert run["joules"] > run["idleJoules"] > 0, run["policy"]
    assert len(run["ttftSamples"]) == run["finished"], run["policy"]
print("sim_cli: every request accounted for in both runs; both scaled up and down")
PY
for png in replicas.png ttft-cdf.png energy.png; do
  [ -s "$dir/plots/$png" ] || { echo "sim_cli: no $png"; exit 1; }
done
python3 "$root/tests/scripts/ray_policy_check.py" "$dir/ticks.csv" "$dir/ticks.csv.json"
