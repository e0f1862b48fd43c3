#!/usr/bin/python3
"""The model zoo on a local farm: each model bench/zoo/export_models.py exports is submitted with a
small tuning budget, exported as an artifact, run by gtco-run on the model's saved inputs and
checked against ONNX Runtime's saved outputs, then timed beside ONNX Runtime. Writes
bench/results/zoo.md: per model accepted (with the ops that run as fallback steps, if any) /
refused at submit (the client's error) / wrong (outputs off) / failed, the worst output
difference, GTCO and ONNX Runtime milliseconds and their ratio.

    PYTHONPATH=.deps/transformers:.deps/python /usr/bin/python3 bench/zoo/run_zoo.py
        [--models a,b,c | --ci] [--trials N] [--runs N] [--rounds N]
        [--models-dir DIR] [--out bench/results/zoo.md]

One farm (gtco-server on SQLite in a scratch folder, one CPU worker) tunes every model, one job
at a time, --trials trials per model (the whole job's budget); the farm is stopped before the
timings, so that no server retraining its cost model competes with them. Timing follows
bench/e2e/run_exported.py: gtco-run and ONNX Runtime (ORT_ENABLE_ALL), 2 threads each, each in
fresh processes, after an untimed round that sizes them --rounds rounds in which the two take
turns, each timing the same number of runs after warm-up (at least runs/rounds, and at least
half a second of the faster system's runs); a system's time is the median of its rounds'
medians. Exports already in --models-dir
(the default, /tmp/gtco-zoo-models, outlives the run) are reused; missing ones are exported
first, one model at a time. The scratch folder (farm database, logs, artifacts) is removed at
exit unless GTCO_KEEP_SCRATCH=1. --ci runs the CI subset with tiny budgets into
bench/results/zoo_ci.md (a couple of minutes). Exit status 1 when a model is wrong, failed or
did not export (a refusal at submit is a result, not a failure).
"""
import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import export_models  # noqa: E402
from run_e2e import BUILD, Farm  # noqa: E402
from run_exported import GTCO_RUN, ORT_RUNNER, ROOT, commit, cpu_name, scratch_dir  # noqa: E402

CLIENT = os.path.join(BUILD, "client", "gtco-client")
TOLERANCE = 1e-3  # max |GTCO - ORT| / max |ORT|, per output, above which a model is "wrong"
EXIT_REFUSED = 3  # gtco-client's exit code when the server refuses
MIN_ROUND_SECONDS = 0.5  # the least timed run time of a round (see time_side_by_side)


def gtco_client(address, *args, timeout=None):
    """gtco-client against the farm at `address`: the CompletedProcess (its exit code says a
    refusal, 3, from a failed job, 1)."""
    return subprocess.run([CLIENT, "--server", address, *args], capture_output=True, text=True,
                          timeout=timeout)


