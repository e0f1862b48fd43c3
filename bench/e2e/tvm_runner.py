"""TVM MetaSchedule beside GTCO and ONNX Runtime in bench/e2e: imports an ONNX model with TVM's
Relax frontend, tunes it with MetaSchedule (trials_per_task x the tasks TVM extracts), builds it
for this host, and times it in a fresh process of its own (2 threads, median of N runs after
warm-up, peak RSS), saving its outputs as npy. Prints one JSON line last.

Runs under the TVM venv's interpreter (bench/e2e/install_tvm.sh), not the system python:

    .deps/tvm/bin/python bench/e2e/tvm_runner.py MODEL.onnx INPUTS_DIR OUT_DIR \
        [--trials-per-task 8] [--runs 50] [--threads 2] [--work-dir DIR] [--max-tasks N]

INPUTS_DIR holds {n}.npy for the model's n-th graph input (what run_exported.compare writes);
OUT_DIR receives {n}.npy for its n-th output. The JSON line: median_seconds, tuning_seconds
(MetaSchedule alone), build_seconds (schedules applied, compiled, exported), tasks (tuned),
tasks_extracted, tasks_dynamic (left untuned: symbolic shapes), trials (measured, failed ones
included), trial_errors, trials_per_task, peak_rss_bytes (the timing process),
tuning_peak_rss_bytes (the tuning process), version, target, weight_prepack, outputs, work_dir.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def hide_torch(work_dir):
    """tvm_ffi and tvm.relax try to JIT-compile a torch DLPack extension whenever torch imports
    (it fails with Debian's torch 1.13, after a few seconds), in this process and in every
    builder and runner worker MetaSchedule starts (its builder starts a new pool for each
    batch). Nothing here needs torch: a torch.py of our own first on PYTHONPATH makes `import torch` fail at once,
    here and in the children."""
    hidden = os.path.join(work_dir, "notorch")
    os.makedirs(hidden, exist_ok=True)
    with open(os.path.join(hidden, "torch.py"), "w") as out:
        out.write('raise ImportError("torch is hidden from bench/e2e/tvm_runner.py")\n')
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [hidden] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ["TVM_FFI_DISABLE_TORCH_C_DLPACK"] = "1"
    sys.modules["torch"] = None


def peak_rss_bytes():
    """This process's peak RSS: VmHWM, not getrusage's ru_maxrss, which a process started by
    fork and exec inherits from its parent (the timing process would report the tuning's)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def host_target(threads):
    import tvm
    from tvm.target import codegen

    # TVM 0.27 no longer parses "llvm -mcpu=... -num-cores N": targets are dicts.
    return tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(),
                              "num-cores": threads})


def graph_inputs(model):
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def load_inputs(model, inputs_dir):
    import numpy as np

    return [np.load(os.path.join(inputs_dir, f"{n}.npy"))
            for n in range(len(graph_inputs(model)))]


def static_shapes(mod):
    """Whether MetaSchedule can take the task `mod`: the check it fails on (ArgInfo of the entry
    function, which wants constant shapes)."""
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    try:
        ArgInfo.from_entry_func(mod, remove_preproc=True)
        return True
    except Exception:  # noqa: BLE001 (TypeError today: a symbolic dimension)
        return False


def tune_and_build(args):
    """Imports, tunes and builds `args.model`; writes the library to `args.library`. Returns the
    statistics of the tuning."""
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.s_tir import meta_schedule as ms

    model = onnx.load(args.model)
    names = graph_inputs(model)
    inputs = load_inputs(model, args.inputs_dir)
    mod = from_onnx(
        model, shape_dict={n: list(v.shape) for n, v in zip(names, inputs)},
        dtype_dict={n: str(v.dtype) for n, v in zip(names, inputs)}, keep_params_in_input=False)
    target = host_target(args.threads)
    work_dir = args.work_dir
    # relax.get_pipeline("static_shape_tuning", cpu_weight_prepack=...) step by step, so that
    # the tasks can be counted before the trials are budgeted: decompose, legalize and fuse;
    # MetaSchedule on the fused TIR functions; the best schedules applied; then tvm.compile's
    # default CPU pipeline. With the weight prepack (TVM's advice for CPUs) the tuned schedules
    # may rewrite the weights' layout; the weights are constants here (keep_params_in_input is
    # False), so FoldConstant applies those rewrites at build time and main's signature stays.
    prepack = [relax.transform.AttachAttrLayoutFreeBuffers()] if args.weight_prepack else []
    with target:
        mod = tvm.transform.Sequential([
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
            relax.pipeline.zero_pipeline(),
            *prepack,
        ])(mod)
    extracted = ms.relax_integration.extract_tasks(mod, target)
    extracted.sort(key=lambda t: -t.weight)
    # MetaSchedule takes static shapes only (ArgInfo::FromEntryFunc fails on a symbolic one).
    # The ONNX frontend leaves a few shape computations dynamic in torchvision's ViT (reshape,
    # shape_func, dynamic_strided_slice around the attention): those stay untuned, as
    # static_shape_tuning would not get past them at all.
    extracted_count = len(extracted)
    dynamic = [t for t in extracted if not static_shapes(t.dispatched[0])]
    extracted = [t for t in extracted if static_shapes(t.dispatched[0])]
    if args.tasks_only:
        return {"tasks": len(extracted), "names": [t.task_name for t in extracted],
                "weights": [int(t.weight) for t in extracted],
                "dynamic": [t.task_name for t in dynamic]}
    if dynamic:
        log(f"tvm: {len(dynamic)} tasks with symbolic shapes left untuned: "
            + ", ".join(t.task_name for t in dynamic))
    if args.max_tasks:
        extracted = extracted[:args.max_tasks]
    contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
        extracted, work_dir, num_threads=args.threads, seed=args.seed)
    log(f"tvm: {len(contexts)} tuning tasks, {args.trials_per_task} trials each, target {target}")
    scheduler = ms.TaskScheduler.create("gradient")
    start = time.time()
    database = ms.tune_tasks(
        tasks=contexts, task_weights=weights, work_dir=work_dir,
        max_trials_global=args.trials_per_task * len(contexts),
        max_trials_per_task=args.trials_per_task,
        num_trials_per_iter=args.trials_per_iter, task_scheduler=scheduler)
    tuning_seconds = time.time() - start
    # Every measured candidate is a record, failed ones too (their run_secs are 1e10).
    records = database.get_all_tuning_records()
    errors = sum(1 for r in records if not r.run_secs or min(float(x) for x in r.run_secs) >= 1e9)
    start = time.time()
    with target, database:
        mod = relax.transform.MetaScheduleApplyDatabase(work_dir)(mod)
        if args.weight_prepack:
            mod = tvm.transform.Sequential([
                relax.transform.SplitLayoutRewritePreproc(),
                relax.transform.LiftTransformParams(),
                relax.transform.FoldConstant(),
            ])(mod)
    executable = tvm.compile(mod, target=target)
    executable.export_library(args.library)
    build_seconds = time.time() - start
    return {"tuning_seconds": tuning_seconds, "build_seconds": build_seconds,
            "tasks": len(contexts), "tasks_extracted": extracted_count,
            "tasks_dynamic": len(dynamic), "trials": len(records),
            "trial_errors": errors, "trials_per_task": args.trials_per_task,
            "target": str(target), "weight_prepack": args.weight_prepack, "work_dir": work_dir}


