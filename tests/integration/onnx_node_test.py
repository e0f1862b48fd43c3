"""The ONNX package's backend node test cases (model + input/output .pb each) of every op GTCO
claims, through import -> plan -> kernels -> export -> runtime, on a real farm: each case's
model is exported (default schedules) over gRPC, run by gtco-run on the case's inputs, and every
output compared with the case's expected output (f32: rtol 1e-4, atol 1e-5; others exact).

The cases come from the `onnx` 1.12.0 wheel of PyPI, the release of Debian's libonnx (newer
cases use IR versions its checker refuses); scripts/setup.sh --tests extracts its
backend/test/data/node into .deps/onnx-node. Every case of the ops below runs: the CLAIMED ones
must pass, and every other one must be refused with an error naming what is unsupported (at
export, or by gtco-run for a dtype .npy cannot hold) -- never a wrong answer."""
import glob
import itertools
import json
import os
import re
import subprocess
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from farm import RUN, SOURCE_DIR, Farm, scratch_dir

NODE_DIR = os.environ.get("GTCO_ONNX_NODE_DIR",
                          os.path.join(SOURCE_DIR, ".deps", "onnx-node"))

CLAIMED = """
test_equal test_equal_bcast test_where_example test_where_long_example
test_add test_add_bcast test_averagepool_2d_ceil test_averagepool_2d_default
test_averagepool_2d_pads test_averagepool_2d_pads_count_include_pad
test_averagepool_2d_precomputed_pads test_averagepool_2d_precomputed_pads_count_include_pad
test_averagepool_2d_precomputed_same_upper test_averagepool_2d_precomputed_strides
test_averagepool_2d_same_lower test_averagepool_2d_same_upper test_averagepool_2d_strides
test_clip_default_inbounds test_clip_default_int8_inbounds test_concat_1d_axis_0
test_concat_1d_axis_negative_1 test_concat_2d_axis_0 test_concat_2d_axis_1
test_concat_2d_axis_negative_1 test_concat_2d_axis_negative_2 test_concat_3d_axis_0
test_concat_3d_axis_1 test_concat_3d_axis_2 test_concat_3d_axis_negative_1
test_concat_3d_axis_negative_2 test_concat_3d_axis_negative_3 test_conv_with_autopad_same
test_conv_with_strides_and_asymmetric_padding test_conv_with_strides_no_padding
test_conv_with_strides_padding test_div test_div_bcast test_div_example test_erf
test_flatten_axis0 test_flatten_axis1 test_flatten_axis2 test_flatten_axis3
test_flatten_default_axis test_flatten_negative_axis1 test_flatten_negative_axis2
test_flatten_negative_axis3 test_flatten_negative_axis4 test_gather_0 test_gather_1
test_gather_2d_indices test_gather_negative_indices test_gemm_all_attributes test_gemm_alpha
test_gemm_beta test_gemm_default_matrix_bias test_gemm_default_no_bias
test_gemm_default_scalar_bias test_gemm_default_single_elem_vector_bias
test_gemm_default_vector_bias test_gemm_default_zero_bias test_gemm_transposeA
test_gemm_transposeB test_globalaveragepool test_globalaveragepool_precomputed test_identity
test_matmul_2d test_matmul_3d test_matmul_4d test_max_float32 test_max_two_inputs
test_maxpool_2d_ceil test_maxpool_2d_default test_maxpool_2d_dilations test_maxpool_2d_pads
test_maxpool_2d_precomputed_pads test_maxpool_2d_precomputed_same_upper
test_maxpool_2d_precomputed_strides test_maxpool_2d_same_lower test_maxpool_2d_same_upper
test_maxpool_2d_strides test_min_float32 test_min_two_inputs test_mul test_mul_bcast
test_mul_example test_pow test_pow_bcast_array test_pow_bcast_scalar test_pow_example test_relu
test_reshape_extended_dims test_reshape_negative_dim test_reshape_negative_extended_dims
test_reshape_one_dim test_reshape_reduced_dims test_reshape_reordered_all_dims
test_reshape_reordered_last_dims test_reshape_zero_and_negative_dim test_reshape_zero_dim
test_sigmoid test_sigmoid_example test_softmax_axis_2 test_softmax_default_axis
test_softmax_example test_softmax_large_number test_softmax_negative_axis test_sqrt
test_sqrt_example test_squeeze test_squeeze_negative_axes test_sub test_sub_bcast
test_sub_example test_tanh test_tanh_example test_transpose_all_permutations_0
test_transpose_all_permutations_1 test_transpose_all_permutations_2
test_transpose_all_permutations_3 test_transpose_all_permutations_4
test_transpose_all_permutations_5 test_transpose_default test_unsqueeze_axis_0
test_unsqueeze_axis_1 test_unsqueeze_axis_2 test_unsqueeze_axis_3 test_unsqueeze_negative_axes
test_unsqueeze_three_axes test_unsqueeze_two_axes test_unsqueeze_unsorted_axes
test_split_equal_parts_1d test_split_equal_parts_2d test_split_equal_parts_default_axis
test_split_variable_parts_1d test_split_variable_parts_2d test_split_variable_parts_default_axis
""".split()