def one_line(text, limit=400):
    text = " ".join(text.replace("gtco-client: ", "").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def exit_text(done):
    """Why a process failed: its stderr, or the signal that killed it."""
    if done.returncode < 0:
        try:
            died = f"died with {signal.Signals(-done.returncode).name}"
        except ValueError:
            died = f"died with signal {-done.returncode}"
        return one_line(f"{died} {done.stderr}")
    return one_line(done.stderr or f"exit {done.returncode}")


def fallback_ops(artifact):
    """The op types the artifact runs as fallback steps (ops with no kernel family), from the
    `fallback_steps` of `gtco-run ARTIFACT --describe --json`: {op: count}."""
    done = subprocess.run([GTCO_RUN, artifact, "--describe", "--json"], capture_output=True,
                          text=True, check=True)
    found = {}
    for step in json.loads(done.stdout).get("fallback_steps", []):
        found[step["op_type"]] = found.get(step["op_type"], 0) + 1
    return found


def refused_ops(message, record):
    """The model's op types that the refusal message names (its capitalized words that are op
    types of the model, which export_models.py recorded)."""
    ops = set(record.get("ops", {}))
    return sorted({word for word in re.findall(r"[A-Z][A-Za-z]+", message) if word in ops})


def verify(artifact, record, npz, io_dir):
    """Runs the artifact once (gtco-run, 2 threads) on the saved inputs and compares each output
    with ONNX Runtime's saved one; returns (worst max |diff| / max |ORT|, gtco-run arguments
    naming the inputs, error or None)."""
    inputs, expected = export_models.load_npz(npz)
    done = subprocess.run([GTCO_RUN, artifact, "--describe", "--json"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return float("inf"), [], "gtco-run --describe: " + exit_text(done)
    described = json.loads(done.stdout)
    os.makedirs(os.path.join(io_dir, "gtco"), exist_ok=True)
    args = []
    ordered = list(inputs.values())
    for n, spec in enumerate(described["inputs"]):
        value = inputs.get(spec["name"], ordered[n] if n < len(ordered) else None)
        if value is None:
            return float("inf"), [], f"no saved input for {spec['name']}"
        path = os.path.join(io_dir, f"gtco_in{n}.npy")
        np.save(path, value)
        args += ["--input", f"{spec['name']}={path}"]
    done = subprocess.run([GTCO_RUN, artifact, *args, "--threads", "2", "--output-dir",
                           os.path.join(io_dir, "gtco"), "--json"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return float("inf"), args, "gtco-run: " + exit_text(done)
    written = json.loads(done.stdout)["outputs_written"]
    wanted = list(expected.items())
    worst = 0.0
    for n, output in enumerate(written):
        want = expected.get(output["name"], wanted[n][1] if n < len(wanted) else None)
        if want is None:
            return float("inf"), args, f"output {output['name']} has no saved ORT output"
        got = np.load(output["path"])
        if got.shape != want.shape:
            return float("inf"), args, f"output {output['name']} is {list(got.shape)}, ORT's " \
                                       f"{list(want.shape)}"
        scale = max(float(np.max(np.abs(want))), 1e-30)
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - want))) / scale)
    return worst, args, None


def time_side_by_side(onnx_path, artifact, gtco_args, inputs, io_dir, runs, rounds):
    """bench/e2e/run_exported.py's protocol on the saved inputs: `rounds` fresh gtco-run and ONNX
    Runtime processes in turn, 2 threads each, runs/rounds timed runs after warm-up each; returns
    (GTCO seconds, ORT seconds), each the median of its rounds' medians."""
    ort_dir = os.path.join(io_dir, "ort")
    os.makedirs(ort_dir, exist_ok=True)
    for n, value in enumerate(inputs.values()):  # ORT_RUNNER reads {n}.npy in the model's order
        np.save(os.path.join(io_dir, f"{n}.npy"), value)
    def one_round(count):
        gtco_seconds = json.loads(subprocess.run(
            [GTCO_RUN, artifact, *gtco_args, "--threads", "2", "--bench", str(count),
             "--json"], capture_output=True, text=True, check=True).stdout)["median_seconds"]
        ort_seconds = json.loads(subprocess.run(
            [sys.executable, "-c", ORT_RUNNER, onnx_path, io_dir, str(count), ort_dir],
            capture_output=True, text=True, check=True).stdout)["median_seconds"]
        return gtco_seconds, ort_seconds

    # A first, untimed round sizes the rounds: each times at least runs/rounds runs and at least
    # MIN_ROUND_SECONDS of the faster system's runs (the same count for both), so a 2 ms model's
    # round is not a dozen milliseconds that one stall of the VM decides.
    per_round = max(1, -(-runs // rounds))
    fastest = min(one_round(per_round))
    per_round = max(per_round, int(MIN_ROUND_SECONDS / max(fastest, 1e-6)) + 1)
    gtco, ort = [], []
    for _ in range(rounds):
        gtco_seconds, ort_seconds = one_round(per_round)
        gtco.append(gtco_seconds)
        ort.append(ort_seconds)
    return sorted(gtco)[len(gtco) // 2], sorted(ort)[len(ort) // 2], per_round


def tune_and_export(farm, name, onnx_path, artifact, trials, timeout, log_dir):
    """Submits the model (budget `trials`), follows the job, exports the artifact. Returns a dict:
    status "refused" / "failed" with "error", or "exported" with trials, tuning seconds, the
    export's summary and its verification / fallback lines."""
    # The farm needs a trial per task at least: the budget is raised to the task count where
    # that is larger (a model the query refuses goes on to submit, whose error is the record).
    queried = gtco_client(farm.address, "query", "--model", onnx_path, "--target", "cpu",
                          "--json", timeout=600)
    tasks = len(json.loads(queried.stdout).get("records", [])) if queried.returncode == 0 else 0
    budget = max(trials, tasks)
    start = time.time()
    submitted = gtco_client(farm.address, "submit", onnx_path, "--target", "cpu", "--budget",
                            str(budget), "--team", "zoo", "--json", timeout=600)
    if submitted.returncode != 0:
        status = "refused" if submitted.returncode == EXIT_REFUSED else "failed"
        return {"status": status, "error": one_line(submitted.stderr or submitted.stdout)}
    job_id = json.loads(submitted.stdout)["job_id"]
    try:
        watched = gtco_client(farm.address, "watch", job_id, "--json", timeout=timeout)
    except subprocess.TimeoutExpired:
        gtco_client(farm.address, "cancel", job_id, timeout=60)
        return {"status": "failed", "error": f"tuning timed out after {timeout} s (cancelled)"}
    seconds = time.time() - start
    try:
        job = json.loads(watched.stdout)
    except ValueError:
        job = {}
    if watched.returncode != 0 or job.get("state") != "done":
        return {"status": "failed", "error": "job " + one_line(
            job.get("error") or watched.stderr or f"ended {job.get('state')}")}
    exported = gtco_client(farm.address, "export", onnx_path, "-o", artifact, "--target", "cpu",
                           "--json", timeout=1800)
    with open(os.path.join(log_dir, f"{name}.export.log"), "w") as f:
        f.write(exported.stderr + exported.stdout)
    if exported.returncode != 0:
        error = one_line(exported.stderr or exported.stdout)
        # The export checks the whole artifact against a reference: a failed check is "wrong".
        status = "wrong" if re.search(r"verif", error, re.IGNORECASE) else "failed"
        return {"status": status, "error": "export: " + error, "trials":
                int(job.get("trials_done", 0)), "budget": budget, "tasks": tasks,
                "tuning_seconds": seconds}
    try:
        summary = json.loads(exported.stdout)
    except ValueError:
        summary = {}
    return {"status": "exported", "trials": int(job.get("trials_done", 0)), "budget": budget,
            "tasks": len(job.get("tasks", [])) or tasks, "tuning_seconds": seconds,
            "kernels": summary.get("kernels"), "tuned": summary.get("tuned"),
            "export_check": export_check(summary, exported.stderr),
            "fallback_share": fallback_share(summary)}


def export_check(summary, stderr):
    """What the export's own whole-model check said: "passed 1.2e-07" (the worst output's
    relative error), "skipped: why", or, from an export without that field, its progress lines
    that mention verification; "" when there is none."""
    check = summary.get("verification")
    if isinstance(check, dict) and check.get("status"):
        errors = [o.get("max_error", 0.0) for o in check.get("outputs", []) if isinstance(o, dict)]
        if check["status"] == "passed" and errors:
            return f"passed {max(errors):.1e}"
        return check["status"] + (f": {check['reason']}" if check.get("reason") else "")
    lines = [line for line in stderr.splitlines() if re.search(r"verif", line, re.IGNORECASE)]
    return one_line(" ".join(lines), 200)


def fallback_share(summary):
    """The fallback steps' share of the artifact's run time in the export's check (its summary's
    "fallbacks" seconds over "run_seconds"), or None when it does not say."""
    fallbacks, run = summary.get("fallbacks"), summary.get("run_seconds")
    if not fallbacks or not run:
        return None
    return sum(float(f.get("seconds", 0) or 0) for f in fallbacks) / float(run)


def machine():
    """The CPU named precisely (bench/machine.py)."""
    return cpu_name()


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(rows, args, command, started, built_from):
    timed = [r for r in rows if r.get("gtco_seconds") and r.get("ort_seconds")]
    ratios = [(r["ort_seconds"] / r["gtco_seconds"], r["name"]) for r in timed]
    count = {s: sum(1 for r in rows if r["status"] == s)
             for s in ("accepted", "refused", "wrong", "failed", "not exported")}
    with_fallback = sum(1 for r in rows if r["status"] == "accepted" and r.get("fallback"))
    at_least = sum(1 for ratio, _ in ratios if ratio >= 1.0)
    lowest = min(ratios) if ratios else None
    summary = (
        f"**Summary**: {len(rows)} models: {count['accepted']} accepted"
        f" ({with_fallback} of them with fallback steps), {count['refused']} refused, "
        f"{count['wrong']} wrong, {count['failed']} failed, {count['not exported']} not "
        f"exported; GTCO at >= 1.0x ONNX Runtime on {at_least} of {len(ratios)} timed"
        + (f" ({100 * at_least / len(ratios):.0f} %)" if ratios else "")
        + (f"; lowest ratio {lowest[0]:.2f}x ({lowest[1]})." if lowest else "."))
    lines = [
        "# Model zoo: GTCO artifacts vs ONNX Runtime",
        "",
        f"Machine: {machine()}. Date: {started:%Y-%m-%d %H:%M} UTC. Commit: {built_from} (at the "
        "start of the run; the binaries are the build's).",
        f"Command: `{command}` ({args.trials} trials per model, {args.runs} timed runs in "
        f"{args.rounds} rounds).",
        "",
        "Each model: exported by bench/zoo/export_models.py (torch.onnx.export, opset 17, batch 1, "
        "eval mode, random weights; ONNX Runtime's fp32 CPU outputs on saved random inputs kept "
        "as the reference), submitted to one local farm (one CPU worker) with a budget of "
        f"{args.trials} trials for the whole model (raised to its task count where that is "
        "larger: the farm tunes each task at least once), exported for this host, run once by "
        "gtco-run "
        "on the saved inputs (\"wrong\": some output's max |GTCO - ORT| / max |ORT| above "
        f"{TOLERANCE:g}), then, with the farm stopped, timed beside ONNX Runtime (ORT_ENABLE_ALL): "
        f"2 threads each, after an untimed sizing round {args.rounds} alternating rounds of "
        f"fresh processes, each timing the same number of runs after warm-up (\"runs\": at least "
        f"{max(1, -(-args.runs // args.rounds))} and at least {MIN_ROUND_SECONDS:g} s of the "
        "faster system's runs), a system's time the median of its rounds' medians. Speed = ONNX "
        "Runtime ms / GTCO ms (above 1: GTCO faster). "
        "\"Fallback steps\": op types the artifact runs without a kernel family, not tuned "
        "(`gtco-run --describe`; their share of the run time as the export's check measured "
        "it), empty when the runtime reports nothing about them. \"Export check\": the "
        "export's own check of the whole artifact against a reference interpreter of the ONNX "
        "graph (its worst output's relative error). A tuning budget this "
        "small leaves most tasks at or near their default schedule: the times are a floor "
        "check, not GTCO's tuned speed.",
        "",
        summary,
        "",
        "| model | family | params | status | fallback steps | error | max rel. diff | "
        "export check | GTCO ms | ORT ms | speed | runs | tasks / trials | tuning |",
        "|---|---|---:|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        fallback = r.get("fallback")
        fallback_text = "" if fallback is None else (
            ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(fallback.items()))
            or "none")
        if fallback and r.get("fallback_share") is not None:
            fallback_text += f" ({100 * r['fallback_share']:.0f} % of the run)"
        diff = r.get("rel_diff")
        g, o = r.get("gtco_seconds"), r.get("ort_seconds")
        lines.append(
            f"| {r['name']} | {r['family']} | "
            + (f"{r['parameters'] / 1e6:.1f} M" if r.get("parameters") else "")
            + f" | {r['status']} | {cell(fallback_text)} | {cell(r.get('error', ''))} | "
            + ("" if diff is None else "inf" if diff == float("inf") else f"{diff:.1e}")
            + f" | {cell(r.get('export_check', ''))}"
            + f" | {'' if not g else f'{g * 1e3:.2f}'} | {'' if not o else f'{o * 1e3:.2f}'} | "
            + (f"{o / g:.2f}x" if g and o else "")
            + f" | {r.get('runs_per_round', '')}"
            + " | " + (f"{r['tasks']} / {r['trials']}" if "trials" in r else "")
            + " | " + (f"{r['tuning_seconds']:.0f} s" if "tuning_seconds" in r else "") + " |")
    refusals = {}
    for r in rows:
        for op in r.get("refused_ops", []):
            refusals.setdefault(op, []).append(r["name"])
    if refusals:
        lines += ["", "Op types named by the refusals (models):", ""]
        for op, names in sorted(refusals.items(), key=lambda item: (-len(item[1]), item[0])):
            lines.append(f"- {op}: {len(names)} ({', '.join(names)})")
    return "\n".join(lines) + "\n", summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated (default: the whole zoo; "
                                                     "export_models.py --list)")
    parser.add_argument("--ci", action="store_true",
                        help="the CI subset (" + ",".join(export_models.CI_MODELS) + "), with "
                             "tiny defaults: --trials 16 --runs 10 --rounds 2")
    parser.add_argument("--trials", type=int, help="tuning budget per model (default 64)")
    parser.add_argument("--runs", type=int, help="timed runs per system (default 30)")
    parser.add_argument("--rounds", type=int, help="alternating rounds per system (default 5)")
    parser.add_argument("--models-dir", default="/tmp/gtco-zoo-models",
                        help="exported models (.onnx, .npz, .json); missing ones are exported")
    parser.add_argument("--tune-timeout", type=int, default=1800,
                        help="seconds a model's tuning job may take before it is cancelled")
    parser.add_argument("--out", help="the report (default bench/results/zoo.md; with --ci "
                                          "bench/results/zoo_ci.md)")
    args = parser.parse_args()
    if args.out is None:
        args.out = os.path.join(ROOT, "bench", "results", "zoo_ci.md" if args.ci else "zoo.md")
    for key, full, ci in (("trials", 64, 16), ("runs", 30, 10), ("rounds", 5, 2)):
        if getattr(args, key) is None:
            setattr(args, key, ci if args.ci else full)
    names = export_models.select(args.models, args.ci)
    for binary in (CLIENT, GTCO_RUN, os.path.join(BUILD, "server", "gtco-server"),
                   os.path.join(BUILD, "worker", "gtco-worker")):
        if not os.path.exists(binary):
            parser.error(f"{binary} is missing: build GTCO first (scripts/setup.sh)")
    started = datetime.datetime.utcnow()
    built_from = commit()
    command = "bench/zoo/run_zoo.py " + " ".join(sys.argv[1:])
    os.makedirs(args.models_dir, exist_ok=True)
    # ONNX Runtime (.deps/python) for the timing processes, as for the exports.
    os.environ["PYTHONPATH"] = export_models.child_env()["PYTHONPATH"]
    work = scratch_dir("gtco-zoo-")

    def log(text):
        print(text, flush=True)

    # Exports first (one model at a time, a process each), then the farm.
    records = [export_models.ensure(name, args.models_dir, log=log) for name in names]
    rows = []
    for record in records:
        row = {"name": record["name"], "family": record["family"],
               "parameters": record.get("parameters")}
        if record["status"] != "ok":
            row.update(status="not exported", error=record.get("reason", ""))
        rows.append(row)
    farms = [Farm(work, "farm")]
    try:
        for row, record in zip(rows, records):
            if "status" in row:
                continue
            name = row["name"]
            onnx_path = os.path.join(args.models_dir, f"{name}.onnx")
            artifact = os.path.join(work, f"{name}.gtco")
            try:
                row.update(tune_and_export(farms[-1], name, onnx_path, artifact, args.trials,
                                           args.tune_timeout, work))
            except (subprocess.SubprocessError, ValueError, KeyError) as e:
                row.update(status="failed", error=one_line(f"{type(e).__name__}: {e}"))
            dead = [p for p in (farms[-1].server, farms[-1].worker) if p.poll() is not None]
            if dead:
                # The farm died on this model: say so, and the next model gets a fresh farm.
                row["status"], row["error"] = "failed", one_line(
                    f"{row.get('error', '')} (the farm's "
                    f"{'server' if farms[-1].server in dead else 'worker'} exited "
                    f"{dead[0].returncode} on this model)")
                farms[-1].stop()
                farms.append(Farm(work, f"farm{len(farms)}"))
            if row["status"] == "refused":
                row["refused_ops"] = refused_ops(row["error"], record)
            if row["status"] != "exported":
                log(f"{name}: {row['status']}: {row['error']}")
                continue
            row["artifact"] = artifact
            try:
                row["fallback"] = fallback_ops(artifact)
                diff, gtco_args, error = verify(artifact, record,
                                                os.path.join(args.models_dir, f"{name}.npz"),
                                                os.path.join(work, f"{name}.io"))
            except (subprocess.SubprocessError, ValueError, KeyError, OSError) as e:
                row.setdefault("fallback", None)
                diff, gtco_args, error = float("inf"), [], one_line(f"{type(e).__name__}: {e}")
            row["rel_diff"], row["gtco_args"] = diff, gtco_args
            if error:
                row.update(status="failed", error=error)
            else:
                row["status"] = "accepted" if diff <= TOLERANCE else "wrong"
            log(f"{name}: {row['status']}, {row['tasks']} tasks, {row['trials']} trials in "
                f"{row['tuning_seconds']:.0f} s, max rel. diff {diff:.1e}"
                + (f", fallback {row['fallback']}" if row["fallback"] else "")
                + (f" ({error})" if error else ""))
    finally:
        farms[-1].stop()
    # Timings, with the farm stopped.
    for row in rows:
        if row["status"] not in ("accepted", "wrong") or "artifact" not in row:
            continue
        name = row["name"]
        inputs, _ = export_models.load_npz(os.path.join(args.models_dir, f"{name}.npz"))
        try:
            row["gtco_seconds"], row["ort_seconds"], row["runs_per_round"] = time_side_by_side(
                os.path.join(args.models_dir, f"{name}.onnx"), row["artifact"], row["gtco_args"],
                inputs, os.path.join(work, f"{name}.io"), args.runs, args.rounds)
        except subprocess.CalledProcessError as e:
            row["error"] = "timing: " + exit_text(e)
            log(f"{name}: {row['error']}")
            continue
        log(f"{name}: GTCO {row['gtco_seconds'] * 1e3:.2f} ms, ORT "
            f"{row['ort_seconds'] * 1e3:.2f} ms, {row['ort_seconds'] / row['gtco_seconds']:.2f}x")
    text, summary = markdown(rows, args, command, started, built_from)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        out.write(text)
    log(summary)
    log(f"wrote {args.out}")
    # Refusals are the farm's answer, not a fault; anything else that went wrong is.
    broken = [r["name"] for r in rows if r["status"] in ("wrong", "failed", "not exported")
              or r.get("error", "").startswith("timing:")]
    if broken:
        log(f"wrong, failed or not exported: {', '.join(broken)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
