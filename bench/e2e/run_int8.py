#!/usr/bin/python3
"""Int8 end to end: ONNX Runtime's dynamic quantization (quantize_dynamic, s8 weights) or static
quantization in the QDQ format of BERT-base and ViT-B/16, tuned by GTCO and timed against ONNX
Runtime's and OpenVINO's runs of the same int8 file; accuracy of each against the fp32 model they
came from.

    PYTHONPATH=.deps/python bench/e2e/run_int8.py [--models bert_base,vit_b_16]
        [--trials-per-task 48] [--runs 50] [--rounds 5] [--format dynamic|qdq]
        [--openvino-python .deps/openvino/bin/python | --no-openvino]

Each model: exported by torch as bench/e2e/run_e2e.py does (opset 17, random weights, batch 1),
quantized by onnxruntime.quantization.quantize_dynamic (with .deps/onnx-quant first on the path:
scripts/setup.sh --tests puts onnx 1.16 there), tuned on a local farm, exported for this host and
run by gtco-run beside ONNX Runtime (ORT_ENABLE_ALL, 2 threads each, alternating processes:
bench/e2e/run_exported.py) and, where its venv is there (bench/e2e/install_openvino.sh), OpenVINO
(PERFORMANCE_HINT=LATENCY, 2 threads; its low-precision transformations run the quantized ops in
int8, the others at INFERENCE_PRECISION_HINT=f32 and at its default precision, bf16 on
AVX512-BF16 CPUs). ONNX Runtime also runs the fp32 model on the same inputs, for the
speed users have today and for the accuracy columns. Writes bench/results/e2e_int8.md.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import EXPORT_SCRIPT, Farm  # noqa: E402
from run_exported import (DEFAULT_OPENVINO, ORT_RUNNER, ROOT, compare, cpu_name,  # noqa: E402
                          scratch_dir)

QUANTIZE_SCRIPT = r"""
import sys
import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
fp32, out, weights, form = sys.argv[1:5]
if form == "dynamic":
    quantize_dynamic(fp32, out, weight_type=getattr(QuantType, weights))
else:
    class Reader(CalibrationDataReader):  # 8 random inputs, fixed seed
        def __init__(self):
            rng = np.random.default_rng(0)
            graph = onnx.load(fp32).graph
            inputs = [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim],
                       i.type.tensor_type.elem_type) for i in graph.input]
            def one(name, shape, elem):
                if elem == onnx.TensorProto.INT64:
                    high = 2 if "mask" in name else 1000
                    return np.ones(shape, np.int64) if "mask" in name else \
                        rng.integers(0, high, shape).astype(np.int64)
                return rng.standard_normal(shape).astype(np.float32)
            self.items = iter([{n: one(n, s, e) for n, s, e in inputs} for _ in range(8)])
        def get_next(self):
            return next(self.items, None)
    quantize_static(fp32, out, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=getattr(QuantType, weights))
