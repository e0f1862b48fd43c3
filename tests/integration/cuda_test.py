"""The CUDA path end to end with real processes: a gtco-server and a `gtco-worker --target cuda`
tune the bundled transformer block for target cuda; every stored time comes from a verified run;
the block exported for the GPU (cubins from the records) runs under gtco-run and matches the CPU.
Needs an NVIDIA GPU: skips where the CUDA worker cannot start (no driver or no GPU), after checking
that it says so clearly."""
import json
import os
import subprocess
import unittest

import numpy as np

from farm import DATA, RUN, Farm

MODEL = os.path.join(DATA, "transformer_block.onnx")


class CudaEndToEndTest(unittest.TestCase):
    def test_transformer_block_on_the_gpu(self):
        farm = Farm()
        try:
            farm.start_server()
            worker = farm.start_worker(target="cuda")
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass  # still running: it found a GPU and registered
            if worker.poll() is not None:
                logs = farm.read_logs()
                self.assertEqual(worker.returncode, 2, logs)
                self.assertIn("--target cpu", logs)
                self.skipTest("no NVIDIA GPU here: " + logs.strip().splitlines()[-1])
            job = farm.submit(MODEL, 80, target="cuda")
            status = farm.wait_for(job, lambda s: s["state"] in ("done", "failed", "cancelled"),
                                   timeout=1200)
            self.assertEqual(status["state"], "done", farm.read_logs())
            ok, failed = farm.sql("SELECT SUM(ok), SUM(1 - ok) FROM measurements")[0]
            self.assertGreater(ok or 0, 0, farm.read_logs())
            # Every task has a verified best program on the GPU.
            for task in status["tasks"]:
                self.assertGreater(float(task.get("best_seconds", 0)), 0, task)
            kinds = dict(farm.sql(
                "SELECT error_kind, COUNT(*) FROM measurements WHERE ok = 0 GROUP BY 1"))
            print("failed measurements by kind:", kinds)
            query = farm.client_json("query", "--model", MODEL, "--target", "cuda")
            self.assertGreater(float(query["estimated_latency_seconds"]), 0)
            self.check_exported_artifact(farm)
        finally:
            farm.stop()


    def check_exported_artifact(self, farm):
        """export --target cuda (the worker's architecture, the records just measured) runs under
        gtco-run on this GPU and computes what ONNX Runtime computes for the same input
        (tests/data/transformer_block.{input,ort_output}.npy, made by ONNX Runtime 1.20.1 on CPU;
        TF32 Tensor Core matmuls carry ~1e-3 relative error per product)."""
        artifact = os.path.join(farm.dir, "block_cuda.gtco")
        summary = farm.client_json("export", MODEL, "--target", "cuda", "-o", artifact)
        self.assertEqual(summary["tuned"], summary["kernels"], summary)
        got, median = run_artifact(artifact, farm.dir)
        self.assertGreater(median, 0)
        want = np.load(os.path.join(DATA, "transformer_block.ort_output.npy"))
        # Measured on an H100: 4e-4 relative (TF32 products); allowed 5x that.
        self.assertTrue(np.allclose(got, want, rtol=2e-3, atol=2e-3), np.max(np.abs(got - want)))


def run_artifact(artifact, directory):
    """(output, median seconds) of `artifact` on the bundled input, by gtco-run --bench 20."""
    out_dir = os.path.join(directory, "out_" + os.path.basename(artifact))
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run([RUN, artifact, "--input",
                          "input=" + os.path.join(DATA, "transformer_block.input.npy"),
                          "--output-dir", out_dir, "--bench", "20", "--json"],
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"gtco-run {artifact}: {run.stderr}")
    return np.load(os.path.join(out_dir, "output.npy")), json.loads(run.stdout)["median_seconds"]

if __name__ == "__main__":
    unittest.main()
