"""The model zoo's CI subset (bench/zoo/run_zoo.py --ci): real torchvision and transformers models
exported at test time, tuned with tiny budgets on a local farm, exported (with the whole-model
check) and compared with ONNX Runtime. None may be wrong or fail; RoBERTa's position ids run as
fallback steps."""
import os
import subprocess
import sys
import unittest

from farm import SOURCE_DIR, scratch_dir


class ZooTest(unittest.TestCase):
    def test_ci_subset_runs_and_matches_onnx_runtime(self):
        transformers = os.path.join(SOURCE_DIR, ".deps", "transformers")
        ort = os.path.join(SOURCE_DIR, ".deps", "python")
        for needed in (transformers, ort):
            if not os.path.isdir(needed):
                self.fail(f"{needed} is missing: run scripts/setup.sh --tests")
        work = scratch_dir("gtco-zoo-ci-")
        report = os.path.join(work, "zoo_ci.md")
        env = dict(os.environ, PYTHONPATH=f"{transformers}:{ort}")
        done = subprocess.run(
            ["/usr/bin/python3", os.path.join(SOURCE_DIR, "bench", "zoo", "run_zoo.py"), "--ci",
             "--models-dir", os.path.join(work, "models"), "--out", report, "--runs", "6",
             "--rounds", "2"],
            capture_output=True, text=True, env=env, timeout=1500)
        sys.stdout.write(done.stdout[-4000:])
        self.assertEqual(done.returncode, 0, done.stdout[-4000:] + done.stderr[-4000:])
        with open(report) as text:
            lines = text.read().splitlines()
        rows = {line.split("|")[1].strip(): line for line in lines
                if line.startswith("| ") and not line.startswith("| model")}
        for name in ("squeezenet1_1", "mobilenet_v3_small", "roberta_tiny",
                     "shufflenet_v2_x1_0_112"):
            self.assertIn(name, rows)
            self.assertIn("| accepted |", rows[name])
            self.assertIn("passed", rows[name])  # the export's own check
        self.assertIn("CumSum", rows["roberta_tiny"])  # a fallback step


if __name__ == "__main__":
    unittest.main()
