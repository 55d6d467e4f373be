#!/usr/bin/env python3
"""The table of bench/torch/step_rounds.sh: FOLDER holds CONFIG.ROUND.json, one worker JSON of
bench/torch/modules_table.py per configuration and round. Prints, per configuration, the median
over its rounds of each measured field, and its step wall as the median of the rounds' ratios to
that round's `plain` process [lowest-highest], so each ratio pairs processes that ran minutes apart
at most; then its median step over plain's median, and its fastest process's step over plain's
fastest (where one process runs slow or fast, as the host's other load decides, every paired
ratio of its round moves with it, the medians less; the fastest moves only with a process that ran
fast, and says what each configuration costs when the host lets it run at its best); and the
paired ratio in units of each process's host speed (the worker's host_speed_ms, a fixed host-side
workload timed around its steps), which the host's speed of the moment leaves out where that is
what moved the processes; and the step over plain's within one host state. The device machines'
hosts ran that workload at one of two speeds about 1.6x apart (docs/benchmarks.md, "The host runs
at two speeds"), so a process whose two host-speed readings are both below the threshold (the
geometric mean of the folder's fastest and slowest reading) ran fast, both above it slow, and one
of each is left out; the cell gives, per state, this configuration's median step over plain's in
that state and how many processes of each went into it.

    bench/torch/step_rounds_table.py FOLDER CONFIG...
"""

import json
import os
import re
import statistics
import sys

# (JSON field, column heading, format): what each process measured per step.
FIELDS = [
    ("step_ms", "step ms", "{:.2f}"),
    ("step_thread_cpu_ms", "stepping thread CPU ms", "{:.2f}"),
    ("step_process_cpu_ms", "process CPU ms", "{:.2f}"),
    ("data_wait_ms", "wait for the batch ms", "{:.2f}"),
    ("step_worker_processes_cpu_ms", "workers' CPU ms", "{:.2f}"),
    ("step_gc_ms", "in Python's GC ms", "{:.2f}"),
    ("host_speed_ms", "host speed ms", "{:.3f}"),
    ("step_thread_minor_faults", "stepping thread faults", "{:.0f}"),
    ("step_thread_voluntary_switches", "voluntary switches", "{:.1f}"),
    ("step_thread_involuntary_switches", "involuntary switches", "{:.1f}"),
]


def load(folder):
    """{config: {round: worker JSON}} of the processes that left one."""
    runs = {}
    for name in os.listdir(folder):
        match = re.fullmatch(r"(.+)\.(\d+)\.json", name)
        if not match:
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                measured = json.load(f)
        except (OSError, ValueError):
            continue
        runs.setdefault(match.group(1), {})[int(match.group(2))] = measured
    return runs


def paired_ratios(rounds, plain, value):
    """Each round's `value` (of one process's JSON; None where it has none) over its plain
    process's, for the rounds where both have one."""
    ratios = []
    for n, r in rounds.items():
        mine, plains = value(r), value(plain[n]) if n in plain else None
        if mine and plains:
            ratios.append(mine / plains)
    return ratios


def ratio_cell(rounds, plain):
    """The median of this configuration's step ratios to its round's plain process, with range."""
    ratios = paired_ratios(rounds, plain, lambda r: r.get("step_ms"))
    if not ratios:
        return "no paired plain process"
    return (f"{statistics.median(ratios):.3f}× [{min(ratios):.3f}-{max(ratios):.3f}] "
            f"({len(ratios)} round{'s' if len(ratios) > 1 else ''})")


def speed_cell(rounds, plain):
    """The median over rounds of (step / host speed) over its round's plain process's: the paired
    ratio with each process's step taken in units of its own host speed (host_speed_ms)."""
    ratios = paired_ratios(
        rounds, plain,
        lambda r: r["step_ms"] / r["host_speed_ms"] if r.get("host_speed_ms") else None)
    if not ratios:
        return ""
    return f"{statistics.median(ratios):.3f}× [{min(ratios):.3f}-{max(ratios):.3f}]"


