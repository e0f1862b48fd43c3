#!/usr/bin/python3
"""End to end: real models exported from PyTorch, tuned on a local farm, exported as artifacts and
run with gtco-run beside ONNX Runtime (2 threads each, batch 1, each in its own process, median
of N runs after warm-up, peak RSS, outputs compared). Writes bench/results/e2e.md.

    PYTHONPATH=.deps/python bench/e2e/run_e2e.py [--models resnet50,vit_b_16,bert_base]
        [--trials-per-task 8] [--runs 50] [--bert-python /path/to/venv/bin/python]

BERT needs `transformers` (a venv with --system-site-packages and pip install
"transformers<4.40"; --bert-python names its interpreter). TVM MetaSchedule is not in this
table yet.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_exported import ROOT, compare, cpu_name  # noqa: E402

BUILD = os.path.join(ROOT, "build")
EXPORT_SCRIPT = r"""
import sys, torch
name, path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if name.startswith("bert"):
    from transformers import BertConfig, BertModel
    config = BertConfig() if name == "bert_base" else BertConfig(
        num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,vit_b_16,bert_base")
    parser.add_argument("--trials-per-task", type=int, default=8)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--bert-python", default=sys.executable)
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "results", "e2e.md"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="gtco-e2e-farm-")
    address = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen([os.path.join(BUILD, "server", "gtco-server"), "--listen", address,
                               "--db", os.path.join(work, "gtco.db"), "--no-auth"],
                              stdout=open(os.path.join(work, "server.log"), "w"),
                              stderr=subprocess.STDOUT)
    time.sleep(2)
    worker = subprocess.Popen([os.path.join(BUILD, "worker", "gtco-worker"), "--server", address,
                               "--target", "cpu"], stdout=open(os.path.join(work, "worker.log"), "w"),
                              stderr=subprocess.STDOUT)
    rows = []
    try:
        for name in args.models.split(","):
            onnx_path = os.path.join(work, f"{name}.onnx")
            python = args.bert_python if name.startswith("bert") else "/usr/bin/python3"
            subprocess.run([python, "-c", EXPORT_SCRIPT, name, onnx_path], check=True,
                           capture_output=True)
            tasks = len(json.loads(client(address, "query", "--model", onnx_path, "--target", "cpu",
                                          "--json"))["records"])
            budget = tasks * args.trials_per_task
            start = time.time()
            job = json.loads(client(address, "submit", onnx_path, "--target", "cpu", "--budget",
                                    str(budget), "--watch", "--json"))
            tuning_seconds = time.time() - start
            artifact = os.path.join(work, f"{name}.gtco")
            client(address, "export", onnx_path, "-o", artifact)
            result = compare(onnx_path, artifact, args.runs)
            rows.append((name, tasks, int(job["trials_done"]), tuning_seconds, result))
            print(name, json.dumps({k: v for k, v in result.items() if k != "gtco" and k != "ort"}),
                  result["gtco"]["median_seconds"], result["ort"]["median_seconds"], flush=True)
    finally:
        worker.terminate()
        server.terminate()
    command = " ".join(["bench/e2e/run_e2e.py"] + sys.argv[1:])
    lines = [
        "# End to end: exported GTCO artifacts vs ONNX Runtime",
        "",
        f"Machine: {cpu_name()}, {os.cpu_count()} cores; {datetime.date.today()}; "
        f"command: `PYTHONPATH=.deps/python {command}`.",
        "Each model: torch.onnx.export (opset 17, random weights, batch 1), tuned on a local farm "
        f"(one CPU worker, {args.trials_per_task} trials per task), exported for this host, run "
        f"by gtco-run and by ONNX Runtime (ORT_ENABLE_ALL), 2 threads each, each in its own "
        f"process, median of {args.runs} runs after warm-up; outputs compared on the same random "
        "inputs.",
        "",
        "| model | tasks | trials | tuning wall | GTCO (gtco-run) | ONNX Runtime | GTCO speed-up | "
        "peak RSS GTCO / ORT | max rel. output diff |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, tasks, trials, seconds, r in rows:
        g, o = r["gtco"], r["ort"]
        lines.append(
            f"| {name} | {tasks} | {trials} | {seconds:.0f} s | {g['median_seconds'] * 1e3:.2f} ms | "
            f"{o['median_seconds'] * 1e3:.2f} ms | {o['median_seconds'] / g['median_seconds']:.2f}x | "
            f"{g['peak_rss_bytes'] / 2**20:.0f} / {o['peak_rss_bytes'] / 2**20:.0f} MiB | "
            f"{r['worst_rel_diff']:.1e} |")
    with open(args.output, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
