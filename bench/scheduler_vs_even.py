#!/usr/bin/python3
"""Dual-task scheduler vs an even split of the same budget, end to end on a real farm.

Runs a fresh local farm (server + one CPU worker, new SQLite file each time) per job, tunes the
same generated transformer block with `--scheduler gradient` and `--scheduler even`, and
compares the jobs' estimated end-to-end latency (sum over tasks of weight x best latency).

  bench/scheduler_vs_even.py [--budget 240] [--repeats 2] [--hidden 384 --heads 6 --seq 197]
Needs a build in build/ (scripts/setup.sh) and Debian's python3-torch.
"""
import argparse
import datetime
import json
import os
import platform
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
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=240)
    parser.add_argument("--repeats", type=int, default=2)
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
        f"- machine: {cpu_model()}, {os.cpu_count()} cores",
        f"- date: {datetime.date.today()}",
        f"- model: transformer block, seq {args.seq}, hidden {args.hidden}, heads {args.heads}, "
        f"mlp {4 * args.hidden} (generated with torch, opset 17)",
        f"- budget {args.budget} trials per job, {args.rounds} candidates per round, one CPU worker",
        f"- command: `bench/scheduler_vs_even.py --budget {args.budget} --repeats {args.repeats} "
        f"--hidden {args.hidden} --heads {args.heads} --seq {args.seq}`",
        "",
        "| repeat | scheduler | est. latency (ms) | trials per task |",
        "|---|---|---|---|",
    ]
    for repeat, scheduler, latency, trials, _ in rows:
        lines.append(f"| {repeat} | {scheduler} | {latency * 1e3:.3f} | {trials} |")
    wins = 0
    for repeat in range(args.repeats):
        gradient = [r for r in rows if r[0] == repeat and r[1] == "gradient"][0][2]
        even = [r for r in rows if r[0] == repeat and r[1] == "even"][0][2]
        wins += gradient < even
    lines += ["", f"gradient beat even in {wins} of {args.repeats} repeats.", "",
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
