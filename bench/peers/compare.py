#!/usr/bin/env python3
"""The peers comparison (issue 18): ours and the peers' policies on one fleet, traces and seeds.

Writes a Markdown report and a plot from eoc-sim runs; bench/peers/run calls it.
  compare.py EOC_SIM OUT_MD PLOT_PNG WORKDIR [--trace-dir DIR]

The fleet is examples/sim/two-class.yaml's (two A100s in a 30 g/kWh zone, two H100s in a 300 g/kWh
zone). The traces: the Azure code trace (two-class.yaml's settings) and Mooncake's
(examples/sim/mooncake.yaml's); --trace-dir swaps in other traces of the same names and formats.
Each trace's capacity is measured as bench/sim-figures does (the highest rate scale at which
LeastBusy sheds nothing and keeps the median TTFT within the SLO), and every policy runs at 50% and
80% of it, on seeds 1 to 5 (a figure is the mean of the five; one seed's p99 moves by tens of
percent). The autoscaling comparison runs examples/sim/autoscale.yaml. Runs of different seeds
go in parallel, one per core.
"""
import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "sim")

OURS = [
    ("joules", {"routing": {"strategy": "JouleWeighted"}}),
    ("carbon", {"routing": {"strategy": "CarbonWeighted"}}),
    ("latency", {"routing": {"strategy": "LatencyWeighted"}}),
    ("least-busy", {"routing": {"strategy": "LeastBusy"}}),
    ("our-round-robin", {"routing": {"strategy": "RoundRobin"}}),
    ("least-busy-no-prefix",
     {"routing": {"strategy": "LeastBusy", "prefixAffinity": {"enabled": False}}}),
]
PEERS = ["random", "round-robin", "least-outstanding", "power-of-two", "sglang-cache-aware",
         "llm-d-scorer"]
LOADS = [0.5, 0.8]
# Each trace: its example scenario and the rising rate scales its capacity is sought among.
TRACES = {
    "azure-code": ("two-class.yaml", [x / 2 for x in range(2, 25)]),
    "mooncake": ("mooncake.yaml", [x / 20 for x in range(1, 41)]),
}
SEEDS = range(1, 6)


READING = """\
How to read the tables. Every policy runs on the same fleet, trace, rate and seeds: two
A100-SXM4-40GB workers in a 30 gCO2e/kWh zone and two H100-80GB-HBM3 workers in a 300 gCO2e/kWh
zone (`examples/sim/two-class.yaml`), no autoscaling. Ours are the pool's strategies with the CRD's
defaults (sessions and prefix affinity on); `peer-*` are the routers users would pick instead,
each written from its documentation with its published defaults (`sim/baseline.h`,
`sim/llmd_scorer.h`). Each figure is the mean over seeds 1 to 5 (the seed draws the synthetic
sessions, the models and the routers' random choices; one seed's p99 moves by tens of percent).
Columns:
- `J/tok`: all the fleet's joules, idle draw included, per output token; `active J/tok` leaves the
  idle draw out, which is the part routing can move on a fixed fleet;
- `mg CO2e/tok`: milligrams per output token, each joule at its zone's intensity;
- `TTFT`: time to first token over every finished request; `SLO %`: requests within both the TTFT
  and the time-per-output-token objectives of the scenario;
- `KV hit %`: prompt tokens found in the engines' prefix caches;
- `imbalance`: each second, the most requests in flight on one ready worker over the mean, averaged
  (1 is even; an H100 has about three times an A100's capacity, so 1 is not the ideal here);
  `by capacity`: the same with each worker's requests in flight over its KV cache in tokens (an
  H100 holds 411,000, an A100 136,000; vLLM's sequence limit is the same on both), so 1 is each
  worker carrying in proportion to what it can hold; the issue's imbalance goal is judged on this
  one;
- `shed`: requests shed or timed out.
The goals are the issue's; `missed` says so, and the README says why.
"""


def policies():
    out = [{"name": n, "pool": p} for n, p in OURS]
    out += [{"name": "peer-" + k, "baseline": {"kind": k}} for k in PEERS]
    return out


