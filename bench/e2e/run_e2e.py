#!/usr/bin/python3
"""End to end: real models exported from PyTorch, tuned on a local farm, exported as artifacts and
run with gtco-run beside ONNX Runtime, OpenVINO and TVM MetaSchedule (2 threads each, batch 1,
each in its own process, median of N runs after warm-up, peak RSS, outputs compared). Writes
bench/results/e2e.md.

    PYTHONPATH=.deps/python bench/e2e/run_e2e.py [--models resnet50,vit_b_16,bert_base,minilm_l6]
        [--trials-per-task 8] [--runs 50] [--rounds 5] [--ablation] [--ablation-copies]
        [--bert-python /path/to/venv/bin/python]
        [--tvm-python .deps/tvm/bin/python | --no-tvm] [--tvm-max-tasks N]
        [--precision MODEL=bf16|bf16x3,...]
        [--openvino-python .deps/openvino/bin/python | --no-openvino]

OpenVINO (bench/e2e/install_openvino.sh makes its venv, .deps/openvino, the default
--openvino-python when it is there) runs in the same alternating rounds at f32
(INFERENCE_PRECISION_HINT=f32) and at its default precision (bf16 where the CPU has AVX512-BF16
or AMX), bench/e2e/run_exported.py's OPENVINO_RUNNER.

--precision tunes and exports the named models with gtco-client's --precision (the others in f32;
ONNX Runtime and TVM always run the fp32 model), so that one run holds, say, ResNet-50 in f32
beside ViT-B/16 and BERT-base under bf16x3 on an AMX host (the precision column says which).

minilm_l6 is a BERT of all-MiniLM-L6-v2's shape (6 layers, hidden 384, 12 heads, seq 128; random
weights from its config, no download), the encoder sentence-transformers users run by default.

BERT needs `transformers`: scripts/setup.sh --tests pins it into .deps/transformers, which the
BERT export uses (or a venv with --system-site-packages and pip install "transformers<4.40";
--bert-python names its interpreter). TVM (apache-tvm 0.27.0.post1) lives in
its own venv, bench/e2e/install_tvm.sh makes it (.deps/tvm, the default --tvm-python when it is
there). bench/e2e/tvm_runner.py, under that interpreter and in its own process, imports the same
ONNX file with TVM's Relax frontend, tunes it with MetaSchedule at the same trials per task as
GTCO (times the tasks TVM extracts, which are not GTCO's), builds it for this host (llvm,
-mcpu of the host, 2 cores), and times it in a fresh process on the inputs ONNX Runtime ran;
its outputs are compared with ONNX Runtime's. A model TVM cannot import or build gets "failed"
in its columns, with the reason in {work}/{model}.tvm.log ({work}, the farms' scratch folder, is
removed at exit unless GTCO_KEEP_SCRATCH=1). Last, where each model's time goes
against the machine's FMA peak and bandwidth (bench/e2e/where_time_goes.py).
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import where_time_goes  # noqa: E402
from run_exported import (DEFAULT_OPENVINO, ROOT, commit, compare, cpu_name,  # noqa: E402
                          scratch_dir)

# GTCO_BENCH_BUILD: a build folder other than build/ (e.g. a copy of its binaries, so that a long
# run is not disturbed by rebuilding build/).
BUILD = os.environ.get("GTCO_BENCH_BUILD") or os.path.join(ROOT, "build")
EXPORT_SCRIPT = r"""
import sys, torch
name, path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if name.startswith("bert") or name == "minilm_l6":
    from transformers import BertConfig, BertModel
    if name == "bert_base":
        config = BertConfig()
    elif name == "minilm_l6":  # all-MiniLM-L6-v2's shape (sentence-transformers' default encoder)
        config = BertConfig(num_hidden_layers=6, hidden_size=384, num_attention_heads=12,
                            intermediate_size=1536)
    else:
        config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                            intermediate_size=512)
    model = BertModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    torch.onnx.export(model, (ids, mask), path, opset_version=17,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"])
else:
    import torchvision
    model = getattr(torchvision.models, name)().eval()
    if hasattr(model, "heads"):  # torchvision zero-initializes ViT's head: outputs would be 0
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=17,
                      input_names=["image"], output_names=["logits"])
