#!/usr/bin/env python3
"""GPU verification and benchmark through the real farm (run by bench/run_gpu_bench.sh run).

1. Integration: a gtco-server on a SQLite file and one `gtco-worker --target cuda` tune the
   bundled transformer block for target cuda; every stored time must come from a verified run
   (the server refuses unverified ones), the job must finish, `query --model` must answer; the
   block exported for the GPU (--target cuda) runs under gtco-run, compared with ONNX Runtime.
2. Benchmark: builds ONNX models of the benchmark workloads (f16/bf16 GEMMs at 4096^3 and the
   ViT-B/16 batch-32 GEMMs; softmax, layernorm and attention at ViT-B/16 batch 32), tunes each
   through the same farm, exports the best trace per workload and re-times it beside cuBLAS in
   one process (gpu_vs_vendor), and times PyTorch eager for the row workloads and attention
   (torch_eager.py). Writes e2e.json, best_traces.tsv, gpu_vs_vendor.md/.json, torch_eager.json
   and gpu_bench.md into --out.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import farm as farm_lib  # noqa: E402

GEMMS = [("gemm_4096", 4096, 4096, 4096), ("vit32_qkv", 6304, 2304, 768),
         ("vit32_proj", 6304, 768, 768), ("vit32_fc1", 6304, 3072, 768),
         ("vit32_fc2", 6304, 768, 3072)]
BATCH, HEADS, TOKENS, HEAD_DIM, HIDDEN = 32, 12, 197, 64, 768


def make_models(directory):
    """ONNX models of the benchmark workloads (onnx is in the GPU image's Python)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    def save(name, nodes, inputs, outputs, initializers=()):
        graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model)
        path = os.path.join(directory, name + ".onnx")
        onnx.save(model, path)
        return path

    models = []
    for dtype_name, dtype in (("f16", TensorProto.FLOAT16), ("bf16", TensorProto.BFLOAT16)):
        for name, m, n, k in GEMMS:
            a = helper.make_tensor_value_info("a", dtype, [m, k])
            b = helper.make_tensor_value_info("b", dtype, [k, n])
            y = helper.make_tensor_value_info("y", dtype, [m, n])
            node = helper.make_node("MatMul", ["a", "b"], ["y"])
            models.append(("gemm", f"{name}_{dtype_name}", (m, n, k, dtype_name),
                           save(f"{name}_{dtype_name}", [node], [a, b], [y])))
    rows = BATCH * HEADS * TOKENS
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, TOKENS])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, TOKENS])
    models.append(("softmax", "softmax_vit32", (rows, TOKENS),
                   save("softmax_vit32", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [x], [y])))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH * TOKENS, HIDDEN])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH * TOKENS, HIDDEN])
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [HIDDEN], np.ones(HIDDEN, np.float32))
    bias = helper.make_tensor("bias", TensorProto.FLOAT, [HIDDEN], np.zeros(HIDDEN, np.float32))
    models.append(("layernorm", "layernorm_vit32", (BATCH * TOKENS, HIDDEN),
                   save("layernorm_vit32",
                        [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1,
                                          epsilon=1e-6)], [x], [y], [scale, bias])))
    shape = [BATCH * HEADS, TOKENS, HEAD_DIM]
    q, k, v = (helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv")
    o = helper.make_tensor_value_info("o", TensorProto.FLOAT, shape)
    s = helper.make_tensor("s", TensorProto.FLOAT, [], [HEAD_DIM ** -0.5])
    models.append(("attention", "attention_vit32", tuple(shape),
                   save("attention_vit32", [
                       helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                       helper.make_node("MatMul", ["q", "kt"], ["qk"]),
                       helper.make_node("Mul", ["qk", "s"], ["scaled"]),
                       helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
                       helper.make_node("MatMul", ["p", "v"], ["o"])], [q, k, v], [o], [s])))
    # A memory-bound chain (ViT's fc1 bias + GELU at batch 32): one kernel here, two in eager.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH * TOKENS, 4 * HIDDEN])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH * TOKENS, 4 * HIDDEN])
    bias = helper.make_tensor("bias", TensorProto.FLOAT, [4 * HIDDEN],
                              np.random.default_rng(0).uniform(-1, 1, 4 * HIDDEN).astype(np.float32))
    consts = [helper.make_tensor(name, TensorProto.FLOAT, [], [value])
              for name, value in (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
    models.append(("elementwise", "bias_gelu_vit32", (BATCH * TOKENS, 4 * HIDDEN),
                   save("bias_gelu_vit32", [
                       helper.make_node("Add", ["x", "bias"], ["t"]),
                       helper.make_node("Div", ["t", "sqrt2"], ["d"]),
                       helper.make_node("Erf", ["d"], ["e"]),
                       helper.make_node("Add", ["e", "one"], ["e1"]),
                       helper.make_node("Mul", ["t", "e1"], ["g"]),
                       helper.make_node("Mul", ["g", "half"], ["y"])], [x], [y], [bias, *consts])))
    return models


def integration(out, budget):
    farm = farm_lib.Farm()
    try:
        farm.start_server()
        farm.start_worker(target="cuda")
        model = os.path.join(farm_lib.DATA, "transformer_block.onnx")
        start = time.time()
        job = farm.submit(model, budget, target="cuda")
        status = farm.wait_for(job, lambda s: s["state"] in ("done", "failed", "cancelled"),
                               timeout=1800)
        seconds = time.time() - start
        ok, failed = farm.sql("SELECT SUM(ok), SUM(1 - ok) FROM measurements")[0]
        kinds = farm.sql("SELECT error_kind, COUNT(*) FROM measurements WHERE ok = 0 GROUP BY 1")
        query = farm.client_json("query", "--model", model, "--target", "cuda")
        summary = {"job": job, "state": status["state"], "trials_done": status.get("trials_done"),
                   "ok_measurements": ok, "failed_measurements": failed,
                   "failures_by_kind": dict(kinds), "tuning_seconds": round(seconds, 1),
                   "estimated_latency_seconds": query.get("estimated_latency_seconds"),
                   "tasks": [{"description": t.get("description"), "best_seconds": t.get("best_seconds"),
                              "mappings": [(m.get("name"), m.get("trials"), m.get("best_seconds"))
                                           for m in t.get("mappings", [])]}
                             for t in status.get("tasks", [])]}
        summary["exported"] = exported_artifact(farm, model)
        with open(os.path.join(out, "e2e.json"), "w") as file:
            json.dump(summary, file, indent=2)
        print(json.dumps(summary, indent=2))
        if status["state"] != "done" or not ok:
            raise SystemExit("integration failed:\n" + farm.read_logs())
    finally:
        farm.stop()


def exported_artifact(farm, model):
    """export --target cuda of the tuned block, run by gtco-run on the bundled input and compared
    with ONNX Runtime's output (tests/data/transformer_block.ort_output.npy)."""
    artifact = os.path.join(farm.dir, "block_cuda.gtco")
    summary = farm.client_json("export", model, "--target", "cuda", "-o", artifact)
    out_dir = os.path.join(farm.dir, "exported_out")
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run([farm_lib.RUN, artifact, "--input",
                          "input=" + os.path.join(farm_lib.DATA, "transformer_block.input.npy"),
                          "--output-dir", out_dir, "--bench", "50", "--json"],
                         capture_output=True, text=True, timeout=600)
    result = {"kernels": summary.get("kernels"), "tuned": summary.get("tuned"),
              "arch": summary.get("cpu"), "returncode": run.returncode,
              "stderr": run.stderr.strip()[-2000:]}
    if run.returncode == 0:
        result["median_seconds"] = json.loads(run.stdout)["median_seconds"]
        try:
            import numpy as np
            got = np.load(os.path.join(out_dir, "output.npy"))
            want = np.load(os.path.join(farm_lib.DATA, "transformer_block.ort_output.npy"))
            result["max_abs_diff_vs_onnxruntime"] = float(np.max(np.abs(got - want)))
            result["matches_onnxruntime"] = bool(np.allclose(got, want, rtol=2e-2, atol=2e-3))
        except ImportError:
            result["matches_onnxruntime"] = "numpy missing: not compared"
    return result


def vit_e2e(out, budget, deadline=None, skeleton=None):
    """ViT-B/16 (torchvision, batch 1, f32) tuned for the GPU through the farm, exported with
    --target cuda and run by gtco-run; its output against ONNX Runtime's (CPU) and its latency
    beside PyTorch eager and torch.compile (vit_model.py). With `skeleton` (the graph exported on the
    machine that packed, weights stripped), that graph is tuned, and the GPU machine's own export
    is only checked to import. Writes vit_e2e.json."""
    farm = farm_lib.Farm()
    result = {"budget": budget, "graph": "skeleton " + skeleton if skeleton else "exported here"}

    def left(cap):
        """Seconds a step may take: `cap`, or less when the call's deadline is nearer."""
        return max(20, min(cap, deadline - time.time())) if deadline else cap
    try:
        directory = os.path.join(farm.dir, "vit")
        subprocess.run([sys.executable, os.path.join(HERE, "vit_model.py"), "export", directory,
                        *([skeleton] if skeleton else [])], check=True, timeout=300)
        model = os.path.join(directory, "vit_b_16.onnx")
        farm.start_server()
        farm.start_worker(target="cuda")
        if skeleton:  # does this machine's PyTorch export import too?
            check = farm.client("export", os.path.join(directory, "vit_b_16.local.onnx"), "--target", "cuda",
                                "-o", os.path.join(directory, "local.gtco"), "--json", check=False)
            result["local_export_imports"] = check.returncode == 0
            result["local_export_message"] = (check.stderr.strip() or check.stdout.strip()[:300])[-1500:]
        start = time.time()
        job = farm.submit(model, budget, target="cuda")
        try:
            status = farm.wait_for(job, lambda s: s["state"] in ("done", "failed", "cancelled"),
                                   timeout=max(30, deadline - 150 - time.time()) if deadline else 1800)
        except AssertionError:
            farm.client("cancel", job, check=False)
            status = farm.client_json("status", job)
        result.update({"state": status["state"], "trials_done": status.get("trials_done"),
                       "tuning_seconds": round(time.time() - start, 1)})
        ok, failed = farm.sql("SELECT SUM(ok), SUM(1 - ok) FROM measurements")[0]
        result["ok_measurements"], result["failed_measurements"] = ok, failed
        result["failures_by_kind"] = dict(farm.sql(
            "SELECT error_kind, COUNT(*) FROM measurements WHERE ok = 0 GROUP BY 1"))
        result["failure_samples"] = farm.sql(
            "SELECT error_kind, substr(trace, 1, 120), substr(error, 1, 400) FROM measurements "
            "WHERE ok = 0 GROUP BY error_kind LIMIT 5")
        result["tasks"] = [(t.get("description"), t.get("best_seconds"),
                            [(m.get("name"), m.get("trials"), m.get("best_seconds"))
                             for m in t.get("mappings", [])])
                           for t in status.get("tasks", [])]
        artifact = os.path.join(directory, "vit_cuda.gtco")
        exported = farm.client("export", model, "--target", "cuda", "-o", artifact, "--json", check=False)
        result["export"] = (exported.stdout.strip() or exported.stderr.strip())[-1500:]
        if exported.returncode == 0:
            out_dir = os.path.join(directory, "gtco_out")
            os.makedirs(out_dir, exist_ok=True)
            run = subprocess.run([farm_lib.RUN, artifact, "--input", "image=" + os.path.join(directory, "image.npy"),
                                  "--output-dir", out_dir, "--bench", "50", "--json"],
                                 capture_output=True, text=True, timeout=left(600))
            result["gtco_run_returncode"] = run.returncode
            result["gtco_run_stderr"] = run.stderr.strip()[-1500:]
            if run.returncode == 0:
                import numpy as np
                result["gtco_median_ms"] = json.loads(run.stdout)["median_seconds"] * 1e3
                # The same artifact launched step by step (no CUDA graph), then with it again.
                for key, graphs in (("gtco_median_ms_stepwise", "0"), ("gtco_median_ms_graph_again", "1")):
                    timed = subprocess.run([farm_lib.RUN, artifact, "--input",
                                            "image=" + os.path.join(directory, "image.npy"),
                                            "--bench", "50", "--json"], capture_output=True, text=True,
                                           timeout=left(600), env=dict(os.environ, GTCO_CUDA_GRAPHS=graphs))
                    if timed.returncode == 0:
                        result[key] = json.loads(timed.stdout)["median_seconds"] * 1e3
                got = np.load(os.path.join(out_dir, "logits.npy"))
                want = np.load(os.path.join(directory, "ort_output.npy"))
                result["max_abs_diff_vs_onnxruntime"] = float(np.max(np.abs(got - want)))
                result["max_abs_onnxruntime"] = float(np.max(np.abs(want)))
                result["rel_l2_vs_onnxruntime"] = float(np.linalg.norm(got - want) / np.linalg.norm(want))
                result["matches_onnxruntime"] = bool(result["rel_l2_vs_onnxruntime"] < 1e-2)
        torch_json = os.path.join(out, "vit_torch.json")
        try:
            subprocess.run([sys.executable, os.path.join(HERE, "vit_model.py"), "time", directory,
                            torch_json, str(deadline - time.time() if deadline else 600)],
                           check=False, timeout=left(400))
        except subprocess.TimeoutExpired:
            result["torch_error"] = "PyTorch timing ran past the call's deadline"
        if os.path.exists(torch_json):
            with open(torch_json) as file:
                result["torch"] = json.load(file)
    except Exception as error:  # noqa: BLE001 -- written out with the logs
        result["error"] = repr(error)[-3000:]
        result["logs"] = farm.read_logs()[-6000:]
    finally:
        farm.stop()
        with open(os.path.join(out, "vit_e2e.json"), "w") as file:
            json.dump(result, file, indent=2)
        print(json.dumps({k: v for k, v in result.items() if k != "logs"}, indent=2))


def retime(out, traces):
    """Re-times stored best traces (TSVs written by an earlier benchmark) beside cuBLAS, no tuning:
    the kernels the current code generates for them, on this GPU."""
    bin_dir = os.environ.get("GTCO_BIN_DIR", os.path.join(ROOT, "build", "bench", "gpu"))
    merged = os.path.join(out, "retime_traces.tsv")
    with open(merged, "w") as file:
        for path in traces:
            with open(path) as source:
                text = source.read()
                file.write(text if text.endswith("\n") or not text else text + "\n")
    subprocess.run([os.path.join(bin_dir, "gpu_vs_vendor"), "--traces", merged, "--markdown",
                    os.path.join(out, "retime_gpu_vs_vendor.md")], check=False)


def benchmark(out, budget, only=None, deadline=None):
    """Tunes each workload in turn; past `deadline` (a time.time()), the rest are skipped and a job
    still running is left, so the best traces found so far are still timed beside the vendors."""
    farm = farm_lib.Farm()
    rows = []
    try:
        farm.start_server()
        farm.start_worker(target="cuda")
        for kind, name, shape, path in make_models(farm.dir):
            if only and name not in only:
                continue
            if deadline and time.time() > deadline - 30:
                print(f"{name}: skipped (past the deadline)")
                continue
            start = time.time()
            try:
                job = farm.submit(path, budget, target="cuda")
            except AssertionError as error:
                print(f"{name}: not submitted: {error}")
                continue
            try:
                status = farm.wait_for(job, lambda s: s["state"] in ("done", "failed", "cancelled"),
                                       timeout=max(30, deadline - time.time()) if deadline else 3600)
            except AssertionError:
                status = {"state": "unfinished at the deadline"}
            print(f"{name}: {status['state']} in {time.time() - start:.0f} s")
            for key, canonical, trace, seconds in farm.sql(
                    "SELECT m.workload_key, w.canonical, m.trace, MIN(m.median_seconds) FROM measurements m "
                    "JOIN workloads w ON w.workload_key = m.workload_key JOIN tasks t ON t.task_id = m.task_id "
                    "WHERE m.ok = 1 AND t.job_id = ? GROUP BY m.workload_key", job):
                rows.append((name, kind, key, canonical, trace, seconds))
    finally:
        farm.stop()
    tsv = os.path.join(out, "best_traces.tsv")
    with open(tsv, "w") as file:
        for name, kind, key, canonical, trace, seconds in rows:
            file.write("\t".join([name, kind, key, trace, repr(seconds), canonical.replace("\n", "\\n")]) + "\n")
    bin_dir = os.environ.get("GTCO_BIN_DIR", os.path.join(ROOT, "build", "bench", "gpu"))
    subprocess.run([os.path.join(bin_dir, "gpu_vs_vendor"), "--traces", tsv, "--markdown",
                    os.path.join(out, "gpu_vs_vendor.md"), "--json", os.path.join(out, "gpu_vs_vendor.json")],
                   check=False)
    subprocess.run([sys.executable, os.path.join(HERE, "torch_eager.py"), "--json",
                    os.path.join(out, "torch_eager.json")], check=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--e2e-budget", type=int, default=300)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--skip-integration", action="store_true")
    parser.add_argument("--deadline", type=float, default=0,
                        help="seconds from the start after which no more benchmark jobs are waited for")
    parser.add_argument("--only", default="", help="comma-separated benchmark workloads (default: all)")
    parser.add_argument("--vit-budget", type=int, default=0,
                        help="trials for the ViT-B/16 end-to-end run (0: not run)")
    parser.add_argument("--vit-skeleton", default="",
                        help="the ViT-B/16 graph to tune (vit_model.py skeleton), instead of exporting one")
    parser.add_argument("--retime", default="",
                        help="comma-separated best-trace TSVs to re-time beside cuBLAS before tuning")
    parser.add_argument("--skip-benchmark", action="store_true")
    args = parser.parse_args()
    deadline = time.time() + args.deadline if args.deadline else None
    os.makedirs(args.out, exist_ok=True)
    if not args.skip_integration:
        integration(args.out, args.e2e_budget)
    if args.retime:
        retime(args.out, args.retime.split(","))
    if not args.skip_benchmark:
        benchmark(args.out, args.budget, set(filter(None, args.only.split(","))), deadline)
    if args.vit_budget:
        vit_e2e(args.out, args.vit_budget, deadline, args.vit_skeleton or None)


if __name__ == "__main__":
    main()
