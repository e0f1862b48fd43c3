#!/usr/bin/python3
"""Where an exported model's time goes, against the machine's limits: each artifact profiled by
`gtco-run --profile` (2 threads), its kernels split into compute-bound ones (matmuls, convolutions,
attention: rated in GFLOP/s against the FMA peak) and memory-bound ones (rated in GB/s of their
minimum traffic against the triad bandwidth: of DRAM, and of 12 MiB arrays, which stay in a
server's L3 as a batch-1 model's activations do), the limits measured by build/bench/machine_peak
in the same run. The floor is the time the model would take with every compute-bound kernel at
the FMA peak and every memory-bound one at the 12 MiB triad's bandwidth, the rest as measured;
with a baseline's time it says the most any schedule of this plan could gain over that baseline.

    bench/e2e/where_time_goes.py NAME=ARTIFACT[:BASELINE_SECONDS] ... [--markdown]

run_e2e.py appends its table to bench/results/e2e.md.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_exported import GTCO_RUN, ROOT  # noqa: E402


def machine_limits(threads=2):
    """{"gflops": best fp32 FMA peak of any ISA on `threads` threads, "bf16_gflops": the AVX-512
    BF16 dot-product peak (None without avx512_bf16), "gbytes": DRAM triad GB/s, "cache_gbytes":
    12 MiB triad GB/s}."""
    out = subprocess.run([os.path.join(ROOT, "build", "bench", "machine_peak"), "--threads",
                          str(threads), "--json"], capture_output=True, text=True, check=True).stdout
    peak = json.loads(out)
    bf16 = peak.get("dot_peaks", {}).get("avx512_bf16")
    return {"gflops": max(isa[str(threads)] for isa in peak["gflops"].values()),
            "bf16_gflops": bf16[str(threads)] if bf16 else None,
            "gbytes": peak["triad_gbytes"][str(threads)],
            "cache_gbytes": peak["cache_triad_gbytes"][str(threads)], "isas": peak["gflops"]}


def gtco_profile(artifact, threads=2):
    """`gtco-run ARTIFACT --random-inputs --profile --json`: "profile" (one entry per step, its
    median over the warm profile runs) and "profile_summary"."""
    return json.loads(subprocess.run(
        [GTCO_RUN, artifact, "--random-inputs", "--profile", "--threads", str(threads), "--json"],
        capture_output=True, text=True, check=True).stdout)


def analyse(artifact, limits, baseline_seconds=None, threads=2, precision="f32"):
    """The artifact's profile (each step's median over gtco-run's warm profile runs) against
    `limits` (a bf16 model's compute-bound kernels against the bf16 dot-product peak where the
    machine has one); with `baseline_seconds`, the most this plan could gain over that
    baseline."""
    summary = gtco_profile(artifact, threads)["profile_summary"]
    compute, memory = summary["compute_bound"], summary["memory_bound"]
    other = summary["other_steps"]
    bf16 = precision == "bf16" and limits.get("bf16_gflops")
    peak = limits["bf16_gflops"] if bf16 else limits["gflops"]
    floor = (compute["flops"] / (peak * 1e9)
             + memory["min_bytes"] / (limits["cache_gbytes"] * 1e9) + other["seconds"])
    row = {
        "seconds": summary["seconds"],
        "compute_seconds": compute["seconds"],
        "compute_gflops": compute["flops"] / compute["seconds"] * 1e-9 if compute["seconds"] else 0,
        "memory_seconds": memory["seconds"],
        "memory_gbytes": memory["min_bytes"] / memory["seconds"] * 1e-9 if memory["seconds"] else 0,
        "other_seconds": other["seconds"],
        "floor_seconds": floor,
        "peak": "bf16 dot" if bf16 else "FMA",
    }
    row["peak_share"] = row["compute_gflops"] / peak
    row["bandwidth_share"] = row["memory_gbytes"] / limits["gbytes"]
    row["cache_bandwidth_share"] = row["memory_gbytes"] / limits["cache_gbytes"]
    if baseline_seconds:
        row["baseline_seconds"] = baseline_seconds
        row["best_speedup"] = baseline_seconds / floor
    return row


def markdown(rows, limits):
    isas = ", ".join(f"{name} {values['2']:.0f}" for name, values in limits["isas"].items())
    lines = [
        "## Where the time goes (gtco-run --profile, 2 threads)",
        "",
        f"Machine limits measured in the same run by `build/bench/machine_peak --threads 2`: fp32 "
        f"FMA peak {limits['gflops']:.0f} GFLOP/s ({isas})"
        + (f", AVX-512 BF16 dot-product peak {limits['bf16_gflops']:.0f} GFLOP/s (a bf16 "
           "model's compute-bound kernels are rated against it)" if limits.get("bf16_gflops")
           else "") + ", triad bandwidth "
        f"{limits['gbytes']:.1f} GB/s from DRAM and {limits['cache_gbytes']:.1f} GB/s over "
        "12 MiB arrays (in L3). Compute-bound kernels (≥ 8 operations per byte of their "
        "minimum traffic: matmuls, convolutions, attention) are rated against the peak, "
        "memory-bound ones against both bandwidths (DRAM / 12 MiB: their tensors usually fit "
        "in L3). The floor is the model's time with each compute-bound kernel at the peak and "
        "each memory-bound one at the 12 MiB bandwidth, the other steps as measured; \"most "
        "over ORT\" is ONNX Runtime's time over that floor: what any schedule of this plan at "
        "its precision could reach at best.",
        "",
        "| model | profiled | compute-bound kernels | of peak | memory-bound kernels | "
        "of bandwidth (DRAM / 12 MiB) | other steps | floor | ONNX Runtime | most over ORT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows:
        ms = lambda seconds: f"{seconds * 1e3:.1f} ms"  # noqa: E731
        share = lambda seconds: f"{100 * seconds / row['seconds']:.0f} %"  # noqa: E731
        lines.append(
            f"| {name} | {ms(row['seconds'])} | {ms(row['compute_seconds'])} "
            f"({share(row['compute_seconds'])}), {row['compute_gflops']:.0f} GFLOP/s | "
            f"{100 * row['peak_share']:.0f} % ({row['peak']}) | {ms(row['memory_seconds'])} "
            f"({share(row['memory_seconds'])}), {row['memory_gbytes']:.1f} GB/s | "
            f"{100 * row['bandwidth_share']:.0f} % / {100 * row['cache_bandwidth_share']:.0f} % | "
            f"{ms(row['other_seconds'])} | "
            f"{ms(row['floor_seconds'])} | "
            + (f"{ms(row['baseline_seconds'])} | {row['best_speedup']:.2f}x |"
               if "baseline_seconds" in row else "- | - |"))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="+", help="NAME=ARTIFACT[:BASELINE_SECONDS]")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    limits = machine_limits()
    rows = []
    for item in args.artifacts:
        name, rest = item.split("=", 1)
        path, _, baseline = rest.partition(":")
        rows.append((name, analyse(path, limits, float(baseline) if baseline else None)))
    if args.markdown:
        print(markdown(rows, limits), end="")
    else:
        print(json.dumps({"limits": limits, "models": dict(rows)}, indent=1))


if __name__ == "__main__":
    main()
