#!/usr/bin/python3
"""bf16 end to end: the fp32 exports of ViT-B/16 and BERT-base tuned and exported by GTCO with
`--precision bf16` (each MatMul or Gemm with constant weights computed on bf16 operands with f32
sums and epilogues) or `--precision bf16x3` (the same MatMuls as three bf16 products of split
operands, near f32 accuracy), timed against ONNX Runtime's fp32 run of the same fp32 file, with
the accuracy lost.

    PYTHONPATH=.deps/python bench/e2e/run_bf16.py [--models vit_b_16,bert_base]
        [--precision bf16|bf16x3] [--trials-per-task 48] [--runs 50] [--rounds 5]

Each model: exported by torch as bench/e2e/run_e2e.py does (opset 17, random weights, batch 1);
a local farm tunes it with gtco-client's --precision bf16 and exports it for this host; gtco-run
and ONNX Runtime (ORT_ENABLE_ALL, fp32: it has no bf16 CPU kernels for these models) run on the
same inputs, 2 threads each, alternating processes (bench/e2e/run_exported.py). Needs a host
with AVX-512 BF16 (or AMX): elsewhere the bf16 tasks find no mapping and the run stops; bf16x3
pays only with AMX (three AVX-512 BF16 products cost more than one f32 FMA product). Writes
bench/results/e2e_bf16.md (bf16x3: e2e_bf16x3.md).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import EXPORT_SCRIPT, Farm  # noqa: E402
from run_exported import ROOT, compare, cpu_name, scratch_dir  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="vit_b_16,bert_base")
    parser.add_argument("--trials-per-task", type=int, default=48)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--precision", choices=["bf16", "bf16x3"], default="bf16")
    parser.add_argument("--output", help="default bench/results/e2e_PRECISION.md")
    args = parser.parse_args()
    precision = args.precision
    output = args.output or os.path.join(ROOT, "bench", "results", f"e2e_{precision}.md")
    with open("/proc/cpuinfo") as cpuinfo:
        if not any(line.startswith("flags") and " avx512_bf16" in line for line in cpuinfo):
            parser.error("this host has no AVX-512 BF16: the bf16 kernels cannot run here")
    work = scratch_dir("gtco-bf16-farm-")
    rows = []
    for name in args.models.split(","):
        fp32 = os.path.join(work, f"{name}.onnx")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.join(ROOT, ".deps", "transformers"), os.environ.get("PYTHONPATH", "")]))
        subprocess.run(["/usr/bin/python3", "-c", EXPORT_SCRIPT, name, fp32], check=True,
                       capture_output=True, env=env)
        artifact = os.path.join(work, f"{name}.{precision}.gtco")
        farm = Farm(work, name)
        try:
            tasks, trials, tuning_seconds, _ = farm.tune_and_export(
                fp32, args.trials_per_task, artifact, precision=precision)
        finally:
            farm.stop()
        result = compare(fp32, artifact, args.runs, args.rounds)
        # The same model tuned and exported in f32, timed beside ONNX Runtime the same way: how
        # much of the speed-up is the precision's.
        artifact_f32 = os.path.join(work, f"{name}.f32.gtco")
        farm = Farm(work, f"{name}-f32")
        try:
            farm.tune_and_export(fp32, args.trials_per_task, artifact_f32)
        finally:
            farm.stop()
        result_f32 = compare(fp32, artifact_f32, args.runs, args.rounds)
        row = {"name": name, "tasks": tasks, "trials": trials, "tuning": tuning_seconds,
               "gtco": result["gtco"]["median_seconds"], "ort": result["ort"]["median_seconds"],
               "gtco_f32": result_f32["gtco"]["median_seconds"],
               "ort_f32_run": result_f32["ort"]["median_seconds"],
               "vs_ort": result["worst_rel_diff"], "f32_vs_ort": result_f32["worst_rel_diff"],
               "tuned": result["tuned"], "kernels": result["kernels"]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    command = " ".join(["bench/e2e/run_bf16.py"] + sys.argv[1:])
    how = {
        "bf16": "its MatMuls with constant weights on bf16 operands: weights stored in bf16, "
                "activations rounded to bf16 by a cast step, f32 sums",
        "bf16x3": "its MatMuls with constant weights as three bf16 products of split operands, "
                  "A_hi B_hi + A_lo B_hi + A_hi B_lo (hi: the value rounded to bf16, lo: the "
                  "residual rounded to bf16), one bf16 MatMul over 3K with f32 sums: weights "
                  "stored as [B_hi; B_hi; B_lo], each activation split into [A_hi | A_lo | "
                  "A_hi] by one runtime step",
    }[precision]
    lines = [
        f"# {precision} end to end: GTCO's --precision {precision} vs ONNX Runtime fp32",
        "",
        f"Machine: {cpu_name()}; {datetime.date.today()}; command: "
        f"`PYTHONPATH=.deps/python {command}`.",
        "Each model: torch.onnx.export (opset 17, random weights, batch 1); GTCO tuned it with "
        f"`gtco-client submit --precision {precision}` ({how}; "
        "bias and activation fused as before; plain Gemms the same way; attention's MatMuls and "
        "convolutions in f32) "
        f"on a local farm ({args.trials_per_task} trials per task) and exported it the same way; "
        "gtco-run and ONNX Runtime (ORT_ENABLE_ALL, fp32) ran on the same inputs, 2 threads "
        f"each, {args.rounds} alternating rounds. The same model was also tuned and exported in "
        "f32 on a second farm and timed beside ONNX Runtime the same way (its own rounds: the "
        "ORT column of that comparison is the second ORT figure). The difference is max |GTCO - "
        f"ORT| / max |ORT| over the outputs: the accuracy {precision} operands cost.",
        "",
        f"| model | tasks | trials | tuning wall | GTCO {precision} | ORT fp32 | {precision} vs ORT "
        "| GTCO f32 | ORT fp32 (its rounds) | f32 vs ORT | "
        f"diff {precision} / f32 vs ORT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['tasks']} | {r['trials']} | {r['tuning']:.0f} s | "
            f"{r['gtco'] * 1e3:.2f} ms | {r['ort'] * 1e3:.2f} ms | {r['ort'] / r['gtco']:.2f}x | "
            f"{r['gtco_f32'] * 1e3:.2f} ms | {r['ort_f32_run'] * 1e3:.2f} ms | "
            f"{r['ort_f32_run'] / r['gtco_f32']:.2f}x | {r['vs_ort']:.1e} / {r['f32_vs_ort']:.1e} |")
    with open(output, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