# The op families whose cases run (those GTCO claims in part or whole).
FAMILIES = re.compile(
    r"test_(conv|maxpool|averagepool|globalaveragepool|relu|clip|gemm|matmul|softmax|layer_norm|"
    r"add|mul|sub|div|erf|tanh|sigmoid|sqrt|pow|transpose|gather|concat|slice|flatten|reshape|"
    r"cast|batchnorm|reduce_mean|unsqueeze|squeeze|identity|max|min|where|equal|expand|split)")


def to_numpy(path):
    tensor = TensorProto()
    with open(path, "rb") as file:
        tensor.ParseFromString(file.read())
    return tensor.name, numpy_helper.to_array(tensor)


def file_name(name):
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)


class OnnxNodeCasesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(NODE_DIR):  # software: its absence fails, not skips
            raise AssertionError(f"no ONNX node cases in {NODE_DIR}: run scripts/setup.sh --tests")
        cls.farm = Farm()
        cls.farm.start_server()
        cls.dir = scratch_dir("gtco-node-")

    @classmethod
    def tearDownClass(cls):
        cls.farm.stop()

    def run_case(self, case):
        """None when the case passes, else why not (export refusal or mismatch)."""
        case_dir = os.path.join(NODE_DIR, case)
        data = os.path.join(case_dir, "test_data_set_0")
        inputs = sorted(glob.glob(os.path.join(data, "input_*.pb")),
                        key=lambda p: int(re.findall(r"\d+", p)[-1]))
        expected = sorted(glob.glob(os.path.join(data, "output_*.pb")))
        return self.run_model(case, os.path.join(case_dir, "model.onnx"), inputs, expected)

    def run_model(self, name, model, inputs, expected, threads=None):
        """Exports `model` (default schedules) over gRPC, runs it with gtco-run on `inputs` and
        compares with `expected`: None when they match, else why not. An input or expected
        output is an array or the path of a TensorProto file, read only when it is needed (some
        refused cases hold tensors numpy cannot read)."""
        artifact = os.path.join(self.dir, name + ".gtco")
        exported = self.farm.client("export", model, "-o", artifact, "--json", check=False)
        if exported.returncode != 0:
            return "export: " + exported.stderr.strip()
        args, out_dir = [], os.path.join(self.dir, name + ".out")
        os.makedirs(out_dir, exist_ok=True)
        described = subprocess.run([RUN, artifact, "--describe", "--json"], capture_output=True,
                                   text=True, check=True).stdout
        declared = json.loads(described)["inputs"]
        for index, value in enumerate(inputs):
            if index >= len(declared):
                break  # an input the exporter folded into a constant
            npy = os.path.join(self.dir, f"{name}.in{index}.npy")
            np.save(npy, to_numpy(value)[1] if isinstance(value, str) else value)
            args += ["--input", f"{declared[index]['name']}={npy}"]
        if threads is not None:
            args += ["--threads", str(threads)]
        run = subprocess.run([RUN, artifact, "--output-dir", out_dir, *args],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return "run: " + run.stderr.strip()
        outputs = json.loads(described)["outputs"]
        for index, want in enumerate(expected):
            want = to_numpy(want)[1] if isinstance(want, str) else want
            got = np.load(os.path.join(out_dir, file_name(outputs[index]["name"]) + ".npy"))
            if got.shape != want.shape:
                return f"output {index}: shape {got.shape}, expected {want.shape}"
            if want.dtype == np.float32 or got.dtype == np.float32:
                want32 = want.astype(np.float32)
                if not np.allclose(got, want32, rtol=1e-4, atol=1e-5, equal_nan=True):
                    return f"output {index}: max |diff| {np.max(np.abs(got - want32)):.3g}"
            elif not np.array_equal(got, want):
                return f"output {index}: values differ"
        return None

    def test_large_transposes_and_slices_copy_exactly(self):
        """Data movement big enough to be split over threads (>= 64 KB), in every permutation of
        an attention-sized tensor (rows copied whole, 16x16 tiles, element by element), and the
        slices of a fused QKV projection, in f32 and int64, on 1 and 2 threads."""
        rng = np.random.default_rng(7)
        cases = []
        for dtype, onnx_type in ((np.float32, TensorProto.FLOAT), (np.int64, TensorProto.INT64)):
            x = rng.integers(-1000, 1000, (12, 197, 64)).astype(dtype)
            for perm in itertools.permutations(range(3)):
                graph = helper.make_graph(
                    [helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], "t",
                    [helper.make_tensor_value_info("x", onnx_type, list(x.shape))],
                    [helper.make_tensor_value_info("y", onnx_type,
                                                   [x.shape[axis] for axis in perm])])
                cases.append((f"transpose_{dtype.__name__}_{''.join(map(str, perm))}", graph,
                              [x], [np.transpose(x, perm)]))
            qkv = rng.integers(-1000, 1000, (197, 2304)).astype(dtype)
            starts = [helper.make_tensor(f"s{i}", TensorProto.INT64, [1], [768 * i])
                      for i in range(3)]
            ends = [helper.make_tensor(f"e{i}", TensorProto.INT64, [1], [768 * (i + 1)])
                    for i in range(3)]
            axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
            graph = helper.make_graph(
                [helper.make_node("Slice", ["qkv", f"s{i}", f"e{i}", "axes"], [f"y{i}"])
                 for i in range(3)], "s",
                [helper.make_tensor_value_info("qkv", onnx_type, list(qkv.shape))],
                [helper.make_tensor_value_info(f"y{i}", onnx_type, [197, 768]) for i in range(3)],
                initializer=starts + ends + [axes])
            cases.append((f"slice_{dtype.__name__}", graph, [qkv],
                          [qkv[:, 768 * i:768 * (i + 1)] for i in range(3)]))
        failures = {}
        for name, graph, inputs, expected in cases:
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
            model.ir_version = 8
            path = os.path.join(self.dir, name + ".onnx")
            onnx.save(model, path)
            for threads in (1, 2):
                why = self.run_model(f"{name}_t{threads}", path, inputs, expected, threads)
                if why is not None:
                    failures[f"{name} on {threads} threads"] = why
        self.assertEqual(failures, {}, "\n".join(f"{k}: {v}" for k, v in failures.items()))

    def test_claimed_cases_pass_and_the_others_are_refused(self):
        cases = sorted(c for c in os.listdir(NODE_DIR) if FAMILIES.match(c) and "expanded" not in c)
        for case in CLAIMED:
            self.assertIn(case, cases, f"{case} is missing from the ONNX node cases")
        failures, wrong, refused, beyond = {}, {}, 0, 0
        for case in cases:
            why = self.run_case(case)
            if case in CLAIMED and why is not None:
                failures[case] = why
            elif why is None and case not in CLAIMED:
                beyond += 1  # a form no kernel takes, run as a fallback step: right all the same
            elif why is not None:
                refused += 1
                # A refusal says what is unsupported; a mismatch is a wrong answer.
                if why.startswith("output") or not re.search(
                        r"UNIMPLEMENTED|INVALID_ARGUMENT|not supported|cannot write", why):
                    wrong[case] = why
        print(f"{len(CLAIMED)} claimed cases pass, {beyond} other cases of the same ops pass "
              f"(fallback steps); {refused} are refused with a reason")
        self.assertEqual(failures, {}, "\n".join(f"{k}: {v}" for k, v in failures.items()))
        self.assertEqual(wrong, {}, "\n".join(f"{k}: {v}" for k, v in wrong.items()))


if __name__ == "__main__":
    unittest.main()
