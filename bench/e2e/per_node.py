#!/usr/bin/python3
"""An exported model's kernels against ONNX Runtime's, node by node: the artifact profiled by
`gtco-run --profile` (2 threads) and the ONNX model by ONNX Runtime (`SessionOptions.
enable_profiling`, 2 threads, the median of each node's kernel time over the runs after the
warm-up) in turn, for a few rounds, each node's time the median of its rounds' (on a shared VM
a whole profile can come out twice as slow when a core is taken away); matched by node name,
summed per workload description (a bottleneck's five 14x14 3x3 convolutions are one line).
Profiling slows both runtimes a little; the ratios are what this is for, not the totals.

    PYTHONPATH=.deps/python bench/e2e/per_node.py MODEL.onnx ARTIFACT.gtco [--runs N] [--rounds R]

ONNX Runtime names a fused node (Conv+Relu, Conv+Add+Relu in its NCHWc layout) after its output,
e.g. "/layer1/layer1.0/relu/Relu_output_0_nchwc"; a GTCO step names every node it fused
("/layer1/layer1.0/conv1/Conv+/layer1/layer1.0/relu/Relu"): a step matches the ORT node named
after the last of its nodes that ORT has.
"""
import argparse
import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from where_time_goes import gtco_profile  # noqa: E402


def ort_node_seconds(model, runs, threads=2):
    """{node name without ORT's output suffixes: median kernel seconds per run}."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as scratch:
        options.profile_file_prefix = os.path.join(scratch, "ort")
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(1)
        feeds = {}
        for tensor in session.get_inputs():
            shape = [d if isinstance(d, int) else 1 for d in tensor.shape]
            dtype = np.int64 if "int64" in tensor.type else np.float32
            feeds[tensor.name] = (rng.integers(0, 2, shape) if dtype == np.int64
                                  else rng.uniform(-1, 1, shape)).astype(dtype)
        warmup = 5
        for _ in range(warmup + runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as file:
            events = json.load(file)
    per_node = collections.defaultdict(list)
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            per_node[name[:-len("_kernel_time")]].append(event["dur"] * 1e-6)
    result = {}
    for name, seconds in per_node.items():
        kept = sorted(seconds[warmup:] or seconds)
        for suffix in ("_output_0_nchwc", "_output_0"):
            if name.endswith(suffix):
                name = name[:-len(suffix)]
                break
        result[name] = kept[len(kept) // 2]
    return result


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def compare(model, artifact, runs, rounds):
    """Rows (description, steps, GTCO seconds, ORT seconds) by GTCO's excess over ORT, and the
    totals (GTCO profiled, ORT profiled, GTCO matched, ORT matched)."""
    ort_rounds, gtco_rounds = [], []
    for _ in range(rounds):
        ort_rounds.append(ort_node_seconds(model, runs))
        gtco_rounds.append(gtco_profile(artifact)["profile"])
    ort = {name: median([profile[name] for profile in ort_rounds if name in profile])
           for name in ort_rounds[0]}
    steps = gtco_rounds[0]
    for index, step in enumerate(steps):
        step["seconds"] = median([profile[index]["seconds"] for profile in gtco_rounds])
    rows = collections.defaultdict(lambda: [0, 0.0, 0.0])
    matched_gtco = matched_ort = 0.0
    for step in steps:
        ort_seconds = next((ort[node] for node in reversed(step["node"].split("+"))
                            if node in ort), None)
        if ort_seconds is None:
            continue
        row = rows[step.get("description") or step["node"]]
        row[0] += 1
        row[1] += step["seconds"]
        row[2] += ort_seconds
        matched_gtco += step["seconds"]
        matched_ort += ort_seconds
    ordered = sorted(((d, n, g, o) for d, (n, g, o) in rows.items()),
                     key=lambda row: row[3] - row[2])
    totals = (sum(step["seconds"] for step in steps), sum(ort.values()), matched_gtco,
              matched_ort)
    return ordered, totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("artifact")
    parser.add_argument("--runs", type=int, default=20,
                        help="profiled runs of ONNX Runtime per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the two in turn")
    args = parser.parse_args()
    rows, (gtco, ort, matched_gtco, matched_ort) = compare(args.model, args.artifact, args.runs,
                                                           args.rounds)
    print(f"Profiled (medians of {args.rounds} rounds): GTCO {gtco * 1e3:.2f} ms, ONNX Runtime {ort * 1e3:.2f} ms; matched "
          f"steps {matched_gtco * 1e3:.2f} vs {matched_ort * 1e3:.2f} ms "
          f"({matched_gtco / matched_ort:.2f}x the time).\n")
    print("| kernel | steps | GTCO ms | ORT ms | GTCO / ORT | excess ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for description, count, gtco_seconds, ort_seconds in rows:
        print(f"| {description} | {count} | {gtco_seconds * 1e3:.2f} | {ort_seconds * 1e3:.2f} | "
              f"{gtco_seconds / ort_seconds:.2f} | {(gtco_seconds - ort_seconds) * 1e3:+.2f} |")


if __name__ == "__main__":
    main()
