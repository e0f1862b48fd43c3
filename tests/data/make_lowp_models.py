#!/usr/bin/python3
"""Writes the small low-precision ONNX models the onnx/graph unit tests read (onnx helper, opset 17).

Run from anywhere with /usr/bin/python3: `make_lowp_models.py [--out DIR]` (default: this
directory). The outputs are committed; rerun only when a model must change.

  matmul_bf16.onnx              X bf16 [4,64] @ W bf16 [64,32] -> Y bf16, then Cast -> f32
  matmul_integer.onnx           A u8 [1,3,70] @ B i8 [70,33] (zero points 7 and -3) -> Y i32,
                                then Cast -> f32
  matmul_integer_per_row.onnx   as above with a per-row a_zero_point [3] (unsupported)
  matmul_f16.onnx               X f16 [4,8] @ W f16 [8,4] (CUDA mappings only)
"""
import argparse
import os

import numpy as np
import onnx
import onnx.helper as oh
from onnx import TensorProto

OPSET = 17


def bf16_bits(values):
    """Round-to-nearest-even bf16 bit patterns of float32 `values`."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_tensor(name, values):
    values = np.asarray(values, dtype=np.float32)
    tensor = TensorProto(name=name, data_type=TensorProto.BFLOAT16, dims=list(values.shape))
    tensor.int32_data.extend(int(b) for b in bf16_bits(values).ravel())
    return tensor


def save(graph, path):
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)],
                          producer_name="gtco-make_lowp_models")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def matmul_bf16(rng):
    w = rng.uniform(-1.0, 1.0, size=(64, 32)).astype(np.float32)
    graph = oh.make_graph(
        [oh.make_node("MatMul", ["X", "W"], ["Y"], name="matmul_bf16"),
         oh.make_node("Cast", ["Y"], ["Y_f32"], name="to_f32", to=TensorProto.FLOAT)],
        "matmul_bf16",
        [oh.make_tensor_value_info("X", TensorProto.BFLOAT16, [4, 64])],
        [oh.make_tensor_value_info("Y_f32", TensorProto.FLOAT, [4, 32])],
        initializer=[bf16_tensor("W", w)])
    return graph


def matmul_integer(rng, per_row_zero_point=False):
    b = rng.integers(-128, 128, size=(70, 33), dtype=np.int8)
    a_zero = (oh.make_tensor("a_zero_point", TensorProto.UINT8, [3], [7, 8, 9])
              if per_row_zero_point else oh.make_tensor("a_zero_point", TensorProto.UINT8, [], [7]))
    graph = oh.make_graph(
        [oh.make_node("MatMulInteger", ["A", "B", "a_zero_point", "b_zero_point"], ["Y"],
                      name="matmul_integer"),
         oh.make_node("Cast", ["Y"], ["Y_f32"], name="to_f32", to=TensorProto.FLOAT)],
        "matmul_integer",
        [oh.make_tensor_value_info("A", TensorProto.UINT8, [1, 3, 70])],
        [oh.make_tensor_value_info("Y_f32", TensorProto.FLOAT, [1, 3, 33])],
        initializer=[oh.make_tensor("B", TensorProto.INT8, b.shape, b.ravel().tolist()), a_zero,
                     oh.make_tensor("b_zero_point", TensorProto.INT8, [], [-3])])
    return graph


def matmul_f16(rng):
    w = rng.uniform(-1.0, 1.0, size=(8, 4)).astype(np.float16)
    graph = oh.make_graph(
        [oh.make_node("MatMul", ["X", "W"], ["Y"], name="matmul_f16")],
        "matmul_f16",
        [oh.make_tensor_value_info("X", TensorProto.FLOAT16, [4, 8])],
        [oh.make_tensor_value_info("Y", TensorProto.FLOAT16, [4, 4])],
        initializer=[oh.make_tensor("W", TensorProto.FLOAT16, w.shape,
                                    w.view(np.uint16).ravel().tolist())])
    return graph


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    rng = np.random.default_rng(20240601)
    save(matmul_bf16(rng), os.path.join(args.out, "matmul_bf16.onnx"))
    save(matmul_integer(rng), os.path.join(args.out, "matmul_integer.onnx"))
    save(matmul_integer(rng, per_row_zero_point=True),
         os.path.join(args.out, "matmul_integer_per_row.onnx"))
    save(matmul_f16(rng), os.path.join(args.out, "matmul_f16.onnx"))


if __name__ == "__main__":
    main()
