"""Bad input through the real CLI: the gRPC code, an actionable message, and a server that
keeps serving."""
import os
import unittest

from farm import CLIENT, DATA, Farm, free_port, scratch_dir
import subprocess


class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.farm = Farm()
        cls.farm.start_server()
        cls.tmp = scratch_dir("gtco-bad-")

    @classmethod
    def tearDownClass(cls):
        cls.farm.stop()

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as file:
            file.write(data)
        return path

    def refused(self, *args):
        result = self.farm.client(*args, check=False)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        # The server still serves afterwards.
        self.assertEqual(self.farm.client("jobs", check=False).returncode, 0)
        return result.stderr

    def test_not_onnx(self):
        path = self.write("not_a_model.onnx", b"this is not a protobuf \xff\xfe at all" * 10)
        message = self.refused("submit", path, "--budget", "10")
        self.assertIn("INVALID_ARGUMENT", message)
        self.assertIn("ONNX", message)

    def test_truncated_model(self):
        with open(os.path.join(DATA, "transformer_block.onnx"), "rb") as file:
            data = file.read()
        path = self.write("truncated.onnx", data[: len(data) // 2])
        message = self.refused("submit", path, "--budget", "10")
        self.assertIn("INVALID_ARGUMENT", message)

    def test_unsupported_op(self):
        message = self.refused("submit", os.path.join(DATA, "unsupported_op.onnx"), "--budget", "10")
        self.assertIn("UNIMPLEMENTED", message)
        self.assertIn("unsupported ONNX op", message)

    def test_symbolic_dimension_needs_shape(self):
        model = os.path.join(DATA, "dynamic_mlp.onnx")
        message = self.refused("submit", model, "--budget", "10")
        self.assertIn("--shape", message)
        # With the shape given, it is accepted.
        result = self.farm.client("submit", model, "--budget", "10", "--shape", "input=2x32",
                                  "--json", check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.farm.client("cancel", __import__("json").loads(result.stdout)["job_id"])

    def test_budget_zero(self):
        message = self.refused("submit", os.path.join(DATA, "mlp.onnx"), "--budget", "0")
        self.assertIn("INVALID_ARGUMENT", message)
        self.assertIn("budget", message)

    def test_unknown_job(self):
        for command in ("status", "cancel", "watch"):
            message = self.refused(command, "j-does-not-exist")
            self.assertIn("NOT_FOUND", message)
            self.assertIn("j-does-not-exist", message)

    def test_unknown_workload(self):
        message = self.refused("query", "--workload", "matmul-0000", "--target", "cpu")
        self.assertIn("NOT_FOUND", message)

    def test_usage_errors(self):
        for args in (["submit"], ["frobnicate"], ["submit", "x.onnx", "--budget", "many"],
                     ["query"], ["--bogus-flag", "jobs"]):
            result = self.farm.client(*args, check=False)
            self.assertEqual(result.returncode, 2, args)

    def test_unreachable_server(self):
        result = subprocess.run([CLIENT, "--server", f"127.0.0.1:{free_port()}", "--timeout", "2",
                                 "jobs"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 4, result.stderr)
        self.assertIn("cannot reach the server", result.stderr)


if __name__ == "__main__":
    unittest.main()