"""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def client(address, *args):
    result = subprocess.run([os.path.join(BUILD, "client", "gtco-client"), "--server", address,
                             *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"gtco-client {' '.join(args)}: {result.stderr}")
    return result.stdout


def run_tvm(python, onnx_path, result, name, work, args):
    """TVM MetaSchedule on `onnx_path` (bench/e2e/tvm_runner.py under `python`, in its own
    process), on the inputs `result` (run_exported.compare) gave both runtimes; returns the
    runner's JSON with worst_rel_diff (against ONNX Runtime's outputs) and log, or a dict with
    error and log when it failed."""
    out_dir = os.path.join(work, f"{name}.tvm-out")
    log_path = os.path.join(work, f"{name}.tvm.log")
    command = [python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tvm_runner.py"),
               onnx_path, result["work"], out_dir, "--trials-per-task", str(args.trials_per_task),
               "--runs", str(args.runs), "--threads", "2",
               "--work-dir", os.path.join(work, f"{name}.tvm")]
    if args.tvm_max_tasks:
        command += ["--max-tasks", str(args.tvm_max_tasks)]
    # The venv has its own onnx, protobuf and numpy: .deps/python (ONNX Runtime's) stays out.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    print(f"{name}: TVM MetaSchedule tuning, log in {log_path}", flush=True)
    with open(log_path, "w") as log:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        with open(log_path) as log:
            tail = log.read()[-2000:]
        print(f"{name}: TVM failed ({done.returncode}):\n{tail}", flush=True)
        return {"error": f"exit {done.returncode}", "log": log_path}
    tvm = json.loads(lines[-1])
    worst = 0.0
    for n in range(tvm["outputs"]):
        got = np.load(os.path.join(out_dir, f"{n}.npy"))
        want = np.load(os.path.join(result["work"], "ort", f"{n}.npy"))
        if got.shape != want.shape:
            print(f"{name}: TVM's output {n} is {got.shape}, ONNX Runtime's {want.shape}")
            worst = float("inf")
            continue
        scale = max(float(np.max(np.abs(want))), 1e-30)
        worst = max(worst, float(np.max(np.abs(got.astype(want.dtype) - want))) / scale)
    tvm["worst_rel_diff"] = worst
    tvm["log"] = log_path
    return tvm


def plan_summary(plan):
    """The job's plan choices as `status --explain` costs them: per choice the chosen
    alternative, its regions and every alternative's measured time per region."""
    parts = []
    for choice in plan:
        alternatives = choice["alternatives"]
        chosen = next(a["name"] for a in alternatives if a["chosen"])
        costs = " vs ".join(
            f"{float(a['seconds']) * 1e3:.3f}" if a["measured"] else "unmeasured"
            for a in alternatives)
        parts.append(f"{chosen} x{choice['instances']} ({costs} ms)")
    return "; ".join(parts) or "-"


