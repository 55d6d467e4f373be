#!/usr/bin/env python3
"""Every runtime a process runs CUDA kernels through, under `launchwatch run --capture-range
cuda-profiler-api`, against an independent reference of the same program in another process
(issue 23; the table goes to docs/benchmarks.md).

    bench/runtimes/runtimes_table.py --build build/gpu [--only NAME,...] [--out DIR]
    bench/runtimes/runtimes_table.py --build build/gpu --only none --exit-runs 200
    bench/runtimes/runtimes_table.py --build build/gpu --only none --long-run 480

Programs (bench/runtimes/programs, each in processes of its own, so one failing leaves a row
saying why): a JAX jit training step (XLA's command buffers, that is CUDA graphs captured before
the range and replayed in it, and several streams), CuPy (elementwise, a ufunc, a reduction, a
RawKernel), a standalone Triton kernel, a Numba-CUDA kernel, cuDNN convolutions and cuBLASLt
matmuls through PyTorch, and the C++ program of launch forms (runtime_forms.cu: threads and
streams, a cooperative launch, thread-block clusters, an explicit graph with a child graph, a
graph updated with cudaGraphExecUpdate). Each marks its measured steps with a profiler API range.

Reference: the kernel counter (kernel_counter.cpp), a CUDA injection with nothing of launchwatch
in it, counting and timing CUPTI's kernel records of the launches inside the range; for the
PyTorch program also torch.profiler in the same program (where Kineto sees the kernels); for the
C++ program also the count the program itself expects. launchwatch's numbers come from its
summary.json: the kernels run (launches less those recorded into a graph inside the range, so each
replay's kernels count once per replay) and their total device time. A row passes when the counts
are equal and the times within 5%.

--exit-runs N: N runs of bridge_exit_program's helper-launches-at-exit (a helper thread launches
while main returns) and queued-at-exit (10,000 kernels queued at exit), each under `launchwatch
run` and alone, eight at a time: exit statuses, hangs, reports written.
--long-run SECONDS: the PyTorch training run of programs/long_train.py for SECONDS under
`launchwatch run` (the whole run, no range): resident memory over the run, the report written,
and the kernels of its `window` scope against torch.profiler over the same steps in another
process.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
from run_vs_profiler import kernels_by_name  # noqa: E402  (summary.json's kernels by name)
SKIPPED = 77
TIME_TOLERANCE = 0.05


class Program:
    def __init__(self, name, title, command, profiler=False, expects=False):
        self.name = name
        self.title = title
        self.command = command
        self.profiler = profiler  # the program prints a torch.profiler reference with --profiler
        self.expects = expects  # the program prints `expected kernels: N`


def programs(build, python):
    script = lambda name: [python, os.path.join(PROGRAMS, name)]  # noqa: E731
    return [
        Program("jax", "JAX jit training step (command buffers)", script("jax_step.py")),
        Program("cupy", "CuPy elementwise, ufunc, reduction, RawKernel", script("cupy_kernels.py")),
        Program("triton", "Triton kernel (cuLaunchKernel)", script("triton_kernel.py")),
        Program("numba", "Numba-CUDA kernel", script("numba_kernel.py")),
        Program("torch", "cuDNN conv + cuBLASLt matmul (PyTorch)", script("torch_libraries.py"),
                profiler=True),
        Program("cxx", "C++: threads, cooperative, clusters, child graph, graph update",
                [os.path.join(build, "bench", "runtimes", "launchwatch_runtime_forms")],
                expects=True),
    ]


def tail(text, lines=6):
    return " / ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())


def execute(command, environment=None, timeout=180):
    """Runs `command`; returns (status, output). A timeout is status None."""
    env = dict(os.environ)
    env.update(environment or {})
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        # A signal as a shell (and `launchwatch run`) says it: 128 + its number.
        status = 128 - done.returncode if done.returncode < 0 else done.returncode
        return status, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa
        return None, text(expired.stdout) + text(expired.stderr)
    except OSError as error:
        return -1, str(error)


class Failed(Exception):
    pass


def checked(status, output, what):
    if status == SKIPPED:
        raise Failed("skipped: " + tail(output, 2).replace("skipped: ", ""))
    if status is None:
        raise Failed(f"{what} hung (killed after its timeout): {tail(output)}")
    if status != 0:
        raise Failed(f"{what} failed (status {status}): {tail(output)}")
    return output


def reference(program, counter, work):
    path = os.path.join(work, f"{program.name}.reference.json")
    status, output = execute(program.command, {"CUDA_INJECTION64_PATH": counter,
                                               "KERNEL_COUNTER_OUT": path})
    checked(status, output, "the reference run")
    if "CUPTI is held" in output or not os.path.exists(path):
        raise Failed(f"the kernel counter wrote nothing: {tail(output)}")
    with open(path) as f:
        counted = json.load(f)
    if counted["windows"] == 0:
        raise Failed("the kernel counter saw no profiler range")
    expected = None
    if program.expects:
        match = re.search(r"expected kernels: (\d+)", output)
        expected = int(match.group(1)) if match else None
    return counted, expected


def watched(program, launchwatch, work):
    out = os.path.join(work, f"{program.name}.launchwatch")
    shutil.rmtree(out, ignore_errors=True)
    command = [launchwatch, "run", "--out", out, "--capture-range", "cuda-profiler-api",
               "--torch", "off", "--"] + program.command
    status, output = execute(command)
    checked(status, output, "the run under launchwatch")
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return summary, output


def profiler_reference(program):
    status, output = execute(program.command + ["--profiler"])
    checked(status, output, "the torch.profiler run")
    match = re.search(r"profiler: (\{.*\})", output)
    if not match:
        raise Failed(f"the torch.profiler run printed no count: {tail(output)}")
    return json.loads(match.group(1))


def differences(counted, summary, most=4):
    """The kernels whose counts differ, by name: what a failing row shows."""
    ours = kernels_by_name(summary["scopes"] + [summary["outside_scopes"]], {})
    theirs = {name: tuple(row) for name, row in counted["by_name"].items()}
    rows = []
    for name in sorted(set(ours) | set(theirs)):
        a, b = theirs.get(name, (0, 0))[0], ours.get(name, (0, 0))[0]
        if a != b:
            rows.append(f"{name[:60]}: {a} vs {b}")
    return "; ".join(rows[:most]) + (f" (+{len(rows) - most} more)" if len(rows) > most else "")


def table_row(program, launchwatch, counter, work):
    """One row of the table (see main) and whether it passed (a skipped program passes)."""
    began = time.monotonic()
    try:
        counted, expected = reference(program, counter, work)
        summary, output = watched(program, launchwatch, work)
        ran = summary["launches"] - summary["captured_launches"]
        untimed = ran - summary["timed_launches"]
        ref_ns, our_ns = counted["kernel_ns"], summary["kernel_ns"]
        gap = (our_ns - ref_ns) / ref_ns if ref_ns else float("inf")
        notes = []
        references = [f"counter {counted['kernels']}"]
        ok = ran == counted["kernels"] and abs(gap) <= TIME_TOLERANCE and untimed == 0
        if expected is not None:
            references.append(f"program {expected}")
            ok = ok and expected == counted["kernels"]
        if program.profiler:
            profiled = profiler_reference(program)
            references.append(f"torch.profiler {profiled['kernels']}")
            ok = ok and profiled["kernels"] == counted["kernels"]
        if ran != counted["kernels"]:
            notes.append(differences(counted, summary))
        if untimed:
            notes.append(f"{untimed} untimed")
        if summary["captured_launches"]:
            notes.append(f"{summary['captured_launches']} recorded into graphs")
        verdict = "ok" if ok else "MISMATCH"
        return (f"| {program.title} | {', '.join(references)} | {ran} | {ref_ns / 1e6:.2f} | "
                f"{our_ns / 1e6:.2f} | {gap * 100:+.2f}% | {verdict}"
                + (f": {'; '.join(n for n in notes if n)}" if notes else "")
                + f" ({time.monotonic() - began:.0f} s) |"), ok
    except Failed as why:
        skipped = str(why).startswith("skipped")
        return f"| {program.title} | | | | | | {why} |", skipped
    except Exception as error:  # a row says why, the table goes on
        return f"| {program.title} | | | | | | the driver failed: {error!r} |", False


def exit_runs(runs, launchwatch, exit_program, work):
    """`runs` runs of each exit mode, under launchwatch run and alone: statuses, hangs, reports."""
    print("\n| exit mode | how | runs | exit statuses | hung | reports written |")
    print("| --- | --- | --- | --- | --- | --- |")

    def one(mode, under, index):
        out = os.path.join(work, f"exit-{mode}-{index}")
        command = [exit_program, mode]
        if under:
            command = [launchwatch, "run", "--out", out, "--torch", "off", "--"] + command
        status, _ = execute(command, timeout=60)
        report = under and os.path.exists(os.path.join(out, "summary.json"))
        shutil.rmtree(out, ignore_errors=True)
        return status, report

    all_ok = True
    for mode in ("helper-launches-at-exit", "queued-at-exit"):
        statuses = {}
        for under in (True, False):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                results = list(pool.map(lambda i: one(mode, under, i), range(runs)))
            counts = collections.Counter("hung" if s is None else s for s, _ in results)
            statuses[under] = counts
            hung = counts.pop("hung", 0)
            reports = sum(1 for _, r in results if r)
            shown = ", ".join(f"{s}: {n}" for s, n in sorted(counts.items(), key=str))
            print(f"| {mode} | {'launchwatch run' if under else 'alone'} | {runs} | {shown} | "
                  f"{hung} | {reports if under else '-'} |")
            all_ok = all_ok and hung == 0
        # `run` may end the program only as it ends alone: no status alone never gives.
        all_ok = all_ok and set(statuses[True]) <= set(statuses[False]) | {0}
    return all_ok


def long_run(seconds, launchwatch, python, work):
    """The long PyTorch run under launchwatch run: memory over time, report, window's kernels."""
    program = [python, os.path.join(PROGRAMS, "long_train.py")]
    out = os.path.join(work, "long-run")
    shutil.rmtree(out, ignore_errors=True)
    began = time.monotonic()
    status, output = execute([launchwatch, "run", "--out", out, "--", *program,
                              "--seconds", str(seconds)], timeout=seconds + 300)
    wall = time.monotonic() - began
    print(f"\nlong run: {seconds} s of training under launchwatch run, {wall:.0f} s in all, "
          f"exit status {status}")
    rss = [(float(t), float(mb)) for t, mb in re.findall(r"rss: (\d+) s (\d+) MB", output)]
    for t, mb in rss:
        print(f"  rss at {t:.0f} s: {mb:.0f} MB")
    summary_path = os.path.join(out, "summary.json")
    if status != 0 or not os.path.exists(summary_path):
        print(f"  no report: {tail(output)}")
        return False
    with open(summary_path) as f:
        summary = json.load(f)
    window = next((s for s in summary["scopes"] if s["name"] == "window"), None)
    sizes = {name: os.path.getsize(os.path.join(out, name)) / 1e6
             for name in ("summary.json", "trace.json", "flame.folded")
             if os.path.exists(os.path.join(out, name))}
    print(f"  report: {summary['launches']} launches, {summary['timed_launches']} timed; files "
          + ", ".join(f"{name} {mb:.1f} MB" for name, mb in sizes.items()))
    status, reference_output = execute([*program, "--profile-window"], timeout=600)
    match = re.search(r"profiler: (\{.*\})", reference_output)
    profiled = json.loads(match.group(1))["kernels"] if status == 0 and match else None
    ours = window["launches"] if window else None
    print(f"  window: launchwatch {ours} kernels, torch.profiler (another process) {profiled}")
    # Bounded: what the run holds after its first tenth grows by less than 10% (and 64 MB) to
    # its end, while the launches grow tenfold.
    bounded = len(rss) >= 3 and rss[-1][1] <= max(rss[1][1] * 1.10, rss[1][1] + 64)
    print(f"  memory {'bounded' if bounded else 'GREW'}: {rss[1][1]:.0f} MB at {rss[1][0]:.0f} s, "
          f"{rss[-1][1]:.0f} MB at the end" if len(rss) >= 3 else "  memory: too few samples")
    return bounded and ours is not None and ours == profiled


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/gpu", help="the build tree (cuda preset)")
    parser.add_argument("--launchwatch", help="default: BUILD/apps/launchwatch/launchwatch")
    parser.add_argument("--counter",
                        help="default: BUILD/bench/runtimes/liblaunchwatch_kernel_counter.so")
    parser.add_argument("--python", default=sys.executable, help="the Python of the programs")
    parser.add_argument("--only", default="",
                        help="comma-separated programs (jax,cupy,triton,numba,torch,cxx); "
                             "'none' for none")
    parser.add_argument("--out", help="where runs write (default: a temporary folder)")
    parser.add_argument("--exit-runs", type=int, default=0)
    parser.add_argument("--exit-program",
                        help="default: BUILD/tests/cuda_bridge/launchwatch_bridge_exit_program")
    parser.add_argument("--long-run", type=float, default=0, metavar="SECONDS")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    launchwatch = args.launchwatch or os.path.join(build, "apps", "launchwatch", "launchwatch")
    counter = args.counter or os.path.join(build, "bench", "runtimes",
                                           "liblaunchwatch_kernel_counter.so")
    work = args.out or tempfile.mkdtemp(prefix="launchwatch-runtimes-")
    os.makedirs(work, exist_ok=True)
    for needed in (launchwatch, counter):
        if not os.path.exists(needed):
            sys.exit(f"runtimes_table: {needed} is not built; build the cuda preset's "
                     "launchwatch, launchwatch_inject, launchwatch_kernel_counter and "
                     "launchwatch_runtime_forms targets first (scripts/device_runtimes.sh does)")
    chosen = programs(build, args.python)
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {p.name for p in chosen} - {"none"}
        if unknown:
            sys.exit(f"runtimes_table: --only names {', '.join(sorted(unknown))}; use "
                     + ", ".join(p.name for p in chosen) + " or none")
        chosen = [p for p in chosen if p.name in names]
    ok = True
    began = time.monotonic()
    if chosen:
        print("| program | reference kernels | launchwatch kernels | reference ms | launchwatch ms "
              "| time | verdict |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for program in chosen:
            row, passed = table_row(program, launchwatch, counter, work)
            print(row, flush=True)
            ok = ok and passed
        print(f"\n{len(chosen)} programs in {time.monotonic() - began:.0f} s")
    if args.exit_runs:
        exit_program = args.exit_program or os.path.join(build, "tests", "cuda_bridge",
                                                         "launchwatch_bridge_exit_program")
        ok = exit_runs(args.exit_runs, launchwatch, exit_program, work) and ok
    if args.long_run:
        ok = long_run(args.long_run, launchwatch, args.python, work) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
