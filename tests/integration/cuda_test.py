"""The CUDA path end to end with real processes: a gtco-server and a `gtco-worker --target cuda`
tune the bundled transformer block for target cuda; every stored time comes from a verified run.
Needs an NVIDIA GPU: skips where the CUDA worker cannot start (no driver or no GPU), after checking
that it says so clearly."""
import os
import subprocess
import unittest

from farm import DATA, Farm

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
        finally:
            farm.stop()


if __name__ == "__main__":
    unittest.main()
