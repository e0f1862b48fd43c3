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
    args = parser.parse_args()
    deadline = time.time() + args.deadline if args.deadline else None
    os.makedirs(args.out, exist_ok=True)
    if not args.skip_integration:
        integration(args.out, args.e2e_budget)
    benchmark(args.out, args.budget, set(filter(None, args.only.split(","))), deadline)


if __name__ == "__main__":
    main()
