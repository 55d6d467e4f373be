#!/usr/bin/env python3
"""Draws the peers harness's cost per launch by method as an SVG bar chart, and prints a short table.

Usage: scripts/plot_benchmarks.py PEERS_JSON [--svg FILE] [--summary] [--title TEXT]

Reads the JSON that bench/peers (launchwatch_peers_bench --json) writes. Each bar is one method's
median host cost per empty-kernel launch, split into the launch calls themselves (issue, solid) and
what the method does once the batch is over (synchronise, resolve or flush: drain, lighter); the
whisker spans the 10th to 90th percentile of issue + drain over the rounds; the label gives the
median and the per-round ratio to raw cudaLaunchKernel. Python's standard library only, so it runs
wherever the harness does.
"""

import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

COLOURS = {
    "raw": ("#6b6b6b", "#c9c9c9"),
    "launchwatch": ("#1f5fa8", "#a9c6ea"),
    "peer": ("#c46a00", "#f2c894"),
}


def finite(value):
    return isinstance(value, (int, float)) and math.isfinite(value)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        sys.exit(f"plot_benchmarks: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        sys.exit(f"plot_benchmarks: {path} is not JSON ({e}); pass the file the harness wrote with --json")
    if "launch_cost" not in data:
        sys.exit(f"plot_benchmarks: {path} has no 'launch_cost' section; is it the peers harness's JSON?")
    return data


def rows(data, chart=False):
    """The methods that ran, in the harness's order, with the numbers the chart needs (µs).

    For the chart, one row per method: the clean phase's rows, and from the CUPTI phase only the
    CUPTI peers (its raw and launchwatch rows repeat the clean phase's as their baseline).
    """
    out = []
    for case in data["launch_cost"]:
        if case.get("skipped"):
            continue
        phase = case.get("phase", "clean")
        if chart and phase != "clean" and case["side"] != "peer":
            continue
        issue = case["issue_ns"]["median"]
        drain = case["drain_ns"]["median"]
        total = case["total_ns"]
        if not (finite(issue) and finite(drain) and finite(total["median"])):
            continue
        out.append({
            "label": case["label"],
            "phase": phase,
            "side": case["side"],
            "issue": issue / 1000.0,
            "drain": drain / 1000.0,
            "total": total["median"] / 1000.0,
            "p10": total["p10"] / 1000.0 if finite(total["p10"]) else None,
            "p90": total["p90"] / 1000.0 if finite(total["p90"]) else None,
            "ratio": case["total_ratio_to_raw"]["median"],
            "issue_ratio": case["issue_ratio_to_raw"]["median"],
        })
    return out


def nice_step(span):
    raw = span / 6.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def svg(data, title):
    items = rows(data, chart=True)
    if not items:
        sys.exit("plot_benchmarks: no launch-cost case ran; nothing to plot")
    label_width = 330
    plot_width = 520
    right_margin = 150
    bar_height = 22
    gap = 10
    top = 70
    bottom = 80
    height = top + len(items) * (bar_height + gap) + bottom
    width = label_width + plot_width + right_margin
    longest = max(max(i["total"], i["p90"] or 0) for i in items)
    step = nice_step(longest)
    axis_max = step * math.ceil(longest / step)

    def x(us):
        return label_width + plot_width * us / axis_max

    device = data.get("device", {}).get("name", "")
    run = data.get("run", {})
    subtitle = (f"{device}; median of {run.get('rounds', '?')} interleaved rounds of "
                f"{run.get('launches_per_batch', '?')} launches; whiskers p10-p90 of issue + drain; "
                f"ratios to raw launches of the same phase")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{escape(title)}</text>',
        f'<text x="{width / 2}" y="44" text-anchor="middle" fill="#444">{escape(subtitle)}</text>',
    ]
    # Grid and axis.
    tick = 0.0
    while tick <= axis_max + 1e-9:
        tx = x(tick)
        parts.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" '
                     f'y2="{height - bottom + 4}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="{tx:.1f}" y="{height - bottom + 18}" text-anchor="middle" '
                     f'fill="#444">{tick:g}</text>')
        tick += step
    parts.append(f'<text x="{label_width + plot_width / 2}" y="{height - bottom + 38}" '
                 f'text-anchor="middle">host µs per empty-kernel launch</text>')

    for n, item in enumerate(items):
        y = top + n * (bar_height + gap)
        solid, light = COLOURS.get(item["side"], COLOURS["peer"])
        parts.append(f'<text x="{label_width - 8}" y="{y + bar_height * 0.7:.1f}" '
                     f'text-anchor="end">{escape(item["label"])}</text>')
        x0 = x(0)
        x_issue = x(item["issue"])
        x_total = x(item["issue"] + item["drain"])
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x_issue - x0, 0.5):.1f}" '
                     f'height="{bar_height}" fill="{solid}"><title>issue {item["issue"]:.2f} µs'
                     f'</title></rect>')
        if x_total > x_issue:
            parts.append(f'<rect x="{x_issue:.1f}" y="{y}" width="{x_total - x_issue:.1f}" '
                         f'height="{bar_height}" fill="{light}"><title>drain {item["drain"]:.2f} µs'
                         f'</title></rect>')
        if item["p10"] is not None and item["p90"] is not None:
            mid = y + bar_height / 2
            a, b = x(item["p10"]), x(item["p90"])
            parts.append(f'<line x1="{a:.1f}" y1="{mid}" x2="{b:.1f}" y2="{mid}" stroke="black"/>')
            for end in (a, b):
                parts.append(f'<line x1="{end:.1f}" y1="{mid - 5}" x2="{end:.1f}" y2="{mid + 5}" '
                             f'stroke="black"/>')
        ratio = item["ratio"]
        ratio_text = f"  {ratio:.2f}x raw" if finite(ratio) else ""
        label_x = max(x_total, x(item["p90"]) if item["p90"] is not None else x_total) + 6
        parts.append(f'<text x="{label_x:.1f}" y="{y + bar_height * 0.7:.1f}">'
                     f'{item["total"]:.2f} µs{ratio_text}</text>')

    # Legend.
    ly = height - 16
    lx = 20
    for side, name in (("raw", "raw CUDA"), ("launchwatch", "launchwatch"), ("peer", "peer")):
        solid, light = COLOURS[side]
        parts.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{solid}"/>')
        parts.append(f'<rect x="{lx + 12}" y="{ly - 10}" width="12" height="12" fill="{light}"/>')
        parts.append(f'<text x="{lx + 30}" y="{ly}">{name} (issue | drain)</text>')
        lx += 200
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def summary(data):
    items = rows(data)
    lines = [f"{'method':<44} {'phase':<6} {'issue µs':>9} {'x raw':>7} {'total µs':>9} {'x raw':>7}"]

    def ratio(value):
        return f"{value:.2f}" if finite(value) else "-"

    for item in items:
        lines.append(f"{item['label']:<44} {item['phase']:<6} {item['issue']:>9.2f} "
                     f"{ratio(item['issue_ratio']):>7} {item['total']:>9.2f} {ratio(item['ratio']):>7}")
    for case in data["launch_cost"]:
        if case.get("skipped"):
            lines.append(f"{case['label']:<44} skipped: {case['skipped']}")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="the JSON file launchwatch_peers_bench wrote (--json)")
    parser.add_argument("--svg", help="where to write the bar chart")
    parser.add_argument("--summary", action="store_true", help="print a short table of the launch costs")
    parser.add_argument("--title", default="Cost per empty-kernel launch, by method")
    args = parser.parse_args(argv)
    data = load(args.json)
    if not args.svg and not args.summary:
        parser.error("nothing to do: give --svg FILE, --summary, or both")
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(svg(data, args.title))
        print(f"wrote {args.svg}")
    if args.summary:
        print(summary(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
