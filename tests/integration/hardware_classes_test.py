"""A farm with two hardware classes of CPU workers (this host as it is, and the same host capped
at AVX2 with GTCO_CPU_ISA=avx2, as an AVX2-only machine would be): each class gets its own search
spaces, pruned for its hardware, and measures only candidates made for it. No AVX2 worker is
sent an AVX-512 program (which it would have to fail), and `status --explain` shows the spaces
per class."""
import os
import shutil
import time
import unittest
from collections import defaultdict

from farm import DATA, Farm

MODEL = os.path.join(DATA, "transformer_block.onnx")
BF16 = os.path.join(DATA, "matmul_bf16.onnx")


def host_has_avx512():
    with open("/proc/cpuinfo") as cpuinfo:
        return any(line.startswith("flags") and " avx512f" in line for line in cpuinfo)


class HardwareClassesTest(unittest.TestCase):
    def setUp(self):
        if not host_has_avx512():
            self.skipTest("this host has no AVX-512: both workers would be one hardware class")
        self.farm = Farm()
        self.farm.start_server()

    def tearDown(self):
        self.farm.stop()
        shutil.rmtree(self.farm.dir, ignore_errors=True)

    def test_each_class_searches_its_own_space(self):
        farm = self.farm
        farm.start_worker()
        farm.start_worker(env={"GTCO_CPU_ISA": "avx2"})
        job = farm.submit(MODEL, 80)
        status = farm.wait_for(job, lambda s: s["state"] != "running")
        self.assertEqual(status["state"], "done", farm.read_logs())
        rows = farm.sql("SELECT hardware, trace, ok, error FROM measurements")
        by_class = defaultdict(list)
        for hardware, trace, ok, error in rows:
            by_class[hardware].append((trace.split(";")[0], ok, error))
        self.assertEqual(len(by_class), 2, f"measured by {sorted(by_class)}")
        avx2 = [h for h in by_class if "avx512f" not in h]
        self.assertEqual(len(avx2), 1, sorted(by_class))
        for sketch, ok, error in by_class[avx2[0]]:
            self.assertNotIn("avx512", sketch, "an AVX-512 schedule went to the AVX2 class")
        for hardware, measured in by_class.items():
            failed = [error for _, ok, error in measured if not ok]
            self.assertEqual(failed, [], f"{hardware}: failed trials")
        # The AVX-512 class tried AVX-512 mappings (what a farm that pruned for AVX2 first would
        # never do).
        avx512 = [h for h in by_class if "avx512f" in h][0]
        self.assertTrue(any("avx512" in sketch for sketch, _, _ in by_class[avx512]),
                        sorted({s for s, _, _ in by_class[avx512]}))
        # status --explain: one set of mappings per class, each pruned for its hardware.
        explained = farm.client_json("status", job, "--explain")
        for task in explained["tasks"]:
            classes = defaultdict(dict)
            for mapping in task["mappings"]:
                classes[mapping["hardware"]][mapping["name"]] = mapping
            if len(classes) < 2:
                continue
            for hardware, mappings in classes.items():
                for name, mapping in mappings.items():
                    if "avx512" in name and "avx512f" not in hardware:
                        self.assertFalse(mapping["applies"], (hardware, mapping))
        text = farm.client("status", job, "--explain").stdout
        self.assertIn("on cpu: ", text)

    def test_a_task_no_present_class_can_run_waits_for_one_that_can(self):
        with open("/proc/cpuinfo") as cpuinfo:
            if not any(line.startswith("flags") and " avx512_bf16" in line for line in cpuinfo):
                self.skipTest("this host has no AVX-512 BF16")
        farm = self.farm
        farm.start_worker(env={"GTCO_CPU_ISA": "avx2"})
        job = farm.submit(BF16, 6)
        # The AVX2 class has no bf16 mapping: nothing is measured, the job waits and says why.
        farm.wait_for(job, lambda s: any(m.get("hardware") for t in s["tasks"]
                                         for m in t.get("mappings", [])), timeout=120)
        time.sleep(3)
        status = farm.client_json("status", job, "--explain")
        self.assertEqual(status["state"], "running", status)
        self.assertEqual(int(status.get("trials_done", 0)), 0, status)
        mappings = [m for t in status["tasks"] for m in t["mappings"]]
        self.assertTrue(mappings and not any(m.get("applies") for m in mappings), mappings)
        self.assertTrue(all("avx512_bf16" in m["reason"] or "avx512f" in m["reason"]
                            for m in mappings if m["name"] == "avx512_bf16"), mappings)
        # A worker of a class that can run it arrives: the job is tuned and finishes.
        farm.start_worker()
        done = farm.wait_for(job, lambda s: s["state"] != "running", timeout=300)
        self.assertEqual(done["state"], "done", farm.read_logs())
        hardware = {row[0] for row in farm.sql("SELECT hardware FROM measurements")}
        self.assertTrue(hardware and all("avx512f" in h for h in hardware), hardware)


if __name__ == "__main__":
    unittest.main()
