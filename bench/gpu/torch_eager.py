#!/usr/bin/env python3
"""PyTorch eager baselines on the GPU for the row workloads and attention at ViT-B/16 batch 32:
softmax over [32*12*197, 197], layernorm over [32*197, 768], attention (QK^T * scale, softmax,
PV) for [32*12, 197, 64], and fc1's bias + GELU over [32*197, 3072] in fp32 -- the same shapes and dtypes gpu_farm.py tunes. Median of
CUDA-event timings after warm-up, the L2 flushed before each repeat, as the CUDA worker times."""
import argparse
import json
import statistics

import torch


def time_op(fn, repeats=50):
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    for _ in range(5):
        fn()
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    batch, heads, tokens, head_dim, hidden = 32, 12, 197, 64, 768
    x = torch.rand(batch * heads * tokens, tokens, device="cuda") * 2 - 1
    ln = torch.rand(batch * tokens, hidden, device="cuda") * 2 - 1
    weight, bias = torch.ones(hidden, device="cuda"), torch.zeros(hidden, device="cuda")
    q, k, v = (torch.rand(batch * heads, tokens, head_dim, device="cuda") * 2 - 1 for _ in range(3))
    scale = head_dim ** -0.5
    fc1 = torch.rand(batch * tokens, 4 * hidden, device="cuda") * 2 - 1
    fc1_bias = torch.rand(4 * hidden, device="cuda") * 2 - 1
    results = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "softmax_vit32": time_op(lambda: torch.softmax(x, dim=-1)),
        "layernorm_vit32": time_op(lambda: torch.nn.functional.layer_norm(ln, (hidden,), weight, bias, 1e-6)),
        "attention_vit32": time_op(lambda: torch.softmax(q @ k.transpose(1, 2) * scale, dim=-1) @ v),
        "bias_gelu_vit32": time_op(lambda: torch.nn.functional.gelu(fc1 + fc1_bias)),
        "attention_vit32_sdpa": time_op(
            lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)),
    }
    with open(args.json, "w") as file:
        json.dump(results, file, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
