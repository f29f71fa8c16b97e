#!/usr/bin/env python3
"""Checks an autoscaler conformance record against a model of Ray Serve's default policy.

    ray_policy_check.py RECORD.csv PARAMS.json

The model follows python/ray/serve/autoscaling_policy.py on Ray's master branch in 2026 (after
ray-project/ray#62144): the cold-start path, the queue-length policy, the scaling factors, the
wall-clock delay logic with its 1e-6 s tolerance, then the bounds. It is written apart from the C++
policy (src/autoscale/policy.cc), in Python floats as Ray computes, and replays every row: given
the row's time, ongoing total, current and target, with the delay state carried from the rows
before, it must reach the row's decision. Each row's target must also be the decision before it.
Exits 1 naming the first row that differs.

A record may carry a sixth column, `complete` (1 or 0), and leave `ongoing` empty: these are this
project's holds on missing metrics (src/autoscale/policy.h, "Metrics"), which Ray has no notion
of, as the simulator's records have them (eoc-sim --autoscaler-record). A tick whose load is
unknown (empty `ongoing`), or whose load misses some ready worker (`complete` 0) and points down,
holds at target and resets the delay.
"""
import csv
import json
import math
import sys

EPS = 1e-6


class Model:
    def __init__(self, p):
        self.p = p
        self.counter = 0  # > 0: up, < 0: down, as Ray's decision counter
        self.since = None  # when the current direction was first seen
        self.fired = 0  # delays that fired
        self.on_tolerance = 0  # ... of which with the elapsed time a hair short of the delay

    def factors(self, desired, current):
        if current == 0:
            return math.ceil(desired)
        delta = desired - current
        f = self.p["upscalingFactor"] if delta > 0 else self.p["downscalingFactor"]
        scaled = math.ceil(current + f * delta)
        if math.ceil(float(desired)) < current and scaled == current:
            scaled -= 1
        return scaled

    def elapsed(self, now, wait):
        if now - self.since + EPS < wait:
            return False
        self.fired += 1
        self.on_tolerance += now - self.since < wait
        return True

    def delay(self, desired, target, now):
        decision = target
        if desired > target:
            if self.counter < 0:
                self.counter, self.since = 0, None
            self.counter += 1
            if self.since is None:
                self.since = now
            if self.elapsed(now, self.p["upscaleDelaySeconds"]):
                self.counter, self.since, decision = 0, None, desired
        elif desired < target:
            if self.counter > 0:
                self.counter, self.since = 0, None
            self.counter -= 1
            if target == 1:
                wait = self.p["downscaleToZeroDelaySeconds"]
            else:
                wait = self.p["downscaleDelaySeconds"]
                desired = max(1, desired)
            if self.since is None:
                self.since = now
            if self.elapsed(now, wait):
                self.counter, self.since, decision = 0, None, desired
        else:
            self.counter, self.since = 0, None
        return decision

    def hold(self, target):
        self.counter, self.since = 0, None
        return max(self.p["minReplicas"], min(self.p["maxReplicas"], target))

    def decide(self, now, total, current, target, complete=True):
        p = self.p
        if current != 0 and total is None:
            return self.hold(target)
        if current == 0 and (total or 0) > 0:
            decision = max(math.ceil(1 * p["upscalingFactor"]), target)
        else:
            if current == 0:
                desired = target
            else:
                desired = current * (total / (p["targetOngoingRequests"] * current))
            scaled = self.factors(desired, current)
            if current != 0 and not complete and scaled < target:
                return self.hold(target)
            if current == 0 and scaled > 0:
                decision = scaled
            else:
                decision = self.delay(max(0, scaled), target, now)
        return max(p["minReplicas"], min(p["maxReplicas"], decision))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        params = json.load(f)["autoscaling"]
    model = Model(params)
    rows = 0
    previous = None
    with open(sys.argv[1], newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        columns = ["time_s", "ongoing", "current", "target", "decision"]
        if header not in (columns, columns + ["complete"]):
            sys.exit(f"{sys.argv[1]}: header {header}")
        for n, row in enumerate(reader, start=2):
            now = float(row[0])
            total = float(row[1]) if row[1] != "" else None
            current, target, decision = int(row[2]), int(row[3]), int(row[4])
            complete = len(row) < 6 or row[5] == "1"
            if previous is not None and target != previous:
                sys.exit(f"line {n}: target {target}, but the decision before was {previous}")
            want = model.decide(now, total, current, target, complete)
            if want != decision:
                sys.exit(f"line {n}: {row}: the model decides {want}")
            previous = decision
            rows += 1
    print(f"ray_policy_check: {rows} rows agree with the model; {model.fired} delays fired, "
          f"{model.on_tolerance} of them within the 1e-6 s tolerance")


if __name__ == "__main__":
    main()
