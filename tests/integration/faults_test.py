"""Faults: workers and the server killed with SIGKILL mid-job; nothing lost, nothing twice."""
import os
import signal
import time
import unittest

from farm import DATA, Farm

MODEL = os.path.join(DATA, "transformer_block.onnx")
BUDGET = 80


def trials(status):
    return int(status["trials_done"])


class FaultsTest(unittest.TestCase):
    def setUp(self):
        self.farm = Farm(lease_seconds=4)
        self.farm.start_server()

    def tearDown(self):
        self.farm.stop()

    def assert_stored_exactly_once(self, job):
        farm = self.farm
        stored = farm.sql("SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM measurements")[0]
        self.assertEqual(stored[0], stored[1])
        self.assertEqual(stored[0], trials(job))
        for task in job["tasks"]:
            rows = farm.sql("SELECT COUNT(*) FROM measurements WHERE task_id=?", task["task_id"])
            self.assertEqual(rows[0][0], int(task["trials_done"]), task)
            self.assertEqual(int(task["trials_done"]), int(task["trials_allotted"]), task)
        self.assertEqual(farm.sql("PRAGMA integrity_check")[0][0], "ok")

    def test_worker_killed_mid_job(self):
        farm = self.farm
        first = farm.start_worker()
        job_id = farm.submit(MODEL, BUDGET)
        farm.wait_for(job_id, lambda s: trials(s) >= 10)
        first.send_signal(signal.SIGKILL)
        first.wait()
        farm.start_worker()
        job = farm.wait_for(job_id, lambda s: s["state"] != "running")
        self.assertEqual(job["state"], "done", farm.read_logs())
        self.assert_stored_exactly_once(job)

    def test_server_killed_mid_job_resumes(self):
        farm = self.farm
        farm.start_worker()
        job_id = farm.submit(MODEL, BUDGET)
        farm.wait_for(job_id, lambda s: trials(s) >= 10)
        farm.kill_server()
        time.sleep(0.5)
        farm.start_server()  # same database file
        job = farm.wait_for(job_id, lambda s: s["state"] != "running")
        self.assertEqual(job["state"], "done", farm.read_logs())
        self.assert_stored_exactly_once(job)
        log = open(os.path.join(farm.dir, "server.log")).read()
        self.assertIn(f"resumed job {job_id}", log)


if __name__ == "__main__":
    unittest.main()