def scenario(example, trace_dir, workdir, name, edit):
    """The example scenario with absolute paths, edited by `edit`, written to WORKDIR/NAME.yaml."""
    with open(os.path.join(EXAMPLES, example)) as f:
        s = yaml.safe_load(f)
    for key in ("mlenergy", "gpus"):
        s["profiles"][key] = os.path.normpath(os.path.join(EXAMPLES, s["profiles"][key]))
    path = os.path.normpath(os.path.join(EXAMPLES, s["trace"]["path"]))
    if trace_dir:
        path = os.path.join(trace_dir, os.path.basename(path))
    s["trace"]["path"] = path
    edit(s)
    out = os.path.join(workdir, name + ".yaml")
    with open(out, "w") as f:
        yaml.safe_dump(s, f, sort_keys=False)
    return out


def sim(binary, path, workdir, tag, scale=None, policy=None, seed=None, env=None):
    """One eoc-sim run of the scenario at `path` ({policy: run}); `env` adds to the environment."""
    out = os.path.join(workdir, tag + ".json")
    cmd = [binary, path, "--quiet", "--json", out]
    if scale is not None:
        cmd += ["--rate-scale", f"{scale:g}"]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if policy:
        cmd += ["--policy", policy]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    with open(out) as f:
        return {r["policy"]: r for r in json.load(f)["runs"]}


def seeds(binary, path, workdir, tag, scale=None, env=None):
    """Every policy's runs over SEEDS, in parallel: {policy: [run, one per seed]}."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        per_seed = list(pool.map(
            lambda s: sim(binary, path, workdir, f"{tag}-{s}", scale, seed=s, env=env),
            SEEDS))
    return {name: [runs[name] for runs in per_seed] for name in per_seed[0]}


def capacity(binary, path, workdir, slo_ttft, steps):
    """A scenario's capacity: the highest of the rising rate scales `steps`, up to the first that
    fails, at which LeastBusy sheds nothing and keeps the median TTFT within `slo_ttft`."""
    best = None
    for scale in steps:
        r = sim(binary, path, workdir, "capacity", scale, "least-busy")["least-busy"]
        if r["shed"] or r["timedOut"] or r["ttftSeconds"]["p50"] > slo_ttft:
            break
        best = scale
    if best is None:
        sys.exit(f"compare.py: {path}: LeastBusy misses the SLO even at rate scale {steps[0]}")
    return best


def active_jpt(r):
    """Joules per output token, idle draw left out: what routing moves."""
    return (r["joules"] - r["idleJoules"]) / max(1, r["outputTokens"])


# Each figure of a run the tables show: its column, its format, how it is read from a run.
FIGURES = {
    "J/tok": ("{:.3f}", lambda r: r["joulesPerToken"]),
    "active J/tok": ("{:.3f}", active_jpt),
    "mg CO2e/tok": ("{:.4f}", lambda r: 1000 * r["gramsPerToken"]),
    "TTFT p50 s": ("{:.2f}", lambda r: r["ttftSeconds"]["p50"]),
    "TTFT p99 s": ("{:.2f}", lambda r: r["ttftSeconds"]["p99"]),
    "SLO %": ("{:.1f}", lambda r: 100 * r["sloAttainment"]),
    "KV hit %": ("{:.1f}", lambda r: 100 * r["prefixHitRate"]),
    "imbalance": ("{:.2f}", lambda r: r["loadImbalance"]),
    "by capacity": ("{:.2f}", lambda r: r["capacityImbalance"]),
    "shed": ("{:.0f}", lambda r: r["shed"] + r["timedOut"]),
    "scale events": ("{:.0f}", lambda r: r["scaleUps"] + r["scaleDowns"]),
}


def mean_of(runs, key):
    return sum(r[key] for r in runs) / len(runs)


def mean(runs, name):
    """Figure `name` (FIGURES) of `runs`, the mean over them."""
    return sum(FIGURES[name][1](r) for r in runs) / len(runs)


def header(first, names):
    """A Markdown table's first two lines: the `first` columns (text), then the figures `names`."""
    return ["| " + " | ".join(first + names) + " |",
            "|" + "---|" * len(first) + "---:|" * len(names)]


def cells(runs, names):
    """The figures `names` of `runs`, each the mean over them, formatted."""
    return [FIGURES[name][0].format(mean(runs, name)) for name in names]


