#!/usr/bin/python3
"""An exported model (gtco-run) beside ONNX Runtime (and OpenVINO, where its venv is there) on
the same ONNX model: each in its own process, 2 threads, batch as exported, N runs after warm-up
in alternating rounds (median of the rounds' medians), peak RSS, and whether the outputs match on
the same random inputs.

    PYTHONPATH=.deps/python bench/e2e/run_exported.py MODEL.onnx ARTIFACT.gtco [--runs 50]
        [--rounds 5] [--openvino-python .deps/openvino/bin/python | --no-openvino]

OpenVINO (bench/e2e/install_openvino.sh makes its venv, .deps/openvino) runs twice per round: at
f32 (INFERENCE_PRECISION_HINT=f32) and at its default precision (bf16 on a CPU with AVX512-BF16
or AMX, f32 elsewhere; the precision it chose is reported), PERFORMANCE_HINT=LATENCY and
INFERENCE_NUM_THREADS=2 both times.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import machine  # noqa: E402
from farm import scratch_dir  # noqa: E402  (the tests' scratch folders, removed at exit)
GTCO_RUN = os.path.join(os.environ.get("GTCO_BENCH_BUILD") or os.path.join(ROOT, "build"),
                        "runtime", "gtco-run")

ORT_RUNNER = r"""
import json, resource, sys, time
import numpy as np, onnxruntime as ort
model, inputs_dir, runs, out_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
options = ort.SessionOptions()
options.intra_op_num_threads = 2
options.inter_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(f"{inputs_dir}/{n}.npy") for n, i in enumerate(session.get_inputs())}
for _ in range(5):
    outputs = session.run(None, feeds)
times = []
for _ in range(runs):
    start = time.perf_counter()
    session.run(None, feeds)
    times.append(time.perf_counter() - start)
for n, value in enumerate(outputs):
    np.save(f"{out_dir}/{n}.npy", value)