class Farm:
    """A local farm: gtco-server (SQLite in `work`) and one CPU worker; `env` extra environment of
    the server (GTCO_UNFUSED_ATTENTION=1 plans attention unfused: the ablation baseline)."""

    def __init__(self, work, tag, env=None):
        self.address = f"127.0.0.1:{free_port()}"
        server_env = dict(os.environ, **(env or {}))
        # A directory per farm: the server keeps its cost model beside its database, and a farm
        # that found the last one's model would start its search warm (trained on the same
        # model's records, for the ablation farm) while TVM and the first farm start cold.
        farm_dir = os.path.join(work, tag)
        os.makedirs(farm_dir, exist_ok=True)
        self.server = subprocess.Popen(
            [os.path.join(BUILD, "server", "gtco-server"), "--listen", self.address,
             "--db", os.path.join(farm_dir, "gtco.db"), "--no-auth"],
            stdout=open(os.path.join(work, f"{tag}.server.log"), "w"),
            stderr=subprocess.STDOUT, env=server_env)
        time.sleep(2)
        self.worker = subprocess.Popen(
            [os.path.join(BUILD, "worker", "gtco-worker"), "--server", self.address,
             "--target", "cpu"], stdout=open(os.path.join(work, f"{tag}.worker.log"), "w"),
            stderr=subprocess.STDOUT)

    def tune_and_export(self, onnx_path, trials_per_task, artifact, precision="f32"):
        """Tunes the model at trials_per_task per task and exports it to `artifact` (`precision`
        "bf16": gtco-client's --precision bf16, the weight MatMuls and convs in bf16); returns (tasks,
        trials done, tuning seconds, plan summary)."""
        flag = ["--precision", precision]
        tasks = len(json.loads(client(self.address, "query", "--model", onnx_path, "--target",
                                      "cpu", *flag, "--json"))["records"])
        start = time.time()
        job = json.loads(client(self.address, "submit", onnx_path, "--target", "cpu", "--budget",
                                str(tasks * trials_per_task), *flag, "--watch", "--json"))
        seconds = time.time() - start
        client(self.address, "export", onnx_path, "-o", artifact, *flag)
        explained = json.loads(client(self.address, "status", job["job_id"], "--explain",
                                      "--json"))
        return tasks, int(job["trials_done"]), seconds, plan_summary(explained.get("plan", []))

    def stop(self):
        self.worker.terminate()
        self.server.terminate()
        self.worker.wait()
        self.server.wait()


