#!/usr/bin/python3
"""Dual-task scheduler vs an even split of the same budget, end to end on a real farm.

Runs a fresh local farm (server + one CPU worker, new SQLite file each time) per job, tunes the
same generated transformer block with `--scheduler gradient` and `--scheduler even`, and
compares the jobs' estimated end-to-end latency (sum over tasks of weight x best latency).

  bench/scheduler_vs_even.py [--budget 200] [--repeats 5] [--rounds 4] [--hidden 384 --heads 6 --seq 197]
Needs a build in build/ (scripts/setup.sh) and Debian's python3-torch and python3-onnx.
"""
import argparse
import math
import statistics
import datetime
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
os.environ.setdefault("GTCO_BINARY_DIR", os.path.join(ROOT, "build"))
os.environ.setdefault("GTCO_SOURCE_DIR", ROOT)

import farm as farm_harness  # noqa: E402


def export_block(path, hidden, heads, mlp, seq):
    import torch
    from make_models import TransformerBlock
    torch.manual_seed(0)
    block = TransformerBlock(hidden=hidden, heads=heads, mlp=mlp).eval()
    torch.onnx.export(block, torch.randn(1, seq, hidden), path, opset_version=17,
                      input_names=["input"], output_names=["output"])


def source_commit():
    """The source tree's HEAD (12 hex digits), '+ changes' when the tree differs from it."""
    import subprocess
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + (" + changes" if dirty else "")


def run_job(model, budget, scheduler, rounds):
    farm = farm_harness.Farm()
    try:
        farm.start_server()
        farm.start_worker()
        result = farm.client("submit", model, "--budget", str(budget), "--scheduler", scheduler,
                             "--rounds", str(rounds), "--watch", "--json", timeout=7200)
        return json.loads(result.stdout)
    finally:
        farm.stop()


def cpu_model():
    """The machine named precisely (bench/machine.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import machine  # noqa: E402
    return machine.describe()


def noise_summary(rows, repeats):
    """Lines saying how often gradient beat even, by how much, and whether that is beyond the
    run-to-run noise (a paired t statistic over the repeats: |t| >= 2 counts as beyond)."""
    latency = {(r[0], r[1]): r[2] * 1e3 for r in rows}
    lines = ["| scheduler | mean est. latency (ms) | stdev across repeats (ms) | min–max (ms) |",
             "|---|---|---|---|"]
    for scheduler in ("gradient", "even"):
        values = [latency[(repeat, scheduler)] for repeat in range(repeats)]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        lines.append(f"| {scheduler} | {statistics.mean(values):.3f} | {spread:.3f} | "
                     f"{min(values):.3f}–{max(values):.3f} |")
    gains = [latency[(repeat, "even")] - latency[(repeat, "gradient")] for repeat in range(repeats)]
    wins = sum(gain > 0 for gain in gains)
    mean_gain = statistics.mean(gains)
    even_mean = statistics.mean(latency[(repeat, "even")] for repeat in range(repeats))
    per_repeat = ", ".join(f"{gain:+.3f}" for gain in gains)
    lines += ["", f"gradient beat even in {wins} of {repeats} repeats; paired gain (even − "
              f"gradient) {mean_gain:.3f} ms on average ({100 * mean_gain / even_mean:.1f} % of "
              f"even's latency), per repeat {per_repeat} ms."]
    if repeats > 1 and statistics.stdev(gains) > 0:
        t = mean_gain / (statistics.stdev(gains) / math.sqrt(repeats))
        verdict = ("beyond the run-to-run noise" if abs(t) >= 2 else
                   "**within the run-to-run noise**: these repeats do not show a difference")
        lines.append(f"Paired t = {t:.2f} over {repeats} repeats: the gain is {verdict}.")
    else:
        lines.append("One repeat: no estimate of the run-to-run noise.")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--seq", type=int, default=197)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "scheduler_vs_even.md"))
    args = parser.parse_args()

    model = os.path.join(tempfile.mkdtemp(prefix="gtco-sched-"), "block.onnx")
    export_block(model, args.hidden, args.heads, 4 * args.hidden, args.seq)
    rows = []
    for repeat in range(args.repeats):
        for scheduler in ("gradient", "even"):
            job = run_job(model, args.budget, scheduler, args.rounds)
            trials = [int(t["trials_done"]) for t in job["tasks"]]
            rows.append((repeat, scheduler, job["estimated_latency_seconds"], trials, job))
            print(f"repeat {repeat} {scheduler:8s} est. latency "
                  f"{job['estimated_latency_seconds'] * 1e3:.3f} ms  trials per task {trials}",
                  flush=True)
    lines = [
        "# Dual-task scheduler vs even split (same budget)",
        "",
        f"- machine: {cpu_model()}",
        f"- date: {datetime.date.today()}",
        f"- commit: {source_commit()} (the source tree's HEAD at the end of the run; the binaries "
        "are build/'s)",
        f"- model: transformer block, seq {args.seq}, hidden {args.hidden}, heads {args.heads}, "
        f"mlp {4 * args.hidden} (generated with torch, opset 17)",
        f"- budget {args.budget} trials per job, {args.rounds} candidates per round, one CPU worker",
        f"- command: `bench/scheduler_vs_even.py --budget {args.budget} --repeats {args.repeats} "
        f"--rounds {args.rounds} --hidden {args.hidden} --heads {args.heads} --seq {args.seq}`",
        "",
        "| repeat | scheduler | est. latency (ms) | trials per task |",
        "|---|---|---|---|",
    ]
    for repeat, scheduler, latency, trials, _ in rows:
        lines.append(f"| {repeat} | {scheduler} | {latency * 1e3:.3f} | {trials} |")
    lines += [""] + noise_summary(rows, args.repeats)
    lines += ["",
              "Tasks (last repeat, gradient):", ""]
    last = [r for r in rows if r[1] == "gradient"][-1][4]
    for task in last["tasks"]:
        lines.append(f"- {task['task_id']}: {task['description']} x{task['weight']}, "
                     f"{task['trials_done']} trials, best {task['best_seconds'] * 1e6:.1f} us")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
