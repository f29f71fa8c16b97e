"""Reading Google Benchmark's JSON output (--benchmark_out), for the bench/*_table.py scripts."""
import json


def figures(path, key=lambda entry: entry["run_name"]):
    """Each benchmark's entry by `key` (its run name unless given), in the file's order: the median
    when it has repetitions, else its only run."""
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)["benchmarks"]
    by_key = {}
    for entry in entries:
        if entry.get("run_type") == "aggregate" and entry.get("aggregate_name") != "median":
            continue
        by_key[key(entry)] = entry  # a median comes after the runs it summarises
    return by_key
