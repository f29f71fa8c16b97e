#!/usr/bin/env python3
"""The weighted rule's alternatives on both traces and loads: one Markdown table per trace and load.
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


def main():
    binary, workdir = sys.argv[1], sys.argv[2]

    def edit(s):
        s["policies"] = [{"name": n, "pool": {"routing": {"strategy": st}}} for n, st in STRATEGIES]
    for trace, (example, capacity) in TRACES.items():
        path = peers.scenario(example, None, workdir, trace, edit)
        for load in peers.LOADS:
            print(f"## {trace}, {int(load * 100)}% of capacity (rate scale {load * capacity:g})")
            print()
            print("| strategy | rule | J/tok | active J/tok | mg CO2e/tok | TTFT p50 s | TTFT p99 s |"
                  " SLO % | KV hit % |")
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
            rows = []
            for rule, env in RULES.items():
                out = os.path.join(workdir, f"{trace}-{load}-{rule}.json")
                subprocess.run([binary, path, "--quiet", "--json", out, "--rate-scale",
                                f"{load * capacity:g}"], check=True, stdout=subprocess.DEVNULL,
                               env={**os.environ, **env})
                with open(out) as f:
                    for r in json.load(f)["runs"]:
                        if r["policy"] == "least-busy" and rule != "current":
                            continue  # LeastBusy draws no weights: one row
                        rows.append((r["strategy"], rule, r))
            for strategy, rule, r in sorted(rows, key=lambda x: x[0]):
                print(f"| {strategy} | {rule if strategy != 'LeastBusy' else '-'} | "
                      f"{r['joulesPerToken']:.3f} | {peers.active_jpt(r):.3f} | "
                      f"{1000 * r['gramsPerToken']:.4f} | {r['ttftSeconds']['p50']:.2f} | "
                      f"{r['ttftSeconds']['p99']:.2f} | {100 * r['sloAttainment']:.1f} | "
                      f"{100 * r['prefixHitRate']:.1f} |")
            print()


if __name__ == "__main__":
    main()
