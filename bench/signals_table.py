#!/usr/bin/env python3
"""Turns bench_signals' JSON output (--benchmark_out) into the Markdown that bench/run appends to
bench/results/signals.md: a table of every benchmark (the median of its repetitions) and one line
per page comparing the engine map's families with all.
    python3 bench/signals_table.py FILE.json >>bench/results/signals.md
"""
import sys

from gbench_json import figures


def main(path):
    by_label = figures(path, key=lambda entry: entry.get("label") or entry["run_name"])
    print("| page / kept | page bytes | samples | kept | CPU time per page | MB/s | "
          "ns per sample |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, e in by_label.items():
        if e.get("error_occurred"):
            print(f"| {label} | error: {e['error_message']} | | | | | |")
            continue
        print(f"| {label} | {e['page_bytes']:,.0f} | {e['samples']:,.0f} | {e['kept']:,.0f} | "
              f"{e['cpu_time']:,.1f} {e['time_unit']} | {e['bytes_per_second'] / 1e6:,.0f} | "
              f"{e['ns_per_sample']:,.0f} |")
    print()
    for page in ("vllm_full", "synthetic_1000"):
        engine, every = by_label.get(f"{page}/engine"), by_label.get(f"{page}/all")
        if not engine or not every:
            print(f"- {page}: not measured")
            continue
        print(f"- {page}: keeping the engine map's families (and reading them) costs "
              f"{engine['cpu_time'] / every['cpu_time']:.2f}x keeping every family")


if __name__ == "__main__":
    main(sys.argv[1])