times.sort()
print(json.dumps({"median_seconds": times[len(times) // 2], "version": ort.__version__,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "outputs": [o.name for o in session.get_outputs()]}))
"""


OPENVINO_RUNNER = r"""
import json, resource, sys, time
import numpy as np, openvino as ov
model, inputs_dir, runs, out_dir, precision = sys.argv[1:6]
runs = int(runs)
config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2}
if precision == "f32":
    config["INFERENCE_PRECISION_HINT"] = "f32"
core = ov.Core()
compiled = core.compile_model(core.read_model(model), "CPU", config)
request = compiled.create_infer_request()
feeds = {i.get_any_name(): np.load(f"{inputs_dir}/{n}.npy")
         for n, i in enumerate(compiled.inputs)}
for _ in range(5):
    request.infer(feeds)
times = []
for _ in range(runs):
    start = time.perf_counter()
    request.infer(feeds)
    times.append(time.perf_counter() - start)
for n, output in enumerate(compiled.outputs):
    np.save(f"{out_dir}/{n}.npy", request.get_tensor(output).data.copy())
times.sort()
print(json.dumps({"median_seconds": times[len(times) // 2], "version": ov.__version__,
                  "precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "outputs": len(compiled.outputs)}))
"""
DEFAULT_OPENVINO = os.path.join(ROOT, ".deps", "openvino", "bin", "python")


def cpu_name():
    """The machine named precisely (bench/machine.py): CPU model, family/model/stepping, flags,
    cores, memory."""
    return machine.describe()


def commit():
    """The commit HEAD names (and whether the tree has uncommitted changes)."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout
    head = git("rev-parse", "--short=12", "HEAD").strip() or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return head + (" with uncommitted changes" if dirty else "")


def compare(model, artifact, runs, rounds=5, work=None, openvino=None):
    """Runs `artifact` (gtco-run) and `model` (ONNX Runtime; with `openvino`, the interpreter of
    OpenVINO's venv, also OpenVINO at f32 and at its default precision), each in its own
    process, on the same random inputs; returns a dict of the medians, peak RSS, the kernels
    tuned, the worst relative output difference (each OpenVINO run's in its own entry), and the
    folder of the inputs ({n}.npy) and of ONNX Runtime's outputs (ort/{n}.npy), which
    bench/e2e/tvm_runner.py reuses: `work`, or a scratch folder."""
    if work is None:
        work = scratch_dir("gtco-e2e-")
    os.makedirs(work, exist_ok=True)
    described = json.loads(subprocess.run([GTCO_RUN, artifact, "--describe", "--json"],
                                          capture_output=True, text=True, check=True).stdout)
    rng = np.random.default_rng(0)
    gtco_args = []
    for n, spec in enumerate(described["inputs"]):
        if spec["dtype"] == "f32":
            value = rng.standard_normal(spec["shape"]).astype(np.float32)
        else:
            value = rng.integers(0, 2, size=spec["shape"]).astype(
                {"i64": np.int64, "i32": np.int32}.get(spec["dtype"], np.int64))
        np.save(f"{work}/{n}.npy", value)
        gtco_args += ["--input", f"{spec['name']}={work}/{n}.npy"]
    os.makedirs(f"{work}/gtco", exist_ok=True)
    os.makedirs(f"{work}/ort", exist_ok=True)
    # The two systems take turns: `rounds` fresh processes each, alternating, each timing
    # runs / rounds runs after its warm-up; a system's time is the median of its rounds' medians.
    # On a shared VM the speed drifts by 10 % within minutes; alternating puts both systems in
    # the same stretches instead of one after the other.
    per_round = max(1, -(-runs // rounds))
    gtco_rounds, ort_rounds = [], []
    ov_rounds = {"f32": [], "default": []} if openvino else {}
    for precision in ov_rounds:
        os.makedirs(f"{work}/openvino-{precision}", exist_ok=True)
    # OpenVINO's runs go through its own venv (its numpy; .deps/python stays out).
    ov_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for _ in range(rounds):
        gtco_rounds.append(json.loads(subprocess.run(
            [GTCO_RUN, artifact, *gtco_args, "--threads", "2", "--bench", str(per_round),
             "--output-dir", f"{work}/gtco", "--json"], capture_output=True, text=True,
            check=True).stdout))
        ort_rounds.append(json.loads(subprocess.run(
            [sys.executable, "-c", ORT_RUNNER, model, work, str(per_round), f"{work}/ort"],
            capture_output=True, text=True, check=True).stdout))
        for precision, results in ov_rounds.items():
            results.append(json.loads(subprocess.run(
                [openvino, "-c", OPENVINO_RUNNER, model, work, str(per_round),
                 f"{work}/openvino-{precision}", precision], capture_output=True, text=True,
                check=True, env=ov_env).stdout))

    def merged(results):
        medians = sorted(r["median_seconds"] for r in results)
        out = dict(results[0])
        out["median_seconds"] = medians[len(medians) // 2]
        out["round_medians"] = [r["median_seconds"] for r in results]
        out["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in results)
        return out

    gtco, ort = merged(gtco_rounds), merged(ort_rounds)
    worst = 0.0
    for n, written in enumerate(gtco["outputs_written"]):
        got, want = np.load(written["path"]), np.load(f"{work}/ort/{n}.npy")
        scale = max(float(np.max(np.abs(want))), 1e-30)
        worst = max(worst, float(np.max(np.abs(got - want))) / scale)
    openvino_results = {}
    for precision, results in ov_rounds.items():
        result = merged(results)
        result["worst_rel_diff"] = 0.0
        for n in range(result["outputs"]):
            got = np.load(f"{work}/openvino-{precision}/{n}.npy")
            want = np.load(f"{work}/ort/{n}.npy")
            scale = max(float(np.max(np.abs(want))), 1e-30)
            result["worst_rel_diff"] = max(
                result["worst_rel_diff"],
                float(np.max(np.abs(got.astype(want.dtype) - want))) / scale)
        openvino_results[precision] = result
    return {"gtco": gtco, "ort": ort, "worst_rel_diff": worst, "cpu": described["cpu"],
            "openvino": openvino_results, "work": work,
            "tuned": sum(1 for k in described["kernels"] if k["tuned"]),
            "kernels": len(described["kernels"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("artifact")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5,
                        help="alternating processes per system (runs are split over them)")
    parser.add_argument("--openvino-python",
                        default=DEFAULT_OPENVINO if os.path.exists(DEFAULT_OPENVINO) else None,
                        help="OpenVINO's venv interpreter (bench/e2e/install_openvino.sh)")
    parser.add_argument("--no-openvino", action="store_true")
    args = parser.parse_args()
    r = compare(args.model, args.artifact, args.runs, args.rounds, None,
                None if args.no_openvino else args.openvino_python)
    gtco, ort = r["gtco"], r["ort"]
    print(f"{os.path.basename(args.model)} on {cpu_name()}, 2 threads, {args.runs} runs in "
          f"{args.rounds} alternating rounds, median of the rounds' medians")
    print(f"  gtco-run       {gtco['median_seconds'] * 1e3:9.3f} ms   peak RSS "
          f"{gtco['peak_rss_bytes'] / 2**20:7.1f} MiB   ({r['tuned']} of {r['kernels']} "
          f"kernels tuned, compiled for {r['cpu']})")
    print(f"  ONNX Runtime   {ort['median_seconds'] * 1e3:9.3f} ms   peak RSS "
          f"{ort['peak_rss_bytes'] / 2**20:7.1f} MiB   (onnxruntime {ort['version']})")
    for precision, ov in r["openvino"].items():
        print(f"  OpenVINO {precision:<8}{ov['median_seconds'] * 1e3:7.3f} ms   peak RSS "
              f"{ov['peak_rss_bytes'] / 2**20:7.1f} MiB   (openvino {ov['version']}, "
              f"{ov['precision']}; max rel. diff {ov['worst_rel_diff']:.2e}; GTCO "
              f"{ov['median_seconds'] / gtco['median_seconds']:.2f}x)")
    print(f"  speed-up {ort['median_seconds'] / gtco['median_seconds']:.2f}x ONNX Runtime; "
          f"outputs match: max |diff| / max |ort| = {r['worst_rel_diff']:.2e}")
    return 0 if r["worst_rel_diff"] < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