def tune_and_compare(work, tag, env, onnx_path, artifact, args, precision="f32"):
    """Tunes `onnx_path` on a farm of its own (`tag`, server environment `env`) at `precision`,
    exports it to `artifact`, stops the farm and times the artifact against ONNX Runtime;
    returns (tasks, trials, tuning seconds, plan summary, compare's result)."""
    farm = Farm(work, tag, env)
    try:
        tasks, trials, seconds, plan = farm.tune_and_export(onnx_path, args.trials_per_task,
                                                            artifact, precision)
    finally:
        farm.stop()
    result = compare(onnx_path, artifact, args.runs, args.rounds,
                     os.path.splitext(artifact)[0] + ".io", args.openvino)
    return tasks, trials, seconds, plan, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,vit_b_16,bert_base")
    parser.add_argument("--trials-per-task", type=int, default=8)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5,
                        help="alternating gtco-run / ONNX Runtime processes per model")
    parser.add_argument("--bert-python", default="/usr/bin/python3",
                        help="the interpreter that exports BERT (default: Debian's python3 with "
                             "the transformers scripts/setup.sh --tests puts in .deps/transformers)")
    default_tvm = os.path.join(ROOT, ".deps", "tvm", "bin", "python")
    parser.add_argument("--tvm-python",
                        default=default_tvm if os.path.exists(default_tvm) else None,
                        help="the TVM venv's interpreter (bench/e2e/install_tvm.sh; default "
                             ".deps/tvm/bin/python when it is there, else no TVM columns)")
    parser.add_argument("--no-tvm", action="store_true", help="leave TVM MetaSchedule out")
    parser.add_argument("--tvm-max-tasks", type=int, default=0,
                        help="tune only TVM's N tasks of most weight (a quick check, not a result; "
                             "0: all)")
    parser.add_argument("--ablation", action="store_true",
                        help="also tune and time each transformer with attention unfused (a farm "
                             "whose server runs with GTCO_UNFUSED_ATTENTION=1)")
    parser.add_argument("--ablation-copies", action="store_true",
                        help="also tune and time each transformer with its copies as exported (a "
                             "farm whose server runs with GTCO_KEEP_COPIES=1: no data-movement "
                             "rewrites, no slice+transpose merge)")
    parser.add_argument("--precision", default="",
                        help="MODEL=bf16|bf16x3,...: those models tuned and exported with "
                             "gtco-client's --precision (the others f32)")
    parser.add_argument("--openvino-python",
                        default=DEFAULT_OPENVINO if os.path.exists(DEFAULT_OPENVINO) else None,
                        help="OpenVINO's venv interpreter (bench/e2e/install_openvino.sh; default "
                             ".deps/openvino/bin/python when it is there, else no OpenVINO "
                             "columns)")
    parser.add_argument("--no-openvino", action="store_true", help="leave OpenVINO out")
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "results", "e2e.md"))
    args = parser.parse_args()
    args.openvino = None if args.no_openvino else args.openvino_python
    precisions = {}
    for item in filter(None, args.precision.split(",")):
        model, _, value = item.partition("=")
        if value not in ("bf16", "bf16x3") or model not in args.models.split(","):
            parser.error(f"--precision {item}: expected MODEL=bf16|bf16x3 for one of --models")
        precisions[model] = value
    tvm_python = None if args.no_tvm else args.tvm_python
    if tvm_python and not os.path.exists(tvm_python):
        parser.error(f"--tvm-python {tvm_python} does not exist (bench/e2e/install_tvm.sh)")
    work = scratch_dir("gtco-e2e-farm-")
    started_at = commit()
    rows = []
    artifacts = []  # (model, artifact, ONNX Runtime's median seconds, precision): where_time_goes
    for name in args.models.split(","):
        onnx_path = os.path.join(work, f"{name}.onnx")
        python = (args.bert_python if name.startswith("bert") or name == "minilm_l6"
                  else "/usr/bin/python3")
        env = dict(os.environ)
        transformers_dir = os.path.join(ROOT, ".deps", "transformers")
        if os.path.isdir(transformers_dir):
            env["PYTHONPATH"] = os.pathsep.join(
                [p for p in (env.get("PYTHONPATH", ""), transformers_dir) if p])
        subprocess.run([python, "-c", EXPORT_SCRIPT, name, onnx_path], check=True,
                       capture_output=True, env=env)
        artifact = os.path.join(work, f"{name}.gtco")
        # Each model's farm is stopped before the timing: a live server retrains its cost
        # model after a job and would steal CPU from whichever system runs then.
        precision = precisions.get(name, "f32")
        tasks, trials, tuning_seconds, plan, result = tune_and_compare(
            work, name, None, onnx_path, artifact, args, precision)
        print(name, json.dumps({k: v for k, v in result.items() if k != "gtco" and k != "ort"}),
              result["gtco"]["median_seconds"], result["ort"]["median_seconds"], flush=True)
        tvm = run_tvm(tvm_python, onnx_path, result, name, work, args) if tvm_python else None
        if tvm and "error" not in tvm:
            print(name, "tvm", json.dumps({k: tvm[k] for k in (
                "median_seconds", "tuning_seconds", "build_seconds", "tasks", "trials",
                "trial_errors", "peak_rss_bytes", "worst_rel_diff")}), flush=True)
        rows.append((name, precision, tasks, trials, tuning_seconds, plan, result, tvm))
        if precision != "bf16x3":  # f32 against the FMA peak, bf16 against the bf16 dot peak
            artifacts.append((name, artifact, result["ort"]["median_seconds"], precision))
        if not name.startswith("resnet"):
            # The same model on a farm of its own whose server runs with an ablation switch, tuned
            # at the same trials per task and timed against ONNX Runtime the same way: attention
            # unfused (matmul, softmax, matmul) shows the fused attention's gain by itself; copies
            # kept (every Transpose and Slice a copy step, the residual Add after a reshape a
            # kernel of its own) the data-movement rewrites'.
            for wanted, suffix, label, env in (
                    (args.ablation, "unfused", "attention unfused", "GTCO_UNFUSED_ATTENTION"),
                    (args.ablation_copies, "copies", "copies kept", "GTCO_KEEP_COPIES")):
                if not wanted:
                    continue
                v_tasks, v_trials, v_seconds, v_plan, v_result = tune_and_compare(
                    work, f"{name}-{suffix}", {env: "1"}, onnx_path,
                    os.path.join(work, f"{name}.{suffix}.gtco"), args, precision)
                print(name, label, v_result["gtco"]["median_seconds"],
                      v_result["ort"]["median_seconds"], flush=True)
                rows.append((f"{name} ({label})", precision, v_tasks, v_trials, v_seconds,
                             v_plan, v_result, None))
    command = " ".join(["bench/e2e/run_e2e.py"] + sys.argv[1:])
    tvms = [row[7] for row in rows if row[7] and "error" not in row[7]]
    version = tvms[0]["version"] if tvms else "0.27"
    tvm_text = [] if not tvm_python else [
        f"TVM {version} MetaSchedule (its own venv and process): the same ONNX file through "
        "its Relax frontend, tuned at the same trials per task (times the tasks TVM extracts, "
        "which are not GTCO's; TVM's evolutionary search, XGBoost cost model, gradient task "
        "scheduler, weights prepacked; symbolic-shape tasks, which MetaSchedule refuses, left "
        "untuned) for llvm with this host's -mcpu and 2 cores, then timed like the others in a "
        "process that loads TVM's runtime library only, TVM_NUM_THREADS=2; its outputs compared "
        "with ONNX Runtime's."
        + (f" Only TVM's {args.tvm_max_tasks} tasks of most weight were tuned (--tvm-max-tasks): "
           "not a result." if args.tvm_max_tasks else "")]
    lines = [
        "# End to end: exported GTCO artifacts vs ONNX Runtime"
        + (", OpenVINO" if args.openvino else "")
        + (" and TVM MetaSchedule" if tvm_python else ""),
        "",
        f"Machine: {cpu_name()}; {datetime.date.today()}; "
        f"command: `PYTHONPATH=.deps/python {command}`. Commit: {started_at} (at the start of "
        f"the run; the binaries are those of {BUILD}).",
        "Each model: torch.onnx.export (opset 17, random weights, batch 1), tuned on a local farm "
        f"(one CPU worker, {args.trials_per_task} trials per task), exported for this host, run "
        f"by gtco-run and by ONNX Runtime (ORT_ENABLE_ALL), 2 threads each, each in its own "
        f"processes: {args.rounds} rounds in which the two take turns, each process timing "
        f"{-(-args.runs // args.rounds)} runs after warm-up, a system's time the median of its "
        "rounds' medians (so a slow stretch of the VM lands on both); outputs compared on the "
        "same random inputs.",
        *tvm_text,
        *([] if not args.ablation else [
            "Ablation: rows \"(attention unfused)\" are the same model tuned on a second farm "
            "whose server plans attention as matmul, softmax, matmul (GTCO_UNFUSED_ATTENTION=1), "
            "same trials per task, timed against ONNX Runtime the same way."]),
        *([] if not args.ablation_copies else [
            "Ablation: rows \"(copies kept)\" are the same model tuned on a farm whose server keeps "
            "the copies as exported (GTCO_KEEP_COPIES=1: no data-movement rewrites, no "
            "slice+transpose merge), same trials per task, timed against ONNX Runtime the same "
            "way."]),
        "",
        "Plan: on CPU the farm plans each attention region both fused (one kernel) and unfused "
        "(matmul, softmax, matmul), tunes both alternatives' workloads (counted in tasks) and "
        "exports, per region, the one whose best measured times add up to less; the column gives "
        "the chosen one, the regions, and each alternative's time per region "
        "(`gtco-client status JOB --explain`).",
        "",
        *([] if not precisions else [
            "Precision: the models named by --precision were tuned and exported with gtco-client's "
            "--precision (bf16: their weight MatMuls of 16+ rows and their ungrouped convs "
            "on bf16 operands, f32 sums, the classifier of a batch-1 model in f32; "
            "bf16x3: their weight MatMuls as three bf16 products of split operands on AMX, "
            "near-f32 accuracy; see bench/e2e/run_bf16.py), the others in f32; ONNX "
            "Runtime and TVM run the fp32 model, and the output difference is against ONNX "
            "Runtime's fp32 outputs.", ""]),
        *([] if not args.openvino else [
            "OpenVINO: the same ONNX file, in the same alternating rounds, compiled for CPU with "
            "PERFORMANCE_HINT=LATENCY and INFERENCE_NUM_THREADS=2, once with "
            "INFERENCE_PRECISION_HINT=f32 and once at its default precision (the column names "
            "the precision it chose); its outputs compared with ONNX Runtime's fp32.", ""]),
        "| model | GTCO precision | tasks | trials | tuning wall | plan | GTCO (gtco-run) | "
        "ONNX Runtime | GTCO speed-up | peak RSS GTCO / ORT | max rel. output diff |"
        + (" OpenVINO f32 | GTCO vs OpenVINO f32 | OpenVINO default | GTCO vs OpenVINO "
           "default | OpenVINO max rel. diff f32 / default |" if args.openvino else "")
        + (" TVM tasks / trials | TVM tuning wall | TVM MetaSchedule | GTCO speed-up vs TVM | "
           "TVM peak RSS | TVM max rel. output diff |" if tvm_python else ""),
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"
        + ("---:|" * 5 if args.openvino else "")
        + ("---:|" * 6 if tvm_python else ""),
    ]
    for name, precision, tasks, trials, seconds, plan, r, tvm in rows:
        g, o = r["gtco"], r["ort"]
        line = (
            f"| {name} | {precision} | {tasks} | {trials} | {seconds:.0f} s | {plan} | "
            f"{g['median_seconds'] * 1e3:.2f} ms | "
            f"{o['median_seconds'] * 1e3:.2f} ms | {o['median_seconds'] / g['median_seconds']:.2f}x | "
            f"{g['peak_rss_bytes'] / 2**20:.0f} / {o['peak_rss_bytes'] / 2**20:.0f} MiB | "
            f"{r['worst_rel_diff']:.1e} |")
        if args.openvino:
            f32, default = r["openvino"]["f32"], r["openvino"]["default"]
            line += (
                f" {f32['median_seconds'] * 1e3:.2f} ms | "
                f"{f32['median_seconds'] / g['median_seconds']:.2f}x | "
                f"{default['median_seconds'] * 1e3:.2f} ms ({default['precision']}) | "
                f"{default['median_seconds'] / g['median_seconds']:.2f}x | "
                f"{f32['worst_rel_diff']:.1e} / {default['worst_rel_diff']:.1e} |")
        if tvm_python and tvm is None:
            line += " - |" * 6
        elif tvm_python and "error" in tvm:
            line += " failed |" * 6
        elif tvm_python:
            line += (
                f" {tvm['tasks']} / {tvm['trials']} | {tvm['tuning_seconds']:.0f} s | "
                f"{tvm['median_seconds'] * 1e3:.2f} ms | "
                f"{tvm['median_seconds'] / g['median_seconds']:.2f}x | "
                f"{tvm['peak_rss_bytes'] / 2**20:.0f} MiB | {tvm['worst_rel_diff']:.1e} |")
        lines.append(line)
    # Where each model's time goes, against the machine's limits measured now (farms stopped).
    if artifacts:  # the f32 and bf16 models' (bf16x3's products are not rated)
        limits = where_time_goes.machine_limits()
        lines += ["", where_time_goes.markdown(
            [(name, where_time_goes.analyse(path, limits, ort, precision=precision))
             for name, path, ort, precision in artifacts], limits).rstrip("\n")]
    with open(args.output, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
