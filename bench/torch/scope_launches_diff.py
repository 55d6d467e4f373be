"""Kernel launches and time per scope path in two launchwatch summary.json files, side by side
(issue 22: the sequence route's backward scopes against the graph-node hooks' on one program).
Usage: python3 bench/torch/scope_launches_diff.py A/summary.json B/summary.json
Prints each path whose launch count differs, a count of equal and differing paths, the launches
under backward and [loss] in each, and the twelve backward paths with the most device time."""
import json, sys

def by_path(summary):
    out = {}
    def walk(nodes, prefix):
        for node in nodes:
            if node.get("kind") != "scope":
                continue
            path = prefix + node["name"]
            for c in node.get("children", []):
                if c.get("kind") == "kernel":
                    n, t = out.get(path, (0, 0))
                    out[path] = (n + c["launches"], t + c["total_ns"])
            walk(node.get("children", []), path + "/")
    walk(summary.get("scopes", []), "")
    o = summary.get("outside_scopes") or {}
    out["[outside]"] = (o.get("launches", 0), o.get("total_ns", 0))
    return out

a, b = (by_path(json.load(open(p))) for p in sys.argv[1:3])
paths = sorted(set(a) | set(b))
same = differ = 0
for p in paths:
    x, y = a.get(p, (0, 0)), b.get(p, (0, 0))
    if x[0] == y[0]:
        same += 1
    else:
        differ += 1
        print(f"DIFF {p}: {x[0]} vs {y[0]} launches")
tot = lambda d, part: sum(v[0] for k, v in d.items() if part in k)
print(f"paths {len(paths)}: same launches {same}, different {differ}")
print(f"launches under backward: {tot(a,'backward/')} vs {tot(b,'backward/')}; "
      f"[loss]: {tot(a,'[loss]')} vs {tot(b,'[loss]')}; total {tot(a,'')} vs {tot(b,'')}")
top = sorted((p for p in paths if "backward/" in p), key=lambda p: -a.get(p, (0, 0))[1])[:12]
for p in top:
    print(f"  {p}: {a.get(p,(0,0))[0]} / {b.get(p,(0,0))[0]} launches, {a.get(p,(0,0))[1]/1e6:.3f} / {b.get(p,(0,0))[1]/1e6:.3f} ms")
