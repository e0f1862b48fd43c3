#!/usr/bin/python3
"""Server throughput and server CPU per trial with 1, 4, 16 and 64 workers on loopback.

One run, one gtco-server (--no-auth, a throwaway SQLite database in a temporary folder):

1. Calibration: one real CPU gtco-worker (--threads 1) tunes the model for --calibrate-seconds;
   its measured trials per second give the pace (seconds per trial) of a real worker here.
2. For each worker count N: --jobs fresh jobs of the model (batch 1, 2, ... through --shape, so
   that the schedule spaces outlast the step: one small model's space runs out within seconds at
   64 workers), then `scale_gen` runs N simulated workers
   for --seconds, each pacing itself at that real worker's rate (lease one candidate, wait the
   pace, report a synthetic verified result). Offered trials = N x seconds / pace; served =
   results the server stored. The server's CPU time (utime + stime from /proc) over the step,
   divided by the trials served, is its CPU per trial: proposal, lowering, lease, result and
   database write included.

  bench/scale/run_scale.py [--workers 1,4,16,64] [--seconds 30] [--calibrate-seconds 40]
                           [--model tests/data/patch_vit.onnx] [--jobs 8]
                           [--shape-template 'input={batch}x4x192'] [--out bench/results/scale.md]
Needs a build in build/ (scripts/setup.sh --tests builds scale_gen).
"""
import argparse
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
SERVER = os.path.join(BUILD, "server", "gtco-server")
WORKER = os.path.join(BUILD, "worker", "gtco-worker")
CLIENT = os.path.join(BUILD, "client", "gtco-client")
SCALE_GEN = os.path.join(BUILD, "bench", "scale", "scale_gen")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of process `pid` in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_model():
    """The machine named precisely (bench/machine.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import machine  # noqa: E402
    return machine.describe()


class Farm:
    """A gtco-server with a database of its own (a model's tasks tuned once are answered from
    the database, so each phase starts empty)."""

    def __init__(self, work, name):
        self.address = f"127.0.0.1:{free_port()}"
        self.log = open(os.path.join(work, f"{name}.server.log"), "w")
        self.server = subprocess.Popen(
            [SERVER, "--listen", self.address, "--db", os.path.join(work, f"{name}.db"),
             "--no-auth"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while self.client("health", check=False).returncode != 0:
            if time.time() > deadline or self.server.poll() is not None:
                raise RuntimeError("gtco-server did not come up; see server.log")
            time.sleep(0.2)

    def client(self, *args, check=True):
        return subprocess.run([CLIENT, "--server", self.address, *args], capture_output=True,
                              text=True, check=check, timeout=600)

    def submit(self, model, budget, shape=None):
        extra = ["--shape", shape] if shape else []
        reply = json.loads(self.client("submit", model, "--budget", str(budget), *extra,
                                       "--json").stdout)
        return reply["job_id"]

    def trials_done(self, job):
        return int(json.loads(self.client("status", job, "--json").stdout)["trials_done"])

    def cancel(self, job):
        self.client("cancel", job, check=False)

    def stop(self):
        self.server.terminate()
        self.server.wait(timeout=30)
        self.log.close()


def shapes(args, jobs):
    """The --shape of each of `jobs` jobs: the template with batch 1, 2, ... (None: no shape)."""
    if not args.shape_template:
        return [None] * jobs
    return [args.shape_template.format(batch=batch) for batch in range(1, jobs + 1)]


def calibrate(farm, args, seconds, work):
    """Seconds per trial of one real CPU worker on the model, measured after a 10 s warm-up."""
    model = args.model
    job = farm.submit(model, 1_000_000, shapes(args, 1)[0])
    with open(os.path.join(work, "worker.log"), "w") as log:
        worker = subprocess.Popen([WORKER, "--server", farm.address, "--target", "cpu",
                                   "--threads", "1"], stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(10)
            start, begin = farm.trials_done(job), time.time()
            time.sleep(seconds)
            trials, elapsed = farm.trials_done(job) - start, time.time() - begin
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    farm.cancel(job)
    if trials <= 0:
        raise RuntimeError("the real worker measured no trial; see worker.log")
    return elapsed / trials, trials, elapsed


def step(farm, args, workers, seconds, pace):
    """One step on a fresh farm: --jobs jobs of the model (one shape each, so that the schedule
    spaces outlast the step), `workers` simulated workers for `seconds`."""
    jobs = [farm.submit(args.model, 1_000_000, shape) for shape in shapes(args, args.jobs)]
    cpu_before = cpu_seconds(farm.server.pid)
    result = subprocess.run([SCALE_GEN, "--server", farm.address, "--workers", str(workers),
                             "--seconds", str(seconds), "--seconds-per-trial", f"{pace:.6f}"],
                            capture_output=True, text=True, timeout=seconds + 300)
    cpu = cpu_seconds(farm.server.pid) - cpu_before
    for job in jobs:
        farm.cancel(job)
    if not result.stdout.strip():
        raise RuntimeError(f"scale_gen printed nothing: {result.stderr}")
    row = json.loads(result.stdout)
    row["server_cpu_seconds"] = cpu
    row["exit_code"] = result.returncode
    return row


def report(args, pace, calibration, rows):
    trials, elapsed = calibration
    lines = [
        "# Server scaling: simulated workers at a real worker's pace",
        "",
        f"- machine: {cpu_model()} (server, scale_gen and, for the "
        "calibration, the real worker all share them)",
        f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
        "- commit: " + subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
        f"- command: `bench/scale/run_scale.py --workers {args.workers} --seconds {args.seconds} "
        f"--calibrate-seconds {args.calibrate_seconds} --model {args.model}"
        + (f" --jobs {args.jobs} --shape-template '{args.shape_template}'"
           if args.shape_template else "") + "`",
        f"- pace: one real CPU worker (`gtco-worker --target cpu --threads 1`) measured {trials} "
        f"trials in {elapsed:.1f} s on this model: {pace * 1e3:.1f} ms per trial, "
        f"{1 / pace:.2f} trials/s; every simulated worker paces itself at that rate",
        "- server: `gtco-server --no-auth`, a fresh SQLite database in a temporary folder for "
        "each step; CPU from /proc (utime + stime) over the step",
        "",
        "| workers | offered trials | served (stored) | served / offered | trials/s | server CPU s "
        "| server CPU per trial | Lease p50 / p99 ms | empty leases | RPC errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    verdicts = []
    for row in rows:
        served = row["stored"]
        share = served / row["offered_trials"] if row["offered_trials"] else 0
        per_trial_ms = 1e3 * row["server_cpu_seconds"] / served if served else float("inf")
        lines.append(
            f"| {row['workers']} | {row['offered_trials']:.0f} | {served} | {100 * share:.1f} % "
            f"| {served / row['wall_seconds']:.1f} | {row['server_cpu_seconds']:.2f} "
            f"| {per_trial_ms:.2f} ms | {row['lease_p50_ms']:.1f} / {row['lease_p99_ms']:.1f} "
            f"| {row['empty_leases']} | {row['rpc_errors']} |")
        verdicts.append((row["workers"], share >= 0.95, per_trial_ms <= 1.0))
    lines += ["", "Empty leases: Lease calls that waited their 1 s and got nothing (the schedule "
              "spaces ran out, or the preparer fell behind).",
              "", "Target: the server serves ≥ 95 % of the offered trials and spends ≤ 1 ms of CPU "
              "per trial.", ""]
    for workers, served_ok, cpu_ok in verdicts:
        lines.append(f"- {workers} workers: served {'≥' if served_ok else '**<**'} 95 %, "
                     f"CPU per trial {'≤' if cpu_ok else '**>**'} 1 ms")
    errors = [row["first_error"] for row in rows if row["first_error"]]
    if errors:
        lines += ["", "First RPC error seen: " + errors[0]]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,4,16,64")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--calibrate-seconds", type=int, default=40)
    parser.add_argument("--model", default="tests/data/patch_vit.onnx")
    parser.add_argument("--jobs", type=int, default=8,
                        help="jobs per step, one per batch size, so the spaces last the step")
    parser.add_argument("--shape-template", default="input={batch}x4x192",
                        help="--shape of each job ({batch}: 1, 2, ...; empty: no --shape)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "scale.md"))
    args = parser.parse_args()
    for binary in (SERVER, WORKER, CLIENT, SCALE_GEN):
        if not os.access(binary, os.X_OK):
            sys.exit(f"run_scale.py: {binary} is missing: build with scripts/setup.sh --tests")
    os.chdir(ROOT)
    work = tempfile.mkdtemp(prefix="gtco-scale-")
    farm = Farm(work, "calibration")
    try:
        pace, trials, elapsed = calibrate(farm, args, args.calibrate_seconds, work)
    finally:
        farm.stop()
    print(f"real worker: {trials} trials in {elapsed:.1f} s = {pace * 1e3:.1f} ms per trial",
          flush=True)
    rows = []
    for workers in [int(count) for count in args.workers.split(",")]:
        farm = Farm(work, f"workers{workers}")
        try:
            row = step(farm, args, workers, args.seconds, pace)
        finally:
            farm.stop()
        print(json.dumps(row), flush=True)
        rows.append(row)
    text = report(args, pace, (trials, elapsed), rows)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as out:
        out.write(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
