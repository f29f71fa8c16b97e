#!/usr/bin/env python3
"""The weighted rule's alternatives on both traces and loads: one Markdown table per trace and load,
each figure the mean over SEEDS runs (the trace's sessions and prefixes and the picks' draws
change with the seed; one seed's p99 moves by tens of percent).
  compare.py EOC_SIM WORKDIR      (bench/weighted-rule/run calls it)"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "peers"))
import compare as peers  # noqa: E402  (the scenarios and figures bench/peers uses)

RULES = {"current": {}, "eff": {"EOC_W_EFF": "1"}, "sticky05": {"EOC_W_DELTA": "0.05"},
         "sticky10": {"EOC_W_DELTA": "0.1"},
         "eff-sticky05": {"EOC_W_EFF": "1", "EOC_W_DELTA": "0.05"}}
TRACES = {"azure-code": ("two-class.yaml", 4.0), "mooncake": ("mooncake.yaml", 1.0)}
STRATEGIES = [("joules", "JouleWeighted"), ("carbon", "CarbonWeighted"),
              ("latency", "LatencyWeighted"), ("least-busy", "LeastBusy")]
SEEDS = range(1, 6)
NAMES = ["J/tok", "active J/tok", "mg CO2e/tok", "TTFT p50 s", "TTFT p99 s", "SLO %", "KV hit %"]


def main():
    binary, workdir = sys.argv[1], sys.argv[2]

    def edit(s):
        s["policies"] = [{"name": n, "pool": {"routing": {"strategy": st}}} for n, st in STRATEGIES]
    for trace, (example, capacity) in TRACES.items():
        path = peers.scenario(example, None, workdir, trace, edit)
        for load in peers.LOADS:
            print(f"## {trace}, {int(load * 100)}% of capacity (rate scale {load * capacity:g}), "
                  f"means of seeds {SEEDS.start} to {SEEDS.stop - 1}")
            print()
            print("\n".join(peers.header(["strategy", "rule"], NAMES)))
            runs = {}  # (strategy, rule) -> the runs of every seed
            for rule, env in RULES.items():
                for seed in SEEDS:
                    out = os.path.join(workdir, f"{trace}-{load}-{rule}-{seed}.json")
                    subprocess.run([binary, path, "--quiet", "--json", out, "--rate-scale",
                                    f"{load * capacity:g}", "--seed", str(seed)], check=True,
                                   stdout=subprocess.DEVNULL, env={**os.environ, **env})
                    with open(out) as f:
                        for r in json.load(f)["runs"]:
                            if r["strategy"] == "LeastBusy" and rule != "current":
                                continue  # LeastBusy draws no weights: one row
                            runs.setdefault((r["strategy"], rule), []).append(r)
            for (strategy, rule), rs in sorted(runs.items(), key=lambda x: x[0][0]):
                shown = rule if strategy != "LeastBusy" else "-"
                print("| " + " | ".join([strategy, shown] + peers.cells(rs, NAMES)) + " |")
            print()


if __name__ == "__main__":
    main()
