"""The Grafana dashboard's structure (Grafana itself is not in Debian, so it is not loaded here):
  dashboard.py DASHBOARD README CONFIGMAP RULES_OUT
DASHBOARD: charts/eoc-operator/dashboards/eoc-operator.json; README: the metrics it may query are
those the README's tables list; CONFIGMAP: the chart's dashboard ConfigMap as rendered; RULES_OUT:
where to write every panel's query as a recording rule, for `promtool check rules` to parse.
Prints each problem and exits 1 if there is any."""

import json
import re
import sys

import yaml

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


dashboard = json.load(open(sys.argv[1]))
served = set(re.findall(r"`(eoc_[a-z0-9_]+)`", open(sys.argv[2]).read()))
configmap = yaml.safe_load(open(sys.argv[3]))

check(dashboard.get("uid") == "eoc-operator" and dashboard.get("title"), "uid or title")
check(isinstance(dashboard.get("schemaVersion"), int), "no schemaVersion")
variables = {v["name"] for v in dashboard.get("templating", {}).get("list", [])}
check({"datasource", "namespace", "pool"} <= variables, f"variables {variables}")
builtin = {"__rate_interval", "__interval", "__range"}

panels = dashboard.get("panels", [])
check(len(panels) >= 10, f"{len(panels)} panels")
ids = [p.get("id") for p in panels]
check(len(ids) == len(set(ids)), f"panel ids repeat: {ids}")
cells = set()
rules = []
for p in panels:
    name = p.get("title", f"panel {p.get('id')}")
    check(p.get("type") in {"timeseries", "stat", "table", "gauge", "bargauge"}, f"{name}: type")
    check(p.get("datasource", {}).get("uid") == "${datasource}", f"{name}: datasource not $datasource")
    check(p.get("description"), f"{name}: no description")
    g = p.get("gridPos", {})
    check(g.get("x", -1) >= 0 and g.get("x", 0) + g.get("w", 0) <= 24 and g.get("h", 0) > 0,
          f"{name}: gridPos {g}")
    for x in range(g.get("x", 0), g.get("x", 0) + g.get("w", 0)):
        for y in range(g.get("y", 0), g.get("y", 0) + g.get("h", 0)):
            check((x, y) not in cells, f"{name} overlaps another panel at {(x, y)}")
            cells.add((x, y))
    targets = p.get("targets", [])
    check(targets, f"{name}: no queries")
    refs = [t.get("refId") for t in targets]
    check(len(refs) == len(set(refs)), f"{name}: refIds repeat")
    for t in targets:
        expr = t.get("expr", "")
        check(expr, f"{name}: an empty query")
        for v in re.findall(r"\$(\w+)", expr):
            check(v in variables or v in builtin, f"{name}: ${v} is not a variable")
        for metric in re.findall(r"\b(eoc_[a-z0-9_]+)", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            check(metric in served or base in served, f"{name}: {metric} is not a metric the README lists")
        concrete = expr.replace("$__rate_interval", "1m").replace("$namespace", ".*").replace("$pool", ".*")
        rules.append({"record": f"dashboard:panel{p.get('id')}:{t.get('refId')}", "expr": concrete})

# The ConfigMap ships this very dashboard, with the sidecar's label.
check(configmap.get("kind") == "ConfigMap", "the dashboard ConfigMap is not rendered")
check(configmap.get("metadata", {}).get("labels", {}).get("grafana_dashboard") == "1",
      "the ConfigMap lacks the grafana_dashboard label")
shipped = json.loads(configmap.get("data", {}).get("eoc-operator.json", "null"))
check(shipped == dashboard, "the ConfigMap's dashboard differs from dashboards/eoc-operator.json")

yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(sys.argv[4], "w"))
for p in problems:
    print("dashboard:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
