#!/usr/bin/env python3
"""The weighted rule's alternatives on both traces and loads: one Markdown table per trace and load,
each figure the mean over SEEDS runs (the trace's sessions and prefixes and the picks' draws
change with the seed; one seed's p99 moves by tens of percent). Each trace's capacity is measured
as bench/peers measures it, under the current rule.
  compare.py EOC_SIM WORKDIR      (bench/weighted-rule/run calls it)"""
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "peers"))
import compare as peers  # noqa: E402  (the scenarios and figures bench/peers uses)

RULES = {"current": {}, "eff": {"EOC_W_EFF": "1"}, "sticky05": {"EOC_W_DELTA": "0.05"},
         "sticky10": {"EOC_W_DELTA": "0.1"},
         "eff-sticky05": {"EOC_W_EFF": "1", "EOC_W_DELTA": "0.05"}}
STRATEGIES = [("joules", "JouleWeighted"), ("carbon", "CarbonWeighted"),
              ("latency", "LatencyWeighted"), ("least-busy", "LeastBusy")]
SEEDS = peers.SEEDS
NAMES = ["J/tok", "active J/tok", "mg CO2e/tok", "TTFT p50 s", "TTFT p99 s", "SLO %", "KV hit %"]


def main():
    binary, workdir = sys.argv[1], sys.argv[2]

    def edit(s):
        s["policies"] = [{"name": n, "pool": {"routing": {"strategy": st}}} for n, st in STRATEGIES]
    for trace, (example, steps) in peers.TRACES.items():
        path = peers.scenario(example, None, workdir, trace, edit)
        with open(path) as f:
            slo_ttft = yaml.safe_load(f)["slo"]["ttftSeconds"]
        capacity = peers.capacity(binary, path, workdir, slo_ttft, steps)
        for load in peers.LOADS:
            print(f"## {trace}, {int(load * 100)}% of capacity (rate scale {load * capacity:g}), "
                  f"means of seeds {SEEDS.start} to {SEEDS.stop - 1}")
            print()
            print("\n".join(peers.header(["strategy", "rule"], NAMES)))
            runs = {}  # (strategy, rule) -> the runs of every seed
            for rule, env in RULES.items():
                by_policy = peers.seeds(binary, path, workdir, f"{trace}-{load}-{rule}",
                                        load * capacity, env=env)
                for rs in by_policy.values():
                    if rs[0]["strategy"] == "LeastBusy" and rule != "current":
                        continue  # LeastBusy draws no weights: one row
                    runs[(rs[0]["strategy"], rule)] = rs
            for (strategy, rule), rs in sorted(runs.items(), key=lambda x: x[0][0]):
                shown = rule if strategy != "LeastBusy" else "-"
                print("| " + " | ".join([strategy, shown] + peers.cells(rs, NAMES)) + " |")
            print()


if __name__ == "__main__":
    main()
