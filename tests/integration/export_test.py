"""Tuned models out: submit real models, export them over gRPC, run the artifacts with gtco-run
and compare every output with ONNX Runtime on the same inputs; the bad-input outcomes of export
and of a run."""
import json
import os
import re
import subprocess
import unittest

import numpy as np

from farm import DATA, RUN, SOURCE_DIR, Farm, scratch_dir

try:  # scripts/setup.sh --tests installs onnxruntime into .deps/python
    import onnxruntime
except ImportError:  # pragma: no cover - reported by the tests that need it
    onnxruntime = None

# f32 outputs: |gtco - ort| <= ATOL_SCALE * max|ort| + RTOL * |ort| (fp32 accumulation orders
# differ; the kernels may contract into FMAs).
RTOL, ATOL_SCALE = 1e-4, 1e-4
# int8 models (ONNX Runtime's quantize_dynamic): against ONNX Runtime's own int8 run, the same
# integer arithmetic; only a DynamicQuantizeLinear rounding flipped by a last-ulp difference of
# its f32 input may move an output, by about one quantization step of one input.
INT8_VS_ORT_ATOL_SCALE = 1e-3
# Against the fp32 model the int8 one came from: quantization noise (measured 0.8 % and 1.4 % of
# the largest output of tests/data/bert_tiny_*.onnx, in GTCO and ONNX Runtime alike).
INT8_VS_FP32_ATOL_SCALE = 3e-2
# On a host without avx512_vnni ONNX Runtime's int8 run is no exact reference: most likely its
# u8 x s8 kernels sum pairs of products in 16 bits with saturation (vpmaddubsw, as its
# quantization guide says of U8S8 without VNNI; not checked in its code here), where GTCO's AVX2
# fallback widens them exactly. bert_tiny_int8 on an AMD Zen 3 (AVX2): GTCO vs ONNX Runtime up to 1.2e-3 of the
# largest output in last_hidden_state and 2.0e-2 in pooler_output, where GTCO is the closer of
# the two to the fp32 model (max |diff| 0.0051 vs 0.0078, mean 0.00150 vs 0.00160). There the
# check against ONNX Runtime's int8 run is as loose as the one against the fp32 model (which
# holds for both).
INT8_NO_VNNI_VS_ORT_ATOL_SCALE = INT8_VS_FP32_ATOL_SCALE
# --precision bf16 against ONNX Runtime's fp32 run: bf16 operands (8 significant bits) in every
# weight MatMul, f32 sums. The transformer block measured 7.3e-4 of its largest output on an AMD
# Zen 4 and 6.7e-4 on an Emerald Rapids; allowed: under 3x that.
BF16_VS_FP32_ATOL_SCALE = 2e-3
# --precision bf16x3 against ONNX Runtime's fp32 run: three bf16 products of split operands
# (~16 significant bits each, the dropped terms ~2^-17 of a product), f32 sums. The block's
# default-schedule export was 1.4e-6 off (one bf16 product: 6.7e-4) on an Emerald Rapids.
BF16X3_VS_FP32_ATOL_SCALE = 5e-5


def host_has(feature):
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return feature in line.split()
    return False


def int8_vs_ort_atol_scale():
    """The int8 tolerance against ONNX Runtime's int8 run on this host (see above)."""
    if host_has("avx512_vnni"):
        return INT8_VS_ORT_ATOL_SCALE
    return INT8_NO_VNNI_VS_ORT_ATOL_SCALE


def file_name(name):
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)


def export_resnet18(path):
    """torchvision's ResNet-18 (random weights, eval mode) at opset 17, or None without torch."""
    try:
        import torch
        import torchvision
    except ImportError:
        return None
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=17,
                      input_names=["image"], output_names=["logits"])
    return path


BERT_EXPORT = r"""
import sys, torch
from transformers import BertConfig, BertModel
torch.manual_seed(0)
config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                    intermediate_size=512)
model = BertModel(config).eval()
ids = torch.randint(0, config.vocab_size, (1, 128))
mask = torch.ones(1, 128, dtype=torch.int64)
torch.onnx.export(model, (ids, mask), sys.argv[1], opset_version=17,
                  input_names=["input_ids", "attention_mask"],
                  output_names=["last_hidden_state", "pooler_output"])
"""


