#!/usr/bin/env python3
"""ViT-B/16 on the GPU machine, for gpu_farm.py's end-to-end run (the ONNX file is 330 MB, over the
64 MiB a run on the GPU machine carries, so it is exported there by that machine's PyTorch).

  vit_model.py export DIR [SKELETON]
                              torchvision's vit_b_16 (random weights, seed 0, batch 1), exported to
                              DIR/vit_b_16.onnx (opset 17, TorchScript exporter); DIR/image.npy is
                              the input and DIR/ort_output.npy ONNX Runtime's (CPU) output of it.
                              With SKELETON (a file `skeleton` wrote), that graph is used instead,
                              its stripped weights refilled with seeded random values (std 0.02), and
                              the local export is kept as DIR/vit_b_16.local.onnx.
  vit_model.py skeleton SRC DST
                              SRC's graph with every float initializer of 4096 elements or more
                              stripped of its data (346 MB -> well under a megabyte), so that the
                              graph an exporter wrote here travels to the GPU machine.
  vit_model.py skeleton DST   the same, of this machine's own export (bench/run_gpu_bench.sh pack).
  vit_model.py time DIR JSON  PyTorch's latency of the same model on the GPU: eager fp32 (TF32 off,
                              PyTorch's default), eager with TF32 matmuls, and torch.compile with
                              TF32; median of CUDA-event timings after warm-up, batch 1.
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torchvision


def model_and_input():
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16(weights=None).eval()
    # torchvision zero-initializes ViT's head, so the logits would all be 0.
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    image = torch.randn(1, 3, 224, 224)
    return model, image


def skeleton(source, destination):
    import onnx
    model = onnx.load(source)
    for tensor in model.graph.initializer:
        if tensor.data_type == onnx.TensorProto.FLOAT and int(np.prod(tensor.dims)) >= 4096:
            tensor.ClearField("raw_data")
            tensor.ClearField("float_data")
    onnx.save(model, destination)
    print(f"{destination}: {os.path.getsize(destination) / 1e3:.0f} kB")


def refill(source, destination):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(source)
    rng = np.random.default_rng(0)
    for tensor in model.graph.initializer:
        if (tensor.data_type == onnx.TensorProto.FLOAT and not tensor.raw_data and not tensor.float_data
                and int(np.prod(tensor.dims)) > 0):
            values = rng.normal(0.0, 0.02, tuple(tensor.dims)).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))
    onnx.save(model, destination)


def export(directory, skeleton_path=None):
    os.makedirs(directory, exist_ok=True)
    model, image = model_and_input()
    path = os.path.join(directory, "vit_b_16.local.onnx" if skeleton_path else "vit_b_16.onnx")
    # Not under no_grad: there PyTorch takes its fused attention fast path, which has no ONNX form.
    kwargs = dict(opset_version=17, input_names=["image"], output_names=["logits"])
    try:
        torch.onnx.export(model, (image,), path, dynamo=False, **kwargs)
    except TypeError:  # a PyTorch without the dynamo switch
        torch.onnx.export(model, (image,), path, **kwargs)
    if skeleton_path:
        path = os.path.join(directory, "vit_b_16.onnx")
        refill(skeleton_path, path)
    np.save(os.path.join(directory, "image.npy"), image.numpy())
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    output = session.run(None, {"image": image.numpy()})[0]
    np.save(os.path.join(directory, "ort_output.npy"), output)
    print(f"exported {path} ({os.path.getsize(path) / 1e6:.0f} MB); ONNX Runtime {ort.__version__} output {output.shape}")


def median_ms(fn, repeats=50):
    with torch.no_grad():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def time_torch(directory, json_path, compile_seconds_left):
    model, image = model_and_input()
    model, image = model.cuda(), image.cuda()
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "batch": 1}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results["eager_fp32_ms"] = median_ms(lambda: model(image))
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    results["eager_tf32_ms"] = median_ms(lambda: model(image))
    if compile_seconds_left > 60:
        start = time.time()
        try:
            compiled = torch.compile(model)
            results["compile_tf32_ms"] = median_ms(lambda: compiled(image))
            results["compile_seconds"] = round(time.time() - start, 1)
        except Exception as error:  # noqa: BLE001 -- reported, not fatal
            results["compile_error"] = str(error)[-500:]
    else:
        results["compile_tf32_ms"] = "skipped: too little time left before the deadline"
    with open(json_path, "w") as file:
        json.dump(results, file, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif sys.argv[1] == "skeleton" and len(sys.argv) == 3:
        import tempfile
        with tempfile.TemporaryDirectory() as scratch:
            model, image = model_and_input()
            source = os.path.join(scratch, "vit_b_16.onnx")
            kwargs = dict(opset_version=17, input_names=["image"], output_names=["logits"])
            try:
                torch.onnx.export(model, (image,), source, dynamo=False, **kwargs)
            except TypeError:  # a PyTorch without the dynamo switch (Debian's 1.13)
                torch.onnx.export(model, (image,), source, **kwargs)
            skeleton(source, sys.argv[2])
    elif sys.argv[1] == "skeleton":
        skeleton(sys.argv[2], sys.argv[3])
    else:
        time_torch(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 600)