def host_state_threshold(runs):
    """The host-speed reading between the fast and the slow state: the geometric mean of the
    fastest and slowest of every process's readings; None without readings."""
    readings = [ms for rounds in runs.values() for r in rounds.values()
                for ms in r.get("host_speed_ms_before_after") or []]
    if not readings:
        return None
    return (min(readings) * max(readings)) ** 0.5


def host_state(measured, threshold):
    """'fast' or 'slow' where both of a process's host-speed readings fall on one side of
    `threshold`; None where they straddle it or are missing."""
    readings = measured.get("host_speed_ms_before_after") or []
    if threshold is None or len(readings) != 2:
        return None
    if all(ms < threshold for ms in readings):
        return "fast"
    if all(ms >= threshold for ms in readings):
        return "slow"
    return None


def state_cell(rounds, plain, threshold):
    """Per host state, this configuration's median step over plain's median in that state, with
    how many processes of each it took (this one's / plain's)."""
    def steps_in(processes, state):
        return [r["step_ms"] for r in processes.values()
                if r.get("step_ms") and host_state(r, threshold) == state]

    parts = []
    for state in ("fast", "slow"):
        steps, plains = steps_in(rounds, state), steps_in(plain, state)
        if steps and plains:
            parts.append(f"{state} {statistics.median(steps) / statistics.median(plains):.3f}× "
                         f"({len(steps)}/{len(plains)})")
        else:
            parts.append(f"{state} - ({len(steps)}/{len(plains)})")
    return "; ".join(parts)


def pooled_cell(rounds, plain):
    """This configuration's median step over plain's, and its fastest over plain's fastest."""
    steps = [r["step_ms"] for r in rounds.values() if r.get("step_ms")]
    plains = [r["step_ms"] for r in plain.values() if r.get("step_ms")]
    if not steps or not plains:
        return " | "
    return (f"{statistics.median(steps) / statistics.median(plains):.3f}× | "
            f"{min(steps) / min(plains):.3f}×")


def table(runs, configs):
    """The rows, as Markdown: one per configuration, in the order asked."""
    plain = runs.get("plain", {})
    threshold = host_state_threshold(runs)
    present = [f for f in FIELDS if any(f[0] in r for c in runs.values() for r in c.values())]
    lines = ["| configuration | step × its round's plain, median [range] | medians' ratio | "
             "fastest's ratio | in host-speed units, paired | within one host state | "
             + " | ".join(heading for _, heading, _ in present) + " |",
             "| --- | --- | ---: | ---: | --- | --- | " + " | ".join("---:" for _ in present)
             + " |"]
    for config in configs:
        rounds = runs.get(config)
        if not rounds:
            lines.append(f"| {config} | no process finished | | | | | "
                         + " | ".join("" for _ in present) + " |")
            continue
        cells = []
        for field, _, form in present:
            values = [r[field] for r in rounds.values() if field in r]
            cells.append(form.format(statistics.median(values)) if values else "")
        lines.append(f"| {config} | {ratio_cell(rounds, plain)} | {pooled_cell(rounds, plain)} | "
                     f"{speed_cell(rounds, plain)} | {state_cell(rounds, plain, threshold)} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder, configs = argv[1], argv[2:]
    runs = load(folder)
    configs = configs or sorted(runs)
    print(table(runs, configs))
    rounds = sorted({n for c in runs.values() for n in c})
    threshold = host_state_threshold(runs)
    marks = {"fast": " (fast)", "slow": " (slow)", None: ""}
    print("\nstep ms by round: " + "; ".join(
        f"{config} " + " ".join(
            f"{runs[config][n]['step_ms']:.2f}{marks[host_state(runs[config][n], threshold)]}"
            if n in runs.get(config, {}) else "-" for n in rounds)
        for config in configs))
    if threshold is not None:
        print(f"host states: fast where both host-speed readings are under {threshold:.2f} ms, "
              "slow where both are over it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
