#!/usr/bin/env python3
"""Turns bench_routing's JSON output (--benchmark_out) into the Markdown that bench/run appends to
bench/results/routing.md: a table of every benchmark (the median of its repetitions, or its only
run) and one line per goal.
    python3 bench/routing_table.py FILE.json >>bench/results/routing.md
"""
import sys

from gbench_json import figures

# The keys of a benchmark entry that are not its user counters.
NOT_COUNTERS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "label",
}


def number(value):
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:,.1f}"


def row(name, entry):
    if entry.get("error_occurred"):
        return f"| {name} | error: {entry['error_message']} | | |"
    unit = entry["time_unit"]
    counters = ", ".join(
        f"{key} {number(value)}" for key, value in entry.items() if key not in NOT_COUNTERS)
    return (f"| {name} | {entry['real_time']:,.1f} {unit} | {entry['cpu_time']:,.1f} {unit} | "
            f"{counters} |")


def summary(by_name):
    """One line per goal; a goal whose benchmarks did not run (filtered out, failed) says so."""

    def value(name, key):
        entry = by_name.get(name)
        if entry is None or entry.get("error_occurred"):
            return None
        return entry[key]

    def ratio(label, big, small, goal):
        a, b = value(big, "cpu_time"), value(small, "cpu_time")
        if a is None or b is None:
            return f"- {label}: not measured (goal <= {goal}x)"
        verdict = "met" if a / b <= goal else "MISSED"
        return (f"- {label}: {a / b:.1f}x (goal <= {goal}x: {verdict}; CPU ns per pick "
                f"{a:.0f} against {b:.0f})")

    def scaling(label, family):
        one = value(f"{family}/workers:1000/real_time/threads:1", "real_time")
        two = value(f"{family}/workers:1000/real_time/threads:2", "real_time")
        if one is None or two is None:
            return f"- {label}: not measured"
        return (f"- {label}: {one / two:.2f}x the picks per second of 1 thread (wall ns per pick "
                f"{two:.0f} against {one:.0f}; 2x would be linear on 2 cores)")

    def per_entry(label, name, key, rss_key, goal=None):
        bytes_ = value(name, key)
        if bytes_ is None:
            return f"- {label}: not measured"
        verdict = f" (goal <= {goal}: {'met' if bytes_ <= goal else 'MISSED'})" if goal else ""
        return (f"- {label}: {bytes_:.0f}{verdict}; resident set growth per entry "
                f"{value(name, rss_key):.0f}")

    return [
        ratio("session hit 1,000/10 workers", "BM_SessionHit/workers:1000",
              "BM_SessionHit/workers:10", 2),
        ratio("strategy pick JouleWeighted 1,000/10", "BM_StrategyPick/JouleWeighted/workers:1000",
              "BM_StrategyPick/JouleWeighted/workers:10", 2),
        ratio("new session 1,000/10", "BM_NewSession/workers:1000", "BM_NewSession/workers:10", 3),
        per_entry("bytes per session at 1,000,000",
                  "BM_SessionTableMemory/sessions:1000000/iterations:1/repeats:1",
                  "bytes_per_session", "rss_bytes_per_session", goal=150),
        per_entry("bytes per prefix block at 1,000,000",
                  "BM_PrefixIndexMemory/blocks:1000000/iterations:1/repeats:1", "bytes_per_block",
                  "rss_bytes_per_block"),
        scaling("session hit, 1,000 workers, 2 threads", "BM_SessionHit"),
        scaling("strategy pick JouleWeighted, 1,000 workers, 2 threads",
                "BM_StrategyPick/JouleWeighted"),
    ]


def main(path):
    by_name = figures(path)
    print("| benchmark | wall time | CPU time | counters |")
    print("| --- | --- | --- | --- |")
    for name, entry in by_name.items():
        print(row(name, entry))
    print()
    print("\n".join(summary(by_name)))


if __name__ == "__main__":
    main(sys.argv[1])