def table(runs):
    """A row per policy: `runs` maps each to its runs, one per seed."""
    lines = header(["policy", "router"], list(FIGURES))
    for name, rs in runs.items():
        lines.append("| " + " | ".join([name, rs[0]["strategy"]] + cells(rs, list(FIGURES))) +
                     " |")
    return "\n".join(lines)


def pct_less(ours, theirs):
    return 100 * (1 - ours / theirs) if theirs > 0 else 0.0


def verdict(ok):
    return "met" if ok else "**missed**"


def energy_goals(runs):
    """The energy and carbon goals, on the means over seeds of `runs` ({policy: [runs]})."""
    rr, j, c = runs["peer-round-robin"], runs["joules"], runs["carbon"]
    rows = []
    p99 = lambda rs: mean(rs, "TTFT p99 s")  # noqa: E731
    for label, ours, name, goal in (("JouleWeighted J/tok", j, "J/tok", 30),
                                    ("CarbonWeighted gCO2e/tok", c, "mg CO2e/tok", 40)):
        less = pct_less(mean(ours, name), mean(rr, name))
        slower = p99(ours) / p99(rr)
        rows.append(f"| {label} vs round robin | {less:.1f}% fewer (goal {goal}%) | "
                    f"p99 TTFT x{slower:.2f} (goal <= 1.10) | "
                    f"{verdict(less >= goal and slower <= 1.10)} |")
    less = pct_less(mean(j, "active J/tok"), mean(rr, "active J/tok"))
    rows.append(f"| JouleWeighted active J/tok vs round robin | {less:.1f}% fewer | | |")
    return rows


def prefix_goals(runs):
    """The prefix-affinity goals, on the means over seeds of `runs` ({policy: [runs]})."""
    on, off = runs["least-busy"], runs["least-busy-no-prefix"]
    hits = lambda rs: mean(rs, "KV hit %")  # noqa: E731
    p99 = lambda rs: mean(rs, "TTFT p99 s")  # noqa: E731
    spread = lambda rs: mean(rs, "by capacity")  # noqa: E731
    ratio = hits(on) / hits(off) if hits(off) > 0 else 0
    rows = [f"| prefix affinity (LeastBusy) vs none | KV hit x{ratio:.2f} (goal 1.5), imbalance "
            f"by capacity {spread(on):.2f} against {spread(off):.2f} without (goal <= 1.2; by "
            f"count {mean(on, 'imbalance'):.2f} and {mean(off, 'imbalance'):.2f}) | | "
            f"{verdict(ratio >= 1.5 and spread(on) <= 1.2)} |"]
    for peer in ("peer-sglang-cache-aware", "peer-llm-d-scorer"):
        p = runs[peer]
        ok = hits(on) >= hits(p) and p99(on) <= p99(p)
        rows.append(f"| prefix affinity vs {peer[5:]} | KV hit {hits(on):.1f}% against "
                    f"{hits(p):.1f}% | p99 TTFT {p99(on):.2f} s against {p99(p):.2f} s | "
                    f"{verdict(ok)} |")
    return rows


def plot(results, png, workdir):
    """J per output token against p99 TTFT, one point per policy, a panel per trace at 80%."""
    script = [
        "set terminal pngcairo size 1200,520 font ',9'",
        f"set output '{png}'",
        "set multiplot layout 1,2",
        "set xlabel 'p99 TTFT (s)'", "set ylabel 'J per output token'", "set grid",
        "set key off", "set logscale x"]
    for trace, load_runs in results.items():
        runs = load_runs[LOADS[-1]]
        data = os.path.join(workdir, f"plot-{trace}.dat")
        with open(data, "w") as f:
            for name, rs in runs.items():
                f.write(f"{mean(rs, 'TTFT p99 s')} {mean(rs, 'J/tok')} "
                        f"{1 if name.startswith('peer-') else 0} \"{name}\"\n")
        script += [f"set title '{trace}, 80% of capacity (o ours, x peers)'",
                   f"plot '{data}' using 1:2:($3 == 0 ? 7 : 2) with points pt variable ps 1.5, "
                   f"'' using 1:2:4 with labels offset 0,1 font ',8'"]
    script.append("unset multiplot")
    gp = os.path.join(workdir, "plot.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", gp], check=True)


