"""End to end on loopback: submit the bundled transformer block, watch it, query it, resubmit."""
import json
import os
import unittest

from farm import DATA, Farm

MODEL = os.path.join(DATA, "transformer_block.onnx")


class EndToEndTest(unittest.TestCase):
    def setUp(self):
        self.farm = Farm(metrics=True)
        self.farm.start_server()
        self.farm.start_worker()

    def tearDown(self):
        self.farm.stop()

    def check_measurement_counts(self, query):
        """Each record of `query` (a --json query of MODEL) is its trace's measurements taken
        together: their count and the mean of their medians, and its text line says "(Nx)"
        where N > 1. Returns the workload keys whose best was measured more than once."""
        farm = self.farm
        counts = {}
        for record in query["records"]:
            rows = farm.sql("SELECT median_seconds FROM measurements WHERE workload_key=? AND "
                            "target='cpu' AND ok=1 AND trace=?", record["workload_key"],
                            record["trace"])
            self.assertEqual(int(record["measurements"]), len(rows), record)
            self.assertAlmostEqual(record["median_seconds"], sum(r[0] for r in rows) / len(rows),
                                   delta=1e-12)
            counts[record["workload_key"]] = len(rows)
        text = farm.client("query", "--model", MODEL, "--target", "cpu").stdout
        lines = [line for line in text.splitlines() if line.split() and line.split()[0] in counts]
        self.assertEqual(len(lines), len(counts), text)
        for line in lines:
            count = counts[line.split()[0]]
            if count > 1:
                self.assertIn(f"({count}x)", line)
            else:
                self.assertNotRegex(line, r"\(\d+x\)")
        return [key for key, count in counts.items() if count > 1]

    def test_submit_watch_query_and_reuse(self):
        farm = self.farm
        watched = farm.client("submit", MODEL, "--target", "cpu", "--budget", "60", "--team",
                              "vision", "--watch", "--json")
        self.assertEqual(watched.returncode, 0, watched.stderr)
        job = json.loads(watched.stdout)
        self.assertEqual(job["state"], "done")
        self.assertEqual(job["team"], "vision")
        self.assertGreaterEqual(len(job["tasks"]), 5)
        kinds = {task["kind"] for task in job["tasks"]}
        # The block's attention is planned both as one fused task and as matmul, softmax,
        # matmul (the measured cheaper one is chosen: see test_explain).
        self.assertTrue({"matmul", "attention", "layernorm", "softmax"} <= kinds, kinds)
        for task in job["tasks"]:
            self.assertEqual(task["state"], "done", task)
            self.assertGreater(task["best_seconds"], 0, task)
            self.assertEqual(int(task["trials_done"]), int(task["trials_allotted"]), task)
        self.assertEqual(int(job["trials_done"]), 60)

        # Every stored time was verified: the database holds one row per trial, ok ones timed.
        rows = farm.sql("SELECT COUNT(*), SUM(ok) FROM measurements")
        self.assertEqual(rows[0][0], 60)
        self.assertEqual(farm.sql("SELECT COUNT(*) FROM measurements WHERE ok=1 AND median_seconds<=0")[0][0], 0)

        query = farm.client_json("query", "--model", MODEL, "--target", "cpu")
        self.assertEqual(len(query["records"]), len(job["tasks"]))
        for record in query["records"]:
            self.assertTrue(record["tuned"], record)
            self.assertGreater(record["median_seconds"], 0)
            self.assertTrue(record["trace"])
        self.assertGreater(query["estimated_latency_seconds"], 0)

        self.check_measurement_counts(query)


        key = job["tasks"][0]["workload_key"]
        by_key = farm.client_json("query", "--workload", key, "--target", "cpu", "--limit", "3")
        self.assertEqual(by_key["records"][0]["workload_key"], key)
        self.assertLessEqual(len(by_key["records"]), 3)
        medians = [r["median_seconds"] for r in by_key["records"]]
        self.assertEqual(medians, sorted(medians))

        # The same model again is answered from the database: no new trials.
        again = json.loads(farm.client("submit", MODEL, "--target", "cpu", "--budget", "60",
                                       "--watch", "--json").stdout)
        self.assertEqual(again["state"], "done")
        self.assertEqual(int(again["trials_done"]), 0)
        self.assertTrue(all(t["state"] == "from_database" for t in again["tasks"]))
        self.assertEqual(farm.sql("SELECT COUNT(*) FROM measurements")[0][0], 60)

        self.assertEqual(farm.client("health").stdout.strip(), "SERVING")
        listing = farm.client_json("jobs")
        self.assertEqual(len(listing["jobs"]), 2)
        text = farm.client("status", job["job_id"]).stdout
        self.assertIn(job["job_id"], text)
        self.assertIn("done", text)

    def test_explain_shows_the_scheduler_at_work(self):
        farm = self.farm
        job = json.loads(farm.client("submit", MODEL, "--budget", "140", "--rounds", "4",
                                     "--watch", "--json").stdout)
        self.assertEqual(job["state"], "done")
        self.assertEqual(job["scheduler"], "gradient")
        self.assertEqual(job["round_size"], 4)
        # In rounds of 4 a task proposes again after its first results: its best is measured a
        # second time before it is trusted (a job's whole allotment in one round is not).
        confirmed = self.check_measurement_counts(
            farm.client_json("query", "--model", MODEL, "--target", "cpu"))
        self.assertTrue(confirmed, "no task's best was measured twice")
        explained = farm.client_json("status", job["job_id"], "--explain")
        decisions = explained["decisions"]
        self.assertTrue(any("warm-up" in d for d in decisions) or
                        any("expected gain" in d for d in decisions), decisions)
        self.assertTrue(any("expected gain" in d for d in decisions), decisions)
        for task in explained["tasks"]:
            applicable = [m for m in task["mappings"] if m["applies"]]
            self.assertGreaterEqual(len(applicable), 1, task)
            self.assertEqual(sum(int(m["trials"]) for m in applicable), int(task["trials_done"]))
            for mapping in applicable:
                self.assertGreater(int(mapping["considered"]), 0, mapping)
                self.assertLessEqual(int(mapping["admitted"]), int(mapping["considered"]))
        # After the warm-up the budget is not spread evenly any more.
        trials = [int(t["trials_done"]) for t in explained["tasks"]]
        self.assertGreater(max(trials) - min(trials), 4, trials)
        # The plan weighs the block's attention fused against matmul, softmax, matmul: both
        # alternatives' workloads are tasks, each costed from their best measurements.
        self.assertEqual(len(explained["plan"]), 1, explained["plan"])
        choice = explained["plan"][0]
        self.assertIn("attention", choice["description"])
        names = [a["name"] for a in choice["alternatives"]]
        self.assertEqual(names, ["fused attention", "unfused attention"])
        task_ids = {t["task_id"] for t in explained["tasks"]}
        best = {t["task_id"]: float(t["best_seconds"]) for t in explained["tasks"]}
        for alternative in choice["alternatives"]:
            self.assertTrue(alternative["measured"], alternative)
            total = 0.0
            for entry in alternative["tasks"]:
                self.assertIn(entry["task_id"], task_ids)
                total += int(entry["count"]) * best[entry["task_id"]]
            self.assertAlmostEqual(float(alternative["seconds"]), total, places=12)
        chosen = [a for a in choice["alternatives"] if a["chosen"]]
        self.assertEqual(len(chosen), 1)
        self.assertEqual(float(chosen[0]["seconds"]),
                         min(float(a["seconds"]) for a in choice["alternatives"]))
        # Only the chosen alternative's tasks run in the plan; the others run 0 times.
        chosen_ids = {t["task_id"] for t in chosen[0]["tasks"]}
        other_ids = {t["task_id"] for a in choice["alternatives"] if not a["chosen"]
                     for t in a["tasks"]} - chosen_ids
        runs = {t["task_id"]: int(t["runs"]) for t in explained["tasks"]}
        self.assertTrue(all(runs[t] > 0 for t in chosen_ids), runs)
        self.assertTrue(all(runs[t] == 0 for t in other_ids), runs)
        latency = sum(runs[t] * best[t] for t in runs)
        self.assertAlmostEqual(float(explained["estimated_latency_seconds"]), latency, places=12)
        text = farm.client("status", job["job_id"], "--explain").stdout
        self.assertIn("latest scheduler decisions", text)
        self.assertIn("schedules after pruning", text)
        self.assertIn("plan choices", text)
        self.assertIn("unfused attention", text)
        # Where two mappings of a task both have a best, the fastest is named with its gain over
        # the runner-up (on an AMX host: what the tile mapping gained over AVX-512).
        for task in explained["tasks"]:
            bests = sorted((float(m["best_seconds"]), m["name"]) for m in task["mappings"]
                           if m["applies"] and float(m.get("best_seconds", 0)) > 0)
            if len(bests) >= 2:
                self.assertIn("    fastest: %s, %.2fx %s's best" % (
                    bests[0][1], bests[1][0] / bests[0][0], bests[1][1]), text)

    def test_metrics_endpoint(self):
        import urllib.request
        farm = self.farm
        farm.client("submit", os.path.join(DATA, "mlp.onnx"), "--budget", "6", "--watch")
        farm.client("jobs")
        import time
        time.sleep(0.6)  # one server tick refreshes the gauges
        with urllib.request.urlopen(f"http://127.0.0.1:{farm.metrics_port}/metrics") as response:
            text = response.read().decode()
            self.assertIn("text/plain", response.headers["Content-Type"])
        for family in ("gtco_jobs", "gtco_trials_total", "gtco_queue_depth",
                       "gtco_connected_workers", "gtco_measurement_seconds_bucket"):
            self.assertIn(family, text)
        self.assertIn('gtco_trials_total{outcome="ok",target="cpu"} 6', text)
        self.assertIn('gtco_jobs{state="done"} 1', text)


if __name__ == "__main__":
    unittest.main()