"""
# s8 weights (ONNX Runtime's advice for AVX-512 VNNI), except where a dynamically quantized model
# has a Conv: ONNX Runtime's ConvInteger runs u8 x u8 only, so ViT's patch embedding needs u8
# weights to run there (QDQ's QLinearConv takes s8 weights).
WEIGHT_TYPES = {"vit_b_16": "QUInt8"}


def rel_diff(got, want):
    """max |got - want| / max |want| over a list of output pairs."""
    worst = 0.0
    for g, w in zip(got, want):
        worst = max(worst, float(np.max(np.abs(g - w))) / max(float(np.max(np.abs(w))), 1e-30))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert_base,vit_b_16")
    parser.add_argument("--trials-per-task", type=int, default=48)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--format", choices=["dynamic", "qdq"], default="dynamic",
                        help="quantize_dynamic (default) or quantize_static in the QDQ format, "
                             "calibrated on 8 random inputs")
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "results", "e2e_int8.md"))
    parser.add_argument("--openvino-python",
                        default=DEFAULT_OPENVINO if os.path.exists(DEFAULT_OPENVINO) else None,
                        help="OpenVINO's venv interpreter (bench/e2e/install_openvino.sh)")
    parser.add_argument("--no-openvino", action="store_true")
    args = parser.parse_args()
    openvino = None if args.no_openvino else args.openvino_python
    quant_path = os.path.join(ROOT, ".deps", "onnx-quant")
    if not os.path.isdir(quant_path):
        parser.error(".deps/onnx-quant is missing: run scripts/setup.sh --tests")
    work = scratch_dir("gtco-int8-farm-")
    rows = []
    for name in args.models.split(","):
        fp32 = os.path.join(work, f"{name}.onnx")
        int8 = os.path.join(work, f"{name}.int8.onnx")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.join(ROOT, ".deps", "transformers"), os.environ.get("PYTHONPATH", "")]))
        subprocess.run(["/usr/bin/python3", "-c", EXPORT_SCRIPT, name, fp32], check=True,
                       capture_output=True, env=env)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [quant_path, os.path.join(ROOT, ".deps", "python")]))
        weights = WEIGHT_TYPES.get(name, "QInt8") if args.format == "dynamic" else "QInt8"
        subprocess.run(["/usr/bin/python3", "-c", QUANTIZE_SCRIPT, fp32, int8, weights,
                        args.format], check=True, capture_output=True, env=env)
        artifact = os.path.join(work, f"{name}.int8.gtco")
        farm = Farm(work, name)
        try:
            tasks, trials, tuning_seconds, _ = farm.tune_and_export(
                int8, args.trials_per_task, artifact)
        finally:
            farm.stop()
        result = compare(int8, artifact, args.runs, args.rounds, openvino=openvino)
        inputs = result["work"]
        # ONNX Runtime on the fp32 model, same inputs, same rounds and runs per round.
        per_round = max(1, -(-args.runs // args.rounds))
        fp32_out = os.path.join(inputs, "ort_fp32")
        os.makedirs(fp32_out, exist_ok=True)
        fp32_rounds = [json.loads(subprocess.run(
            [sys.executable, "-c", ORT_RUNNER, fp32, inputs, str(per_round), fp32_out],
            capture_output=True, text=True, check=True).stdout) for _ in range(args.rounds)]
        fp32_seconds = sorted(r["median_seconds"] for r in fp32_rounds)[args.rounds // 2]
        count = len(result["gtco"]["outputs_written"])
        want = [np.load(f"{fp32_out}/{n}.npy") for n in range(count)]
        ort_int8 = [np.load(f"{inputs}/ort/{n}.npy") for n in range(count)]
        gtco = [np.load(w["path"]) for w in result["gtco"]["outputs_written"]]
        row = {"name": name, "weights": {"QInt8": "s8", "QUInt8": "u8"}[weights], "tasks": tasks, "trials": trials, "tuning": tuning_seconds,
               "gtco": result["gtco"]["median_seconds"], "ort": result["ort"]["median_seconds"],
               "ort_fp32": fp32_seconds, "vs_ort": result["worst_rel_diff"],
               "gtco_vs_fp32": rel_diff(gtco, want), "ort_vs_fp32": rel_diff(ort_int8, want),
               "tuned": result["tuned"], "kernels": result["kernels"], "openvino": {}}
        for precision, ov in result["openvino"].items():
            got = [np.load(f"{inputs}/openvino-{precision}/{n}.npy").astype(np.float32)
                   for n in range(count)]
            row["openvino"][precision] = {"seconds": ov["median_seconds"],
                                          "precision": ov["precision"],
                                          "version": ov["version"],
                                          "vs_fp32": rel_diff(got, want)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    command = " ".join(["bench/e2e/run_int8.py"] + sys.argv[1:])
    quantizer = (
        "quantize_dynamic (weights per tensor, s8, or u8 where the model has a Conv because "
        "ONNX Runtime's ConvInteger takes u8 x u8 only; u8 activations quantized at run time by "
        "DynamicQuantizeLinear)" if args.format == "dynamic" else
        "quantize_static in the QDQ format (u8 activations calibrated on 8 random inputs, "
        "weights per tensor, s8 or u8 as for dynamic quantization; QuantizeLinear / "
        "DequantizeLinear around the quantized ops)")
    ov_versions = sorted({ov["version"] for r in rows for ov in r["openvino"].values()})
    with_ov = bool(ov_versions)
    lines = [
        "# Int8 end to end: ONNX Runtime-quantized models"
        + (" (QDQ)" if args.format == "qdq" else "") + ", GTCO vs ONNX Runtime"
        + (" and OpenVINO" if with_ov else ""),
        "",
        f"Machine: {cpu_name()}; {datetime.date.today()}; command: "
        f"`PYTHONPATH=.deps/python {command}`.",
        "Each model: torch.onnx.export (opset 17, random weights, batch 1), then ONNX Runtime's "
        f"{quantizer}; GTCO tuned the int8 file on a local farm "
        f"({args.trials_per_task} trials per task) and exported it; gtco-run and ONNX Runtime "
        "(ORT_ENABLE_ALL, which fuses the patterns into its own int8 operators) ran the "
        f"same int8 file, 2 threads each, {args.rounds} alternating rounds; ONNX Runtime also "
        "ran the fp32 model on the same inputs. Differences are max |a - b| / max |b| over the "
        "outputs.",
    ]
    if with_ov:
        lines.append(
            f"OpenVINO {', '.join(ov_versions)} ran the same int8 file in the same rounds "
            "(PERFORMANCE_HINT=LATENCY, INFERENCE_NUM_THREADS=2): its low-precision "
            "transformations run the quantized ops in int8, the rest at "
            "INFERENCE_PRECISION_HINT=f32 (\"OV int8, f32 rest\") and at its default precision "
            "(\"OV int8, default rest\": bf16 on CPUs with AVX512-BF16 or AMX).")
    ov_head = (" OV int8, f32 rest | GTCO vs it | OV int8, default rest | GTCO vs it |"
               if with_ov else "")
    lines += [
        "",
        "| model | weights | tasks | trials | tuning wall | GTCO int8 | ORT int8 | GTCO vs ORT int8 |"
        + ov_head + " ORT fp32 | GTCO int8 vs ORT fp32 | diff GTCO / ORT int8 | diff vs fp32: "
        "GTCO / ORT" + (" / OV f32 rest / OV default rest" if with_ov else "") + " |",
        "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if with_ov else "")
        + "---:|---:|---:|---:|",
    ]
    for r in rows:
        ov_cells, ov_diffs = "", ""
        if with_ov:
            for precision in ("f32", "default"):
                ov = r["openvino"].get(precision)
                ov_cells += (f" {ov['seconds'] * 1e3:.2f} ms | {ov['seconds'] / r['gtco']:.2f}x |"
                             if ov else " - | - |")
                ov_diffs += f" / {ov['vs_fp32']:.1e}" if ov else " / -"
        lines.append(
            f"| {r['name']} | {r['weights']} | {r['tasks']} | {r['trials']} | {r['tuning']:.0f} s | "
            f"{r['gtco'] * 1e3:.2f} ms | {r['ort'] * 1e3:.2f} ms | {r['ort'] / r['gtco']:.2f}x |"
            f"{ov_cells} "
            f"{r['ort_fp32'] * 1e3:.2f} ms | {r['ort_fp32'] / r['gtco']:.2f}x | "
            f"{r['vs_ort']:.1e} | {r['gtco_vs_fp32']:.1e} / {r['ort_vs_fp32']:.1e}{ov_diffs} |")
    with open(args.output, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