MARGINS = [0.1, 0.25, 0.5, 1.0]
MARGIN_STRATEGIES = ["JouleWeighted", "LeastBusy"]


def margins(binary, workdir, trace_dir, caps):
    """Prefix affinity's loadMargin under the default strategy and LeastBusy, each trace at both
    loads: the mean of five seeds (one seed's p99 moves by tens of percent)."""
    names = ["KV hit %", "TTFT p50 s", "TTFT p99 s", "SLO %", "J/tok"]
    lines = header(["trace", "load", "strategy", "loadMargin"], names)
    for trace, (example, _) in TRACES.items():
        def edit(s):
            s["policies"] = [
                {"name": f"{strategy.lower()}-margin-{i}",
                 "pool": {"routing": {"strategy": strategy,
                                      "prefixAffinity": {"loadMargin": m}}}}
                for strategy in MARGIN_STRATEGIES for i, m in enumerate(MARGINS)]
        path = scenario(example, trace_dir, workdir, f"{trace}-margins", edit)
        for load in LOADS:
            runs = seeds(binary, path, workdir, f"{trace}-margins-{load}", load * caps[trace])
            for strategy in MARGIN_STRATEGIES:
                for i, m in enumerate(MARGINS):
                    rs = runs[f"{strategy.lower()}-margin-{i}"]
                    lines.append("| " + " | ".join([trace, f"{int(load * 100)}%", strategy,
                                                    f"{m:g}"] + cells(rs, names)) + " |")
    return "\n".join(lines)