def run(args):
    """Loads `args.library`, runs it on the inputs (warm-up, then args.runs timed runs), saves
    the outputs. Its own process, with TVM's runtime library only (TVM_USE_RUNTIME_LIB=1, as a
    deployment would; not the 250 MB compiler library): the peak RSS is the model's and the
    runtime's."""
    import re

    import numpy as np
    import tvm
    from tvm.runtime.vm import VirtualMachine

    # Not onnx.load: the model's weights would count in this process's peak RSS.
    count = sum(1 for f in os.listdir(args.inputs_dir) if re.fullmatch(r"\d+\.npy", f))
    inputs = [np.load(os.path.join(args.inputs_dir, f"{n}.npy")) for n in range(count)]
    device = tvm.cpu()
    vm = VirtualMachine(tvm.runtime.load_module(args.library), device)
    feeds = [tvm.runtime.tensor(v, device) for v in inputs]
    main = vm["main"]
    for _ in range(5):
        outputs = main(*feeds)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        main(*feeds)
        times.append(time.perf_counter() - start)
    if isinstance(outputs, tvm.runtime.Tensor):
        outputs = [outputs]
    os.makedirs(args.out_dir, exist_ok=True)
    for n, value in enumerate(outputs):
        np.save(os.path.join(args.out_dir, f"{n}.npy"), value.numpy())
    times.sort()
    return {"median_seconds": times[len(times) // 2], "version": tvm.__version__,
            "peak_rss_bytes": peak_rss_bytes(), "outputs": len(outputs)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("inputs_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--trials-per-task", type=int, default=8)
    parser.add_argument("--trials-per-iter", type=int, default=64,
                        help="MetaSchedule's num_trials_per_iter (its default, 64)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", help="MetaSchedule's logs and database (default: a temp dir)")
    parser.add_argument("--max-tasks", type=int, default=0,
                        help="tune only the N tasks of most weight (occurrences in the "
                             "model): a quick check; 0: all")
    parser.add_argument("--no-weight-prepack", dest="weight_prepack", action="store_false",
                        help="keep the weights' layout (static_shape_tuning's default; the "
                             "prepack is its advice for CPUs, and the default here)")
    parser.add_argument("--library", help="the built model (default: WORK_DIR/model.so)")
    parser.add_argument("--tasks-only", action="store_true",
                        help="only import the model and print the tasks MetaSchedule extracts")
    parser.add_argument("--run-only", action="store_true",
                        help="only load --library and time it (what the timing process does)")
    args = parser.parse_args()
    # The runtime's thread pool reads TVM_NUM_THREADS when it starts; the tuning's measurements
    # run in child processes that inherit it.
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    if args.run_only:
        if not args.library:
            parser.error("--run-only needs --library")
        hide_torch(os.path.dirname(os.path.abspath(args.library)))
        print(json.dumps(run(args)), flush=True)
        return 0
    if not args.work_dir:
        args.work_dir = tempfile.mkdtemp(prefix="gtco-e2e-tvm-")
    if not args.library:
        args.library = os.path.join(args.work_dir, "model.so")
    hide_torch(args.work_dir)
    stats = tune_and_build(args)
    if args.tasks_only:
        print(json.dumps(stats), flush=True)
        return 0
    stats["tuning_peak_rss_bytes"] = peak_rss_bytes()
    timed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), args.model, args.inputs_dir, args.out_dir,
         "--run-only", "--library", args.library, "--runs", str(args.runs),
         "--threads", str(args.threads)], capture_output=True, text=True,
        env=dict(os.environ, TVM_USE_RUNTIME_LIB="1"))
    if timed.returncode != 0:
        log(timed.stderr)
        raise RuntimeError(f"the timing process failed ({timed.returncode})")
    result = json.loads(timed.stdout.strip().splitlines()[-1])
    result.update(stats)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