def export_bert2(path):
    """A 2-layer BERT of `transformers` (random weights, seq 128, with its attention mask) at
    opset 17, or None when transformers is not installed (scripts/setup.sh --tests puts it in
    .deps/transformers)."""
    transformers_dir = os.path.join(SOURCE_DIR, ".deps", "transformers")
    if not os.path.isdir(transformers_dir):
        return None
    env = dict(os.environ, PYTHONPATH=transformers_dir)
    subprocess.run(["/usr/bin/python3", "-c", BERT_EXPORT, path], check=True, env=env,
                   capture_output=True, timeout=300)
    return path


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.farm = Farm()
        self.farm.start_server()
        self.farm.start_worker()
        self.dir = scratch_dir("gtco-export-")

    def tearDown(self):
        self.farm.stop()

    def run_and_compare(self, model, artifact, id_high=1000, atol_scale=ATOL_SCALE, rtol=RTOL,
                        also=(), literal=False):
        """Random inputs -> gtco-run and ONNX Runtime; every output must match. `also`: (other
        model, atol_scale) pairs run by ONNX Runtime on the same inputs, each compared with
        gtco-run's outputs the same way (rtol 0). `literal`: ONNX Runtime without graph
        optimizations, so that it runs every node as ONNX defines it (its fused int8 kernels
        round differently from the QuantizeLinear / DequantizeLinear nodes they replace)."""
        if onnxruntime is None:
            self.fail("onnxruntime is not importable: run scripts/setup.sh --tests "
                      "(it installs onnxruntime into .deps/python)")
        options = onnxruntime.SessionOptions()
        if literal:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(7)
        feeds, args = {}, []
        for index, spec in enumerate(session.get_inputs()):
            shape = [d if isinstance(d, int) else 1 for d in spec.shape]
            if "int64" in spec.type:
                # Token ids over a range of the vocabulary; masks (and other flags) 0 or 1.
                high = id_high if "ids" in spec.name else 2
                value = rng.integers(0, high, size=shape).astype(np.int64)
            else:
                value = rng.standard_normal(shape).astype(np.float32)
            feeds[spec.name] = value
            path = os.path.join(self.dir, f"input{index}.npy")
            np.save(path, value)
            args += ["--input", f"{spec.name}={path}"]
        expected = session.run(None, feeds)
        checks = [(model, expected, rtol, atol_scale)]
        for other, other_atol_scale in also:
            other_session = onnxruntime.InferenceSession(other,
                                                         providers=["CPUExecutionProvider"])
            checks.append((other, other_session.run(None, feeds), 0.0, other_atol_scale))
        out_dir = os.path.join(self.dir, "out-" + os.path.basename(artifact))
        os.makedirs(out_dir, exist_ok=True)
        run = subprocess.run([RUN, artifact, "--output-dir", out_dir, "--json", *args],
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        self.assertEqual(len(report["outputs_written"]), len(expected))
        for reference, wanted, check_rtol, check_atol_scale in checks:
            for spec, want in zip(session.get_outputs(), wanted):
                got = np.load(os.path.join(out_dir, file_name(spec.name) + ".npy"))
                self.assertEqual(got.shape, want.shape, spec.name)
                scale = float(np.max(np.abs(want))) if want.size else 0.0
                # The measured error, of the largest output (what the tolerances are set from).
                error = float(np.max(np.abs(got - want))) / scale if scale else 0.0
                print(f"{os.path.basename(model)} vs {os.path.basename(reference)} "
                      f"{spec.name}: max |diff| = {error:.2e} of the largest output "
                      f"(allowed {check_atol_scale:.0e})")
                np.testing.assert_allclose(
                    got, want, rtol=check_rtol, atol=check_atol_scale * scale + 1e-30,
                    err_msg=f"{model} against {reference}: output {spec.name}")

    def tune_and_export(self, model, budget, *extra):
        job = self.farm.client_json("submit", model, "--budget", str(budget), "--watch", *extra)
        self.assertEqual(job["state"], "done", job)
        artifact = os.path.join(self.dir, os.path.basename(model) + ".gtco")
        summary = self.farm.client_json("export", model, "-o", artifact, *extra)
        self.assertTrue(os.path.exists(artifact))
        self.assertEqual(os.path.getsize(artifact), int(summary["artifact_bytes"]))
        return artifact, summary, job

    def test_tuned_models_export_run_and_match_onnx_runtime(self):
        models = [(os.path.join(DATA, "transformer_block.onnx"), 40),
                  (os.path.join(DATA, "vit_tiny.onnx"), 30)]
        resnet = export_resnet18(os.path.join(self.dir, "resnet18.onnx"))
        # Missing software fails the test (scripts/setup.sh --tests installs both): a skip here
        # would pass a run that never exported a real model.
        self.assertIsNotNone(resnet, "python3-torch / python3-torchvision are not installed "
                                     "(scripts/setup.sh --tests installs them)")
        models.append((resnet, 20))
        bert = export_bert2(os.path.join(self.dir, "bert2.onnx"))
        self.assertIsNotNone(bert, ".deps/transformers is missing (scripts/setup.sh --tests)")
        models.append((bert, 30))
        for model, budget in models:
            with self.subTest(model=os.path.basename(model)):
                artifact, summary, job = self.tune_and_export(model, budget)
                # Every task was tuned, so every kernel comes from a record of this CPU.
                self.assertEqual(summary["tuned"], summary["kernels"], summary)
                self.assertEqual(summary.get("warnings", []), [])
                self.assertGreater(float(summary["estimated_latency_seconds"]), 0)
                # For this host (the local farm's server and worker run here): scheduled for its
                # CPU, as the worker's JIT compiled what it measured.
                self.assertTrue(summary["tune_cpu"], summary)
                described = json.loads(subprocess.run(
                    [RUN, artifact, "--describe", "--json"], capture_output=True, text=True,
                    check=True).stdout)
                self.assertEqual(len(described["kernels"]), summary["kernels"])
                for kernel in described["kernels"]:
                    self.assertTrue(kernel["tuned"], kernel)
                    self.assertTrue(kernel["hardware"], kernel)
                    self.assertGreater(kernel["median_seconds"], 0, kernel)
                self.run_and_compare(model, artifact)
                bench = json.loads(subprocess.run(
                    [RUN, artifact, "--random-inputs", "--bench", "5", "--threads", "2", "--json"],
                    capture_output=True, text=True, check=True).stdout)
                self.assertGreater(bench["median_seconds"], 0)
                self.check_profile(artifact)

    def test_int8_bert_of_onnx_runtimes_quantizer_matches_its_int8_run(self):
        """ONNX Runtime's quantize_dynamic of a 2-layer BERT (tests/data/make_quantized_models.py)
        tunes on the integer kernels, exports and runs: outputs as ONNX Runtime's int8 run, and
        within quantization noise of the fp32 model."""
        if not host_has("avx2"):
            self.skipTest("the integer matmul kernels need avx2 (avx512_vnni where it is)")
        # AVX-512 VNNI where the host has it, else the AVX2 fallback; AMX tiles too where the
        # host has them (the tuner measures which wins per workload).
        mappings = {"avx512_vnni" if host_has("avx512_vnni") else "avx2_int8"}
        if host_has("amx_tile") and host_has("amx_int8"):
            mappings.add("amx_int8")
        model = os.path.join(DATA, "bert_tiny_int8.onnx")
        artifact, summary, job = self.tune_and_export(model, 24)
        self.assertEqual(summary["tuned"], summary["kernels"], summary)
        described = json.loads(subprocess.run(
            [RUN, artifact, "--describe", "--json"], capture_output=True, text=True,
            check=True).stdout)
        integer = [k for k in described["kernels"] if "u8*i8->f32" in k["description"]]
        self.assertGreaterEqual(len(integer), 4, described["kernels"])
        for kernel in integer:
            self.assertIn(kernel["mapping"], mappings, kernel)
        self.run_and_compare(
            model, artifact, id_high=512, atol_scale=int8_vs_ort_atol_scale(), rtol=0.0,
            also=[(os.path.join(DATA, "bert_tiny_fp32.onnx"), INT8_VS_FP32_ATOL_SCALE)])
        # quantize_static's QDQ form: the matmuls on integers, the QuantizeLinear /
        # DequantizeLinear nodes as ONNX defines them; within quantization noise of ONNX Runtime's
        # fused int8 kernels, which round differently.
        qdq = os.path.join(DATA, "bert_tiny_qdq.onnx")
        artifact, summary, job = self.tune_and_export(qdq, 24)
        self.assertEqual(summary["tuned"], summary["kernels"], summary)
        self.run_and_compare(
            qdq, artifact, id_high=512, atol_scale=int8_vs_ort_atol_scale(), rtol=0.0,
            literal=True,
            also=[(qdq, INT8_VS_FP32_ATOL_SCALE),
                  (os.path.join(DATA, "bert_tiny_fp32.onnx"), INT8_VS_FP32_ATOL_SCALE)])
        # A ConvInteger (ViT's patch embedding, u8 weights) runs as patch rows on the same kernels.
        patches = os.path.join(DATA, "patch_embed_int8.onnx")
        artifact, summary, job = self.tune_and_export(patches, 8)
        self.assertEqual(summary["tuned"], summary["kernels"], summary)
        self.run_and_compare(
            patches, artifact, atol_scale=int8_vs_ort_atol_scale(), rtol=0.0,
            also=[(os.path.join(DATA, "patch_embed_fp32.onnx"), INT8_VS_FP32_ATOL_SCALE)])

    def test_bf16_precision_runs_weight_matmuls_on_bf16(self):
        """gtco-client --precision bf16: the transformer block's weight MatMuls tune and run on
        the bf16 kernels with their epilogues, within bf16 noise of ONNX Runtime's fp32 run;
        a wrong --precision is a usage error, a model with nothing to rewrite is refused."""
        bad = self.farm.client("submit", os.path.join(DATA, "mlp.onnx"), "--precision", "fp8",
                               check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--precision takes f32, bf16 or bf16x3", bad.stderr)
        nothing = self.farm.client("submit", os.path.join(DATA, "matmul_bf16.onnx"),
                                   "--precision", "bf16", check=False)
        self.assertEqual(nothing.returncode, 3, nothing.stderr)
        self.assertIn("nothing to rewrite", nothing.stderr)
        stray = self.farm.client("jobs", "--precision", "bf16", check=False)
        self.assertEqual(stray.returncode, 2, stray.stderr)
        self.assertIn("--precision applies to submit, query --model and export", stray.stderr)
        model = os.path.join(DATA, "transformer_block.onnx")
        artifact, _, _ = self.tune_bf16_block(model, 24, "bf16")
        self.run_and_compare(model, artifact, atol_scale=BF16_VS_FP32_ATOL_SCALE, rtol=0.0)

    def tune_bf16_block(self, model, budget, precision):
        """`model` tuned and exported with --precision `precision` (skipped without
        avx512_bf16): every kernel tuned, at least 4 weight MatMuls on the bf16 kernels of this
        host with their bias / GELU / residual epilogues. Returns (artifact, those kernels, every
        kernel) as gtco-run --describe lists them."""
        if not host_has("avx512_bf16"):
            self.skipTest("the bf16 matmul kernels need avx512_bf16")
        artifact, summary, _ = self.tune_and_export(model, budget, "--precision", precision)
        self.assertEqual(summary["tuned"], summary["kernels"], summary)
        kernels = json.loads(subprocess.run(
            [RUN, artifact, "--describe", "--json"], capture_output=True, text=True,
            check=True).stdout)["kernels"]
        bf16 = [k for k in kernels if "bf16*bf16->f32" in k["description"]]
        self.assertGreaterEqual(len(bf16), 4, kernels)
        # AMX hosts have the tile mappings beside avx512_bf16; the tuner picks per kernel.
        mappings = {"avx512_bf16"} | ({"amx_bf16"} if host_has("amx_bf16") else set())
        for kernel in bf16:
            self.assertIn(kernel["mapping"], mappings, kernel)
        # The bias, GELU and residual adds stay in the matmuls' epilogues.
        self.assertTrue(any("+add" in k["description"] for k in bf16), bf16)
        return artifact, bf16, kernels

    def test_bf16x3_precision_runs_weight_matmuls_near_f32(self):
        """gtco-client --precision bf16x3: each weight MatMul runs as one bf16 kernel over 3K
        (the split operands' three products) with its epilogue, each activation's split is a
        runtime step, and the outputs agree with ONNX Runtime's fp32 run far more closely than
        one bf16 product allows."""
        model = os.path.join(DATA, "transformer_block.onnx")
        artifact, bf16, kernels = self.tune_bf16_block(model, 32, "bf16x3")
        for kernel in bf16:  # over 3K: the block's K are 64 (d_model) and 256 (its FFN)
            k = int(re.match(r"matmul \d+x\d+x\d+x(\d+) ", kernel["description"]).group(1))
            self.assertIn(k, (3 * 64, 3 * 256), kernel)
        # The activations' splits are runtime steps, not casts and element-wise kernels.
        self.assertFalse([k for k in kernels if "+sub" in k["description"]], kernels)
        self.run_and_compare(model, artifact, atol_scale=BF16X3_VS_FP32_ATOL_SCALE, rtol=0.0)

    def check_profile(self, artifact):
        """gtco-run --profile rates each kernel by its work and traffic and sums the shares."""
        profiled = json.loads(subprocess.run(
            [RUN, artifact, "--random-inputs", "--profile", "--threads", "2", "--json"],
            capture_output=True, text=True, check=True).stdout)
        kernels = [row for row in profiled["profile"] if row["op"] == "kernel"]
        self.assertTrue(kernels)
        for row in kernels:
            self.assertGreater(row["min_bytes"], 0, row)
            # Compute-bound: at least 8 operations per byte of minimum traffic (a small model's
            # matmuls are not).
            self.assertEqual(row["bound"],
                             "compute" if row["flops"] >= 8 * row["min_bytes"] else "memory", row)
            matmul = re.match(r"matmul (\d+)x(\d+)x(\d+)x(\d+) ", row["description"])
            if matmul:
                b, m, n, k = map(int, matmul.groups())
                self.assertGreaterEqual(row["flops"], 2 * b * m * n * k, row)
                self.assertLess(row["flops"], 3 * b * m * n * k, row)
        summary = profiled["profile_summary"]
        shares = sum(summary[part]["seconds"]
                     for part in ("compute_bound", "memory_bound", "other_steps"))
        self.assertAlmostEqual(shares, summary["seconds"], delta=1e-6 * summary["seconds"])
        self.assertGreater(summary["compute_bound"]["flops"] + summary["memory_bound"]["flops"], 0)

    def test_untuned_export_warns_and_require_tuned_refuses(self):
        model = os.path.join(DATA, "mlp.onnx")
        artifact = os.path.join(self.dir, "mlp.gtco")
        summary = self.farm.client_json("export", model, "-o", artifact)
        self.assertEqual(summary.get("tuned", 0), 0)
        self.assertEqual(len(summary["warnings"]), summary["kernels"])
        self.assertIn("untuned", summary["warnings"][0])
        self.run_and_compare(model, artifact)
        refused = self.farm.client("export", model, "-o", artifact + ".2", "--require-tuned",
                                   check=False)
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn("FAILED_PRECONDITION", refused.stderr)
        self.assertIn("matmul", refused.stderr)
        self.assertFalse(os.path.exists(artifact + ".2"))
        self.assertFalse(os.path.exists(artifact + ".2.partial"))

    def fallback_model(self):
        """Conv -> Resize (nearest, x2) -> ReduceMax over the channels -> Sigmoid -> Log -> Conv:
        Resize, ReduceMax and Log have no kernel family and run as fallback steps."""
        from onnx import TensorProto, helper, numpy_helper
        rng = np.random.default_rng(3)
        weights = [
            numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w1"),
            numpy_helper.from_array(rng.standard_normal((4, 1, 1, 1)).astype(np.float32), "w2"),
            numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
        max_node = helper.make_node("ReduceMax", ["up"], ["peak"], name="peak", axes=[1],
                                    keepdims=1)
        nodes = [helper.make_node("Conv", ["image", "w1"], ["c1"], name="conv1", pads=[1] * 4),
                 helper.make_node("Resize", ["c1", "", "scales"], ["up"], name="upsample",
                                  mode="nearest"),
                 max_node,
                 helper.make_node("Sigmoid", ["peak"], ["gate"], name="gate"),
                 helper.make_node("Log", ["gate"], ["log"], name="log"),
                 helper.make_node("Conv", ["log", "w2"], ["out"], name="conv2")]
        graph = helper.make_graph(
            nodes, "fallbacks",
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 4, 10, 10])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 20, 20])], weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(self.dir, "fallbacks.onnx")
        with open(path, "wb") as out:
            out.write(model.SerializeToString())
        return path

    def test_fallback_ops_run_checked_and_listed(self):
        model = self.fallback_model()
        job = self.farm.client_json("submit", model, "--budget", "6", "--watch")
        self.assertEqual(job["state"], "done", job)
        fallbacks = {entry["node"]: entry["op_type"] for entry in job.get("fallbacks", [])}
        self.assertEqual(fallbacks, {"upsample": "Resize", "peak": "ReduceMax", "log": "Log"})
        explained = self.farm.client("status", job["job_id"], "--explain").stdout
        self.assertIn("fallback steps", explained)
        self.assertIn("Resize at 'upsample'", explained)
        # The graph after the passes was checked against the ONNX graph at submit.
        self.assertIn("the graph after GTCO's passes matches the ONNX graph", explained)
        # The user's own inputs are checked beside the random ones.
        image = os.path.join(self.dir, "image.npy")
        np.save(image, np.linspace(-2, 2, 400, dtype=np.float32).reshape(1, 4, 10, 10))
        artifact = os.path.join(self.dir, "fallbacks.gtco")
        summary = self.farm.client_json("export", model, "-o", artifact,
                                        "--verify-input", f"image={image}")
        check = summary["verification"]
        self.assertEqual(check["status"], "passed", summary)
        self.assertEqual(int(check["input_sets"]), 2)
        self.assertLessEqual(check["outputs"][0]["max_error"], check["outputs"][0]["tolerance"])
        self.assertEqual({entry["op_type"] for entry in summary["fallbacks"]},
                         {"Resize", "ReduceMax", "Log"})
        self.assertTrue(all(entry["seconds"] > 0 for entry in summary["fallbacks"]), summary)
        text = self.farm.client("export", model, "-o", artifact + ".text").stdout
        self.assertIn("verified against the reference interpreter", text)
        self.assertIn("3 nodes run as fallback steps", text)
        described = json.loads(subprocess.run([RUN, artifact, "--describe", "--json"],
                                              capture_output=True, text=True, check=True).stdout)
        self.assertEqual(described["verification"]["status"], "passed")
        self.assertEqual(len(described["fallback_steps"]), 3)
        self.run_and_compare(model, artifact)
        # --no-verify: written unchecked, and the artifact says so.
        skipped = self.farm.client_json("export", model, "-o", artifact + ".2", "--no-verify")
        self.assertEqual(skipped["verification"]["status"], "skipped")
        self.assertIn("not verified at export: --no-verify", subprocess.run(
            [RUN, artifact + ".2", "--describe"], capture_output=True, text=True,
            check=True).stdout)
        # A check input of the wrong shape is refused, naming it; nothing is written.
        np.save(image, np.zeros((1, 4, 8, 8), np.float32))
        refused = self.farm.client("export", model, "-o", artifact + ".3", "--verify-input",
                                   f"image={image}", check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", refused.stderr)
        self.assertIn("'image'", refused.stderr)
        self.assertFalse(os.path.exists(artifact + ".3"))
        # A CUDA job cannot take fallback steps: refused at submit, naming the first node.
        cuda = self.farm.client("submit", model, "--target", "cuda", "--budget", "4",
                                check=False)
        self.assertNotEqual(cuda.returncode, 0)
        self.assertIn("--target cpu", cuda.stderr)

    def test_python_binding_runs_the_artifact_with_numpy(self):
        """pip install ./runtime/python into a venv, then numpy in, numpy out, errors as exceptions."""
        model = os.path.join(DATA, "transformer_block.onnx")
        artifact = os.path.join(self.dir, "block.gtco")
        self.farm.client("export", model, "-o", artifact)
        venv = os.path.join(self.dir, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                       check=True)
        install = subprocess.run(
            # Offline: the build requirements are Debian's (setup.sh --tests installs
            # python3-pybind11), so the test downloads nothing.
            [os.path.join(venv, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check",
             "--no-index", "--no-build-isolation", os.path.join(SOURCE_DIR, "runtime", "python")],
            capture_output=True, text=True, timeout=900)
        self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
        script = r"""
import json, sys, numpy as np, gtco
model = gtco.load(sys.argv[1])
spec = model.inputs[0]
x = np.random.default_rng(3).standard_normal(spec["shape"]).astype(np.float32)
np.save(sys.argv[2], x)
outputs = model.run({spec["name"]: x})
name = model.outputs[0]["name"]
np.save(sys.argv[3], outputs[name])
errors = []
try:
    model.run({spec["name"]: x.astype(np.float64)})
except ValueError as error:
    errors.append(str(error))
try:
    gtco.load(sys.argv[1] + ".missing")
except FileNotFoundError as error:
    errors.append(str(error))
print(json.dumps({"input": spec, "output": name, "errors": errors,
                  "tuned": [k["tuned"] for k in model.kernels]}))
"""
        x_path, y_path = os.path.join(self.dir, "x.npy"), os.path.join(self.dir, "y.npy")
        ran = subprocess.run([os.path.join(venv, "bin", "python"), "-c", script, artifact, x_path,
                              y_path], capture_output=True, text=True, timeout=300)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        report = json.loads(ran.stdout)
        self.assertEqual(report["input"]["dtype"], "float32")
        self.assertIn("must be float32", report["errors"][0])
        self.assertIn("got float64", report["errors"][0])
        self.assertIn("cannot open artifact", report["errors"][1])
        # The binding and gtco-run agree bit for bit on the same input.
        out_dir = os.path.join(self.dir, "cli-out")
        os.makedirs(out_dir)
        subprocess.run([RUN, artifact, "--input", f"{report['input']['name']}={x_path}",
                        "--output-dir", out_dir], check=True, capture_output=True)
        self.assertTrue(np.array_equal(
            np.load(y_path), np.load(os.path.join(out_dir, file_name(report["output"]) + ".npy"))))

    def test_the_runtime_links_nothing_of_the_farm(self):
        library = os.path.join(os.path.dirname(RUN), "libgtco_runtime.so")
        for binary in (RUN, library):
            if not os.path.exists(binary):
                continue  # the packed GPU build carries gtco-run only
            needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                                    check=True).stdout
            for farm_library in ("LLVM", "grpc", "protobuf", "sqlite", "pq"):
                self.assertNotIn(farm_library, needed, f"{binary} links {farm_library}")

    def test_bad_models_and_bad_runs_say_what_is_wrong(self):
        unsupported = self.farm.client("export", os.path.join(DATA, "unsupported_op.onnx"), "-o",
                                       os.path.join(self.dir, "x.gtco"), check=False)
        self.assertEqual(unsupported.returncode, 3)
        self.assertIn("unsupported ONNX op 'LpPool' at node 'lppool_1'", unsupported.stderr)
        bad_isa = self.farm.client("export", os.path.join(DATA, "mlp.onnx"), "-o",
                                   os.path.join(self.dir, "x.gtco"), "--isa", "riscv", check=False)
        self.assertEqual(bad_isa.returncode, 3)
        self.assertIn("unknown instruction set 'riscv'", bad_isa.stderr)
        artifact = os.path.join(self.dir, "mlp.gtco")
        self.farm.client("export", os.path.join(DATA, "mlp.onnx"), "-o", artifact)
        # An export for a named level (another machine, perhaps) keeps the level's generic
        # scheduling.
        portable = self.farm.client_json("export", os.path.join(DATA, "mlp.onnx"), "-o",
                                         os.path.join(self.dir, "mlp_v2.gtco"), "--isa",
                                         "x86-64-v2")
        self.assertEqual(portable["cpu"], "x86-64-v2")
        self.assertEqual(portable["tune_cpu"], "")
        with open(artifact, "rb") as file:
            data = file.read()
        truncated = os.path.join(self.dir, "truncated.gtco")
        with open(truncated, "wb") as file:
            file.write(data[: len(data) // 2])
        run = subprocess.run([RUN, truncated, "--random-inputs"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 3)
        self.assertIn("truncated", run.stderr)
        missing = subprocess.run([RUN, artifact], capture_output=True, text=True)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("is missing: pass --input", missing.stderr)
        wrong = os.path.join(self.dir, "wrong.npy")
        np.save(wrong, np.zeros((3, 5), np.float32))
        described = json.loads(subprocess.run([RUN, artifact, "--describe", "--json"],
                                              capture_output=True, text=True, check=True).stdout)
        name = described["inputs"][0]["name"]
        shaped = subprocess.run([RUN, artifact, "--input", f"{name}={wrong}"],
                                capture_output=True, text=True)
        self.assertEqual(shaped.returncode, 1)
        self.assertIn(f"input '{name}' must be f32", shaped.stderr)
        self.assertIn("got f32 [3,5]", shaped.stderr)


if __name__ == "__main__":
    unittest.main()