def misses(binary, workdir):
    """A stream of cache misses (every prompt new) on the two-class fleet: how each router with
    prefix awareness spreads it (the issue's herding case; reported, not asserted)."""
    rng = random.Random(7)
    trace = os.path.join(workdir, "misses.jsonl")
    with open(trace, "w") as f:
        t, block = 0.0, 0
        for _ in range(3000):
            t += rng.expovariate(4.0)  # 4 requests a second, 2,048-token prompts
            f.write(json.dumps({"timestamp": int(t * 1000), "input_length": 2048,
                                "output_length": 64,
                                "hash_ids": list(range(block, block + 4))}) + "\n")
            block += 4

    def edit(s):
        s["trace"]["path"] = trace
        s["policies"] = [{"name": "least-busy", "pool": {"routing": {"strategy": "LeastBusy"}}},
                         {"name": "joules", "pool": {"routing": {"strategy": "JouleWeighted"}}},
                         {"name": "peer-sglang-cache-aware",
                          "baseline": {"kind": "sglang-cache-aware"}},
                         {"name": "peer-llm-d-scorer", "baseline": {"kind": "llm-d-scorer"}}]
    path = scenario("mooncake.yaml", None, workdir, "misses", edit)
    runs = sim(binary, path, workdir, "misses")
    lines = ["| policy | requests to the A100s | to the H100s | imbalance | TTFT p99 s | KV hit % |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, r in runs.items():
        per = {c.split("-")[1]: v["requests"] for c, v in r["classes"].items()}
        lines.append(f"| {name} | {per.get('A100', 0)} | {per.get('H100', 0)} | "
                     f"{r['loadImbalance']:.2f} | {r['ttftSeconds']['p99']:.2f} | "
                     f"{100 * r['prefixHitRate']:.1f} |")
    return "\n".join(lines)


OVERLOADS = [0.8, 1.0, 1.2]


def sessions(binary, workdir, trace_dir, caps):
    """Session affinity on and off on the Azure trace (its synthetic sessions), up to overload."""
    def edit(s):
        s["policies"] = [
            {"name": f"{st.lower()}-{'on' if on else 'off'}",
             "pool": {"routing": {"strategy": st, "sessionAffinity": {"enabled": on}}}}
            for st in ("JouleWeighted", "LeastBusy") for on in (True, False)]
    path = scenario("two-class.yaml", trace_dir, workdir, "sessions", edit)
    names = ["KV hit %", "TTFT p50 s", "TTFT p99 s", "SLO %", "J/tok", "shed"]
    lines = header(["load", "strategy", "sessions"], names)
    for load in OVERLOADS:
        runs = seeds(binary, path, workdir, f"sessions-{load}", load * caps["azure-code"])
        for name, rs in runs.items():
            on = name.rsplit("-", 1)[1]
            lines.append("| " + " | ".join([f"{int(load * 100)}%", rs[0]["strategy"], on] +
                                           cells(rs, names)) + " |")
    return "\n".join(lines)


TARGETS = [4, 6, 8, 12, 16, 24]  # our target swept above Ray's default (2), other fields ours


def crd_autoscaling_defaults():
    """The CRD's defaults of the autoscaler's target, delays and look-back (the schema's `default`s,
    which crd_schema_test holds to src/api/defaults.h), for policies that must write them out: the
    example's pool sets its own."""
    with open(os.path.join(ROOT, "crds", "eoc.dev_inferencepools.yaml")) as f:
        crd = yaml.safe_load(f)
    fields = (crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
              ["properties"]["autoscaling"]["properties"])
    return {k: fields[k]["default"] for k in ("targetOngoingRequests", "upscaleDelaySeconds",
                                              "downscaleDelaySeconds", "lookBackPeriodSeconds")}


DEFAULT_AUTOSCALING = crd_autoscaling_defaults()


def autoscaling(binary, workdir, trace_dir):
    """Each autoscaling policy's runs over SEEDS, and the fixed fleet's at the peak."""
    delays = {k: v for k, v in DEFAULT_AUTOSCALING.items() if k != "targetOngoingRequests"}

    def edit(s):
        s["policies"] = [
            *[{"name": f"ours-target-{t}",
               "pool": {"routing": {"strategy": "LeastBusy"},
                        "autoscaling": {"targetOngoingRequests": t, **delays}}} for t in TARGETS],
            {"name": "ours-example", "pool": {"routing": {"strategy": "LeastBusy"}}},
            # Ray Serve's AutoscalingConfig defaults (ray.serve.config, Ray 2.32 and later):
            # target_ongoing_requests 2, upscale_delay_s 30, downscale_delay_s 600,
            # look_back_period_s 30, metrics_interval_s 10; max_replicas kept at the pool's.
            {"name": "ray-defaults", "pool": {"routing": {"strategy": "LeastBusy"},
                                              "metrics": {"intervalSeconds": 10},
                                              "autoscaling": {"targetOngoingRequests": 2,
                                                              **delays}}},
        ]
    path = scenario("autoscale.yaml", trace_dir, workdir, "autoscale", edit)
    with open(path) as f:
        base = yaml.safe_load(f)
    peak = 0
    runs = seeds(binary, path, workdir, "autoscale")
    for r in runs["ours-example"]:
        cols = r["samples"]["columns"]
        peak = max(peak, *(int(row[cols.index("replicas")]) for row in r["samples"]["rows"]))

    def fixed(s):
        s["fleet"][0]["replicas"] = peak
        s["fleet"][0].pop("scaleTarget", None)
        s["pool"].pop("autoscaling", None)
        s["policies"] = [{"name": "peak-fleet", "pool": {"routing": {"strategy": "LeastBusy"}}}]
    path = scenario("autoscale.yaml", trace_dir, workdir, "peak", fixed)
    runs.update(seeds(binary, path, workdir, "peak"))
    return base, peak, runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("out")
    ap.add_argument("png")
    ap.add_argument("workdir")
    ap.add_argument("--trace-dir")
    a = ap.parse_args()

    results, caps, names = {}, {}, {}

    for trace, (example, steps) in TRACES.items():
        def edit(s):
            s["policies"] = policies()
        path = scenario(example, a.trace_dir, a.workdir, trace, edit)
        with open(path) as f:
            s = yaml.safe_load(f)
        names[trace] = os.path.basename(s["trace"]["path"])
        caps[trace] = capacity(a.sim, path, a.workdir, s["slo"]["ttftSeconds"], steps)
        results[trace] = {load: seeds(a.sim, path, a.workdir, f"{trace}-{load}",
                                      load * caps[trace]) for load in LOADS}
    plot(results, a.png, a.workdir)
    base, peak, auto = autoscaling(a.sim, a.workdir, a.trace_dir)
    margin_table = margins(a.sim, a.workdir, a.trace_dir, caps)
    session_table = sessions(a.sim, a.workdir, a.trace_dir, caps)
    miss_table = misses(a.sim, a.workdir)

    out = [READING]
    w = out.append
    for trace, load_runs in results.items():
        w(f"## {trace} (`{names[trace]}`): capacity at rate scale {caps[trace]:g}")
        w("")
        for load, runs in load_runs.items():
            w(f"### {int(load * 100)}% of capacity (rate scale {load * caps[trace]:g})")
            w("")
            w(table(runs))
            w("")
            w("| goal | figure | latency | verdict |")
            w("|---|---|---|---|")
            out.extend(energy_goals(runs))
            if trace == "mooncake":
                out.extend(prefix_goals(runs))
            w("")
    w("## Prefix affinity's loadMargin")
    w("")
    w("JouleWeighted (the default strategy) and LeastBusy with prefix affinity's `loadMargin` at "
      "each value, "
      "every other setting the default's; each figure the mean of seeds "
      f"{SEEDS.start} to {SEEDS.stop - 1}.")
    w("")
    w(margin_table)
    w("")
    w("## Session affinity under load")
    w("")
    w("The Azure trace (60% of its requests are turns of synthetic sessions) at 80%, 100% and 120% "
      "of capacity, session affinity on and off, every other setting the default's; each figure "
      f"the mean of seeds {SEEDS.start} to {SEEDS.stop - 1}. A session's "
      "worker that has no room for a turn (its KV budget) sends that turn elsewhere and keeps the "
      "binding.")
    w("")
    w(session_table)
    w("")
    w("## A stream of cache misses")
    w("")
    w("3,000 requests at 4 a second, each a 2,048-token prompt that shares nothing with any other "
      "(a Mooncake-format trace made here, seed 7), on the two-class fleet: where each "
      "prefix-aware router sends them. Herding would show as one class (or one worker: the "
      "imbalance) taking them all. Reported, not asserted; our strategies' spread is asserted by "
      "`tests/unit/routing/herding_test.cc`.")
    w("")
    w(miss_table)
    w("")
    w("## Autoscaling: ours, Ray's defaults, and a fixed fleet sized for the peak")
    d = DEFAULT_AUTOSCALING
    w("")
    w(f"`examples/sim/autoscale.yaml` (H100s in one zone, rate scale "
      f"{base['trace'].get('rateScale', 1)}, min {base['pool']['autoscaling']['minReplicas']}, "
      f"max {base['pool']['autoscaling']['maxReplicas']} replicas), each figure the mean of seeds "
      f"{SEEDS.start} to {SEEDS.stop - 1}. `ours-target-N` is the CRD's "
      f"defaults (upscale delay {d['upscaleDelaySeconds']:g} s, downscale delay "
      f"{d['downscaleDelaySeconds']:g} s, look-back {d['lookBackPeriodSeconds']:g} s) with a "
      f"target of N ongoing requests a replica (the default target, "
      f"{d['targetOngoingRequests']:g}, is marked), `ours-example` the example's own tuning "
      f"(target 8, delays 10 s and 120 s), `ray-defaults` Ray Serve's defaults (target 2, the same "
      f"delays, metrics every 10 s); `peak-fleet` is a fixed fleet of {peak} replicas, the most "
      f"`ours-example` reached.")
    w("")
    names = ["SLO %", "TTFT p50 s", "TTFT p99 s", "J/tok", "scale events", "shed"]
    w("\n".join(header(["policy", "replica-seconds", "saved vs peak fleet"], names)))
    fixed_rs = mean_of(auto["peak-fleet"], "replicaSeconds")
    for name, rs in auto.items():
        replica_seconds = mean_of(rs, "replicaSeconds")
        if name == f"ours-target-{d['targetOngoingRequests']:g}":
            name += " (default)"
        w("| " + " | ".join([name, f"{replica_seconds:.0f}",
                             f"{pct_less(replica_seconds, fixed_rs):.1f}%"] + cells(rs, names))
          + " |")
    w("")
    with open(a.out, "a") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
