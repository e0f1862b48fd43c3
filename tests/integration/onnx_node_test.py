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
import json
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np
from onnx import TensorProto, numpy_helper

from farm import RUN, SOURCE_DIR, Farm

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
        if not os.path.isdir(NODE_DIR):
            raise unittest.SkipTest(f"no ONNX node cases in {NODE_DIR}: run scripts/setup.sh --tests")
        cls.farm = Farm()
        cls.farm.start_server()
        cls.dir = tempfile.mkdtemp(prefix="gtco-node-")

    @classmethod
    def tearDownClass(cls):
        cls.farm.stop()

    def run_case(self, case):
        """None when the case passes, else why not (export refusal or mismatch)."""
        case_dir = os.path.join(NODE_DIR, case)
        artifact = os.path.join(self.dir, case + ".gtco")
        exported = self.farm.client("export", os.path.join(case_dir, "model.onnx"), "-o",
                                    artifact, "--json", check=False)
        if exported.returncode != 0:
            return "export: " + exported.stderr.strip()
        data = os.path.join(case_dir, "test_data_set_0")
        args, out_dir = [], os.path.join(self.dir, case + ".out")
        os.makedirs(out_dir, exist_ok=True)
        described = subprocess.run([RUN, artifact, "--describe", "--json"], capture_output=True,
                                   text=True, check=True).stdout
        inputs = json.loads(described)["inputs"]
        for index, path in enumerate(sorted(glob.glob(os.path.join(data, "input_*.pb")),
                                            key=lambda p: int(re.findall(r"\d+", p)[-1]))):
            _, value = to_numpy(path)
            if index >= len(inputs):
                break  # an input the exporter folded into a constant
            npy = os.path.join(self.dir, f"{case}.in{index}.npy")
            np.save(npy, value)
            args += ["--input", f"{inputs[index]['name']}={npy}"]
        run = subprocess.run([RUN, artifact, "--output-dir", out_dir, *args],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return "run: " + run.stderr.strip()
        outputs = json.loads(described)["outputs"]
        for index, path in enumerate(sorted(glob.glob(os.path.join(data, "output_*.pb")))):
            _, want = to_numpy(path)
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

    def test_claimed_cases_pass_and_the_others_are_refused(self):
        cases = sorted(c for c in os.listdir(NODE_DIR) if FAMILIES.match(c) and "expanded" not in c)
        for case in CLAIMED:
            self.assertIn(case, cases, f"{case} is missing from the ONNX node cases")
        failures, wrong, refused = {}, {}, 0
        for case in cases:
            why = self.run_case(case)
            if case in CLAIMED and why is not None:
                failures[case] = why
            elif why is not None:
                refused += 1
                # A refusal says what is unsupported; a mismatch is a wrong answer.
                if why.startswith("output") or not re.search(
                        r"UNIMPLEMENTED|INVALID_ARGUMENT|not supported|cannot write", why):
                    wrong[case] = why
        print(f"{len(CLAIMED)} claimed cases pass; {refused} other cases of the same ops are "
              "refused with a reason")
        self.assertEqual(failures, {}, "\n".join(f"{k}: {v}" for k, v in failures.items()))
        self.assertEqual(wrong, {}, "\n".join(f"{k}: {v}" for k, v in wrong.items()))


if __name__ == "__main__":
    unittest.main()
