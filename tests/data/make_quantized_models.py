#!/usr/bin/python3
"""Writes the small int8 models the quantized-import tests read: ONNX Runtime's own dynamic
quantization (onnxruntime.quantization.quantize_dynamic) of models torch.onnx exports.

  bert_tiny_fp32.onnx   transformers BertModel (2 layers, hidden 64, 2 heads, FFN 128, vocab 512),
                        input_ids / attention_mask [1, 16] i64, opset 17
  bert_tiny_int8.onnx   quantize_dynamic of it (weights s8, per tensor): DynamicQuantizeLinear ->
                        MatMulInteger -> Cast -> Mul(scale) -> Add(bias) per Linear, and
                        Gather -> DequantizeLinear for the embeddings
  bert_tiny_qdq.onnx    quantize_static of bert_tiny_fp32.onnx in the QDQ format (u8 activations
                        calibrated on 4 random inputs, s8 weights per tensor): QuantizeLinear ->
                        DequantizeLinear around every MatMul's inputs and Gemm's
  patch_embed_fp32.onnx ViT's patch embedding in small: Conv 3->32, 4x4 kernel, stride 4 on
                        [1, 3, 16, 16], flattened to 16 tokens, then Linear 32->16 and GELU
  patch_embed_int8.onnx quantize_dynamic of it with u8 weights (ONNX Runtime's ConvInteger takes
                        u8 x u8 only): ConvInteger and MatMulInteger

Needs torch and transformers (scripts/setup.sh --tests puts transformers in .deps/transformers)
and onnxruntime with an onnx >= 1.13 (its quantization tools import onnx.reference; Debian's is
1.12), e.g. PYTHONPATH=.deps/onnx-quant:.deps/python:.deps/transformers. The outputs are
committed; rerun only when a model must change.
"""
import argparse
import os

import torch
import numpy as np
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
from transformers import BertConfig, BertModel

SEQ = 16


def export_bert_tiny(path):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128,
                        max_position_embeddings=64)
    model = BertModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, SEQ))
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    torch.onnx.export(model, (ids, mask), path, opset_version=17,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"])


class RandomTokens(CalibrationDataReader):
    """Calibration inputs for quantize_static: `count` random token sequences (fixed seed)."""

    def __init__(self, count=4):
        rng = np.random.default_rng(0)
        self.items = iter([{"input_ids": rng.integers(0, 512, (1, SEQ)).astype(np.int64),
                            "attention_mask": np.ones((1, SEQ), np.int64)}
                           for _ in range(count)])

    def get_next(self):
        return next(self.items, None)


class PatchEmbed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 32, kernel_size=4, stride=4)
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, image):
        tokens = self.conv(image).flatten(2).transpose(1, 2)
        return torch.nn.functional.gelu(self.linear(tokens))


def export_patch_embed(path):
    torch.manual_seed(0)
    torch.onnx.export(PatchEmbed().eval(), torch.randn(1, 3, 16, 16), path, opset_version=17,
                      input_names=["image"], output_names=["tokens"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    fp32 = os.path.join(args.out, "bert_tiny_fp32.onnx")
    export_bert_tiny(fp32)
    quantize_dynamic(fp32, os.path.join(args.out, "bert_tiny_int8.onnx"),
                     weight_type=QuantType.QInt8)
    quantize_static(fp32, os.path.join(args.out, "bert_tiny_qdq.onnx"), RandomTokens(),
                    quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    patch = os.path.join(args.out, "patch_embed_fp32.onnx")
    export_patch_embed(patch)
    quantize_dynamic(patch, os.path.join(args.out, "patch_embed_int8.onnx"),
                     weight_type=QuantType.QUInt8)


if __name__ == "__main__":
    main()
