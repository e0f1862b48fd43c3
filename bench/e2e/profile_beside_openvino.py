#!/usr/bin/python3
"""Where GTCO loses to OpenVINO, per layer kind: one ONNX model's OpenVINO per-layer profile
(PERF_COUNT, the same CPU configuration as bench/e2e: PERFORMANCE_HINT=LATENCY,
INFERENCE_NUM_THREADS=2, f32 or its default precision) beside `gtco-run --profile` of a GTCO
artifact of that model, both summed per kind of layer (convolutions, matmuls, attention, norms,
element-wise, data movement and casts), each kind's time and share, then each side's slowest
steps. OpenVINO runs under its own venv (bench/e2e/install_openvino.sh: .deps/openvino), in its
own process, the median of each node's real time over the profiled runs; gtco-run's profile is
the median per step over its warm profile runs. The two profiles are taken one after the other,
so on a VM whose speed drifts compare shares more than milliseconds.

    PYTHONPATH=.deps/python bench/e2e/profile_beside_openvino.py MODEL.onnx ARTIFACT.gtco
        [--openvino-precision f32|default] [--runs 20] [--top 12]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_exported import DEFAULT_OPENVINO, commit, cpu_name  # noqa: E402
from where_time_goes import gtco_profile  # noqa: E402

OPENVINO_PROFILER = r"""
import json, statistics, sys
import numpy as np, openvino as ov
model, runs, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3]
config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2, "PERF_COUNT": True}
if precision == "f32":
    config["INFERENCE_PRECISION_HINT"] = "f32"
core = ov.Core()
compiled = core.compile_model(core.read_model(model), "CPU", config)
request = compiled.create_infer_request()
rng = np.random.default_rng(0)
feeds = {}
for port in compiled.inputs:
    shape = [d if d > 0 else 1 for d in port.get_partial_shape().get_min_shape()]
    dtype = port.get_element_type().to_dtype()
    feeds[port.get_any_name()] = (rng.integers(0, 2, shape).astype(dtype)
                                  if np.issubdtype(dtype, np.integer)
                                  else rng.uniform(-1, 1, shape).astype(dtype))
for _ in range(5):
    request.infer(feeds)
times = {}
for _ in range(runs):
    request.infer(feeds)
    for info in request.profiling_info:
        if info.status == ov.ProfilingInfo.Status.EXECUTED:
            key = (info.node_name, info.node_type, info.exec_type)
            times.setdefault(key, []).append(info.real_time.total_seconds())
print(json.dumps({
    "precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
    "version": ov.__version__,
    "nodes": [{"name": n, "type": t, "exec": e, "seconds": statistics.median(s)}
              for (n, t, e), s in times.items()]}))
"""

# Layer kinds, by OpenVINO node type and by GTCO step description (first word or op).
KINDS = [
    ("convolutions", ("Convolution", "GroupConvolution"), ("conv",)),
    ("matmuls", ("MatMul", "FullyConnected", "Gemm"), ("matmul",)),
    ("attention", ("ScaledDotProductAttention", "Softmax", "MHA"), ("attention", "softmax")),
    ("norms", ("MVN", "NormalizeL2", "LayerNorm", "RMS"), ("layernorm", "reduce_mean")),
    ("pooling", ("MaxPool", "AvgPool", "ReduceMean"), ("maxpool", "avgpool", "pool")),
    ("element-wise", ("Eltwise", "Add", "Multiply", "Relu", "Gelu", "Erf"), ("elementwise",)),
    # OpenVINO's snippets: a fused subgraph (its attention, or a chain of element-wise ops).
    ("fused subgraphs (OpenVINO)", ("Subgraph",), ()),
    ("data movement and casts", ("Reorder", "Transpose", "Reshape", "Concatenation", "Convert",
                                 "Gather", "Split", "StridedSlice", "Slice"),
     ("transpose", "cast", "cast_bf16_pairs", "split_bf16x3", "split_bf16x3_pairs", "slice",
      "concat", "gather", "copy", "expand", "where", "equal")),
]


def kind_of(word, openvino):
    for name, ov_types, gtco_words in KINDS:
        if word in (ov_types if openvino else gtco_words):
            return name
    return "other"


def openvino_profile(model, python, runs, precision):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([python, "-c", OPENVINO_PROFILER, model, str(runs), precision],
                         capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out)


def gtco_steps(artifact):
    """(kind, label, seconds) per step of `gtco-run --profile`."""
    steps = []
    for entry in gtco_profile(artifact)["profile"]:
        op, text = entry.get("op", ""), entry.get("description", "")
        # A kernel by its description's first word (conv, matmul, ...), a data step by its op.
        word = text.split()[0] if op == "kernel" and text else op
        steps.append((kind_of(word, False), f"{op} {text}".strip(), entry["seconds"]))
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("artifact")
    parser.add_argument("--openvino-python", default=DEFAULT_OPENVINO)
    parser.add_argument("--openvino-precision", choices=("f32", "default"), default="default")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    ov_result = openvino_profile(args.model, args.openvino_python, args.runs,
                                 args.openvino_precision)
    ov_steps = [(kind_of(n["type"], True), f"{n['type']} ({n['exec']}) {n['name']}", n["seconds"])
                for n in ov_result["nodes"]]
    ours = gtco_steps(args.artifact)
    totals = {}
    for side, steps in (("gtco", ours), ("openvino", ov_steps)):
        for kind, _, seconds in steps:
            totals.setdefault(kind, {"gtco": 0.0, "openvino": 0.0})[side] += seconds
    all_gtco = sum(s for _, _, s in ours)
    all_ov = sum(s for _, _, s in ov_steps)
    lines = [
        f"# Per layer kind: GTCO (`gtco-run --profile`) beside OpenVINO {ov_result['version']} "
        f"(PERF_COUNT, {ov_result['precision']})",
        "",
        f"Machine: {cpu_name()}. Commit: {commit()} (this script's; the artifact's binaries may be "
        f"older). Model: `{os.path.basename(args.model)}`; artifact: "
        f"`{os.path.basename(args.artifact)}`; OpenVINO's node times are medians over "
        f"{args.runs} runs; command: `bench/e2e/profile_beside_openvino.py "
        f"{' '.join(sys.argv[1:])}`.",
        "",
        "| layer kind | GTCO | share | OpenVINO | share | GTCO / OpenVINO |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, t in sorted(totals.items(), key=lambda item: -item[1]["gtco"]):
        ratio = f"{t['gtco'] / t['openvino']:.2f}" if t["openvino"] > 0 else "-"
        lines.append(f"| {kind} | {t['gtco'] * 1e3:.2f} ms | {100 * t['gtco'] / all_gtco:.0f} % | "
                     f"{t['openvino'] * 1e3:.2f} ms | {100 * t['openvino'] / all_ov:.0f} % | "
                     f"{ratio} |")
    lines.append(f"| all | {all_gtco * 1e3:.2f} ms | | {all_ov * 1e3:.2f} ms | | "
                 f"{all_gtco / all_ov:.2f} |")
    for title, steps in (("GTCO", ours), ("OpenVINO", ov_steps)):
        lines += ["", f"{title}'s slowest steps:", "", "| step | kind | time |", "|---|---|---:|"]
        for kind, label, seconds in sorted(steps, key=lambda step: -step[2])[:args.top]:
            lines.append(f"| {label[:100]} | {kind} | {seconds * 1e6:.0f} µs |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
