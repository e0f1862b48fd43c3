#!/usr/bin/python3
"""Exports the small ONNX models the graph/onnx unit tests read (torch 1.13, opset 17).

Run from anywhere with /usr/bin/python3: `make_models.py [--out DIR]` (default: this
directory). The outputs are committed; rerun only when a model must change.
"""
import argparse
import math
import os

import onnx
import onnx.helper as oh
import torch
from torch import nn

OPSET = 17


class Attention(nn.Module):
    """Multi-head self-attention written out the way ViT implementations do."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        batch, seq, hidden = x.shape
        qkv = self.qkv(x).reshape(batch, seq, 3, self.heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(batch, seq, hidden)
        return self.proj(out)


class TransformerBlock(nn.Module):
    """Pre-LN ViT encoder block: x + Attn(LN(x)); x + MLP(LN(x)) with exact (erf) GELU."""

    def __init__(self, hidden=64, heads=2, mlp=256):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, mlp)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(mlp, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))


class Mlp(nn.Module):
    def __init__(self, d_in=32, d_hidden=64, d_out=16):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class TinyVit(nn.Module):
    """The structure of torchvision's VisionTransformer (Conv patch embedding, class token,
    position embedding, pre-LN encoder, head) for hosts without torchvision."""

    def __init__(self, image=16, patch=8, hidden=32, heads=2, mlp=64, classes=10):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos_embedding = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, hidden))
        self.block = TransformerBlock(hidden, heads, mlp)
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.block(x + self.pos_embedding)
        return self.head(self.ln(x)[:, 0])


class PatchVit(TinyVit):
    """TinyVit fed with flattened patches [batch, patches, 3*patch*patch] through a Linear
    patch embedding: every op is supported, and the class-token expand exports shape
    arithmetic (Shape, Slice, Concat, ConstantOfShape, Equal, Where, Expand) to fold."""

    def __init__(self, image=16, patch=8, hidden=32):
        super().__init__(image=image, patch=patch, hidden=hidden)
        self.patch_proj = nn.Linear(3 * patch * patch, hidden)

    def forward(self, x):
        x = self.patch_proj(x)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.block(x + self.pos_embedding)
        return self.head(self.ln(x)[:, 0])


def make_vit():
    try:
        import torchvision  # noqa: F401  (optional: not installed on every host)
        from torchvision.models import VisionTransformer
        return VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2,
                                 hidden_dim=32, mlp_dim=64, num_classes=10)
    except ImportError:
        return TinyVit()


def export(model, example, path, dynamic_axes=None):
    model.eval()
    torch.onnx.export(model, example, path, opset_version=OPSET, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic_axes,
                      do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def make_fallback_op(path):
    """MatMul followed by TopK (no kernel family: it runs as a fallback step), node 'topk_1'."""
    weight = oh.make_tensor("weight", onnx.TensorProto.FLOAT, [8, 8], [0.01 * i for i in range(64)])
    k = oh.make_tensor("k", onnx.TensorProto.INT64, [1], [3])
    nodes = [
        oh.make_node("MatMul", ["input", "weight"], ["scores"], name="matmul_1"),
        oh.make_node("TopK", ["scores", "k"], ["values", "indices"], name="topk_1", axis=-1),
    ]
    graph = oh.make_graph(
        nodes, "fallback_op",
        [oh.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [2, 8])],
        [oh.make_tensor_value_info("values", onnx.TensorProto.FLOAT, [2, 3]),
         oh.make_tensor_value_info("indices", onnx.TensorProto.INT64, [2, 3])],
        initializer=[weight, k])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def make_unsupported_op(path):
    """MatMul followed by LpPool, which neither a kernel family nor the reference interpreter
    (so no fallback step) runs, node named 'lppool_1'."""
    weight = oh.make_tensor("weight", onnx.TensorProto.FLOAT, [8, 8], [0.01 * i for i in range(64)])
    nodes = [
        oh.make_node("MatMul", ["input", "weight"], ["scores"], name="matmul_1"),
        oh.make_node("LpPool", ["scores"], ["pooled"], name="lppool_1", kernel_shape=[2], p=2),
    ]
    graph = oh.make_graph(
        nodes, "unsupported_op",
        [oh.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [1, 2, 8])],
        [oh.make_tensor_value_info("pooled", onnx.TensorProto.FLOAT, [1, 2, 7])],
        initializer=[weight])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def make_external_data(path):
    """A Linear whose weight claims to live in an external file (never written: the importer
    must refuse before reading it)."""
    weight = onnx.TensorProto(name="weight", data_type=onnx.TensorProto.FLOAT, dims=[4, 4])
    weight.data_location = onnx.TensorProto.EXTERNAL
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    graph = oh.make_graph(
        [oh.make_node("MatMul", ["input", "weight"], ["output"], name="matmul_1")],
        "external_data",
        [oh.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [2, 4])],
        [oh.make_tensor_value_info("output", onnx.TensorProto.FLOAT, [2, 4])],
        initializer=[weight])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)])
    with open(path, "wb") as out:
        out.write(model.SerializeToString())
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def make_torchvision_vit(out):
    """torchvision's VisionTransformer, tiny (its nn.MultiheadAttention exports the [1, S, D] <->
    [S, 1, D] transposes, the query scaled before Q K^T and the residual Add behind a reshape that
    SimplifyDataMovement rewrites), with an input and ONNX Runtime's output for it."""
    import numpy as np
    import onnxruntime
    from torchvision.models import VisionTransformer
    torch.manual_seed(0)
    path = os.path.join(out, "torchvision_vit_tiny.onnx")
    model = VisionTransformer(image_size=16, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
    export(model, torch.randn(1, 3, 16, 16), path)
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    np.save(os.path.join(out, "torchvision_vit_tiny.input.npy"), x)
    np.save(os.path.join(out, "torchvision_vit_tiny.ort_output.npy"),
            session.run(None, {"input": x})[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--only-torchvision-vit", action="store_true",
                        help="write torchvision_vit_tiny.* only (needs python3-torchvision and "
                             "onnxruntime: PYTHONPATH=.deps/python)")
    args = parser.parse_args()
    out = args.out
    if args.only_torchvision_vit:
        make_torchvision_vit(out)
        return
    torch.manual_seed(0)
    export(TransformerBlock(), torch.randn(1, 16, 64), os.path.join(out, "transformer_block.onnx"))
    export(Mlp(), torch.randn(4, 32), os.path.join(out, "mlp.onnx"))
    export(Mlp(), torch.randn(4, 32), os.path.join(out, "dynamic_mlp.onnx"),
           dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    export(make_vit(), torch.randn(1, 3, 16, 16), os.path.join(out, "vit_tiny.onnx"))
    patch_vit = PatchVit()
    del patch_vit.conv_proj
    export(patch_vit, torch.randn(2, 4, 192), os.path.join(out, "patch_vit.onnx"),
           dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    make_unsupported_op(os.path.join(out, "unsupported_op.onnx"))
    make_fallback_op(os.path.join(out, "fallback_op.onnx"))
    make_external_data(os.path.join(out, "external_data.onnx"))


if __name__ == "__main__":
    main()
