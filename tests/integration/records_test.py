"""Records between databases: `gtco-client records export` on one farm, `records import` on
another. The second farm then answers `query` and `export` from the imported records, with their
provenance; importing again adds nothing; a tampered or malformed file is refused naming the
record or line and stores nothing; only an admin may import."""
import json
import os
import shutil
import unittest

from auth_test import admin
from farm import DATA, Farm, scratch_dir

MODEL = os.path.join(DATA, "mlp.onnx")


def read_lines(path):
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def write_lines(path, records):
    with open(path, "w") as file:
        for record in records:
            file.write(json.dumps(record) + "\n")


class RecordsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = scratch_dir("gtco-records-")
        cls.source = Farm()
        cls.source.start_server()
        cls.source.start_worker()
        job = cls.source.submit(MODEL, 12)
        status = cls.source.wait_for(job, lambda s: s["state"] != "running")
        assert status["state"] == "done", cls.source.read_logs()
        cls.exported = os.path.join(cls.work, "records.jsonl")
        cls.summary = cls.source.client_json("records", "export", "-o", cls.exported)
        cls.with_failed = os.path.join(cls.work, "all.jsonl")
        cls.source.client("records", "export", "-o", cls.with_failed, "--include-failed")
        cls.best = {r["workload_key"]: float(r["median_seconds"])
                    for r in cls.source.client_json("query", "--model", MODEL)["records"]}

    @classmethod
    def tearDownClass(cls):
        cls.source.stop()
        shutil.rmtree(cls.source.dir, ignore_errors=True)
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        self.target = Farm()
        self.target.start_server()

    def tearDown(self):
        self.target.stop()
        shutil.rmtree(self.target.dir, ignore_errors=True)

    def count(self):
        return self.target.sql("SELECT COUNT(*) FROM measurements")[0][0]

    def test_export_writes_every_ok_record_with_provenance(self):
        records = read_lines(self.exported)
        stored = self.source.sql("SELECT COUNT(*) FROM measurements WHERE ok = 1")[0][0]
        self.assertEqual(len(records), stored)
        self.assertEqual(self.summary["records"], stored)
        self.assertEqual(len(read_lines(self.with_failed)),
                         self.source.sql("SELECT COUNT(*) FROM measurements")[0][0])
        for record in records:
            self.assertTrue(record["ok"])
            self.assertTrue(record["hardware"] and record["worker_id"], record)
            self.assertGreater(int(record["measured_unix_ms"]), 0)
            self.assertTrue(record["workload_canonical"] and record["trace"], record)
        self.assertEqual({r["workload_key"] for r in records}, set(self.best))
        # Filtered by workload: only that workload's records.
        key = sorted(self.best)[0]
        one = os.path.join(self.work, "one.jsonl")
        self.source.client("records", "export", "-o", one, "--workload", key)
        self.assertTrue(read_lines(one))
        self.assertEqual({r["workload_key"] for r in read_lines(one)}, {key})

    def test_import_merges_idempotently_and_serves_query_and_export(self):
        farm = self.target
        before = farm.client_json("query", "--model", MODEL)["records"]
        self.assertTrue(before and not any(r["tuned"] for r in before), before)
        imported = farm.client_json("records", "import", self.exported)
        records = read_lines(self.exported)
        self.assertEqual(int(imported["received"]), len(records))
        self.assertEqual(int(imported["added"]), len(records))
        self.assertEqual(len(imported["job_ids"]), 1)
        self.assertEqual(self.count(), len(records))
        # Provenance kept: the measuring worker, its hardware and the time, as measured.
        rows = farm.sql("SELECT candidate_id, worker_id, hardware, measured_unix_ms, "
                        "median_seconds FROM measurements")
        source = {r[0]: r[1:] for r in self.source.sql(
            "SELECT candidate_id, worker_id, hardware, measured_unix_ms, median_seconds "
            "FROM measurements")}
        for row in rows:
            self.assertEqual(tuple(row[1:]), tuple(source[row[0]]))
        after = {r["workload_key"]: r for r in farm.client_json("query", "--model", MODEL)["records"]}
        for key, median in self.best.items():
            self.assertTrue(after[key]["tuned"])
            self.assertAlmostEqual(float(after[key]["median_seconds"]), median, places=12)
        # The import job is listed, finished, and counts for no team.
        job = farm.client_json("status", imported["job_ids"][0])
        self.assertEqual(job["state"], "done")
        # Twice: nothing new.
        again = farm.client_json("records", "import", self.exported)
        self.assertEqual(int(again["added"]), 0)
        self.assertEqual(int(again["already_present"]), len(records))
        self.assertEqual(again.get("job_ids", []), [])
        self.assertEqual(self.count(), len(records))
        # Failed trials merge too; the ok ones already there are left alone.
        everything = farm.client_json("records", "import", self.with_failed)
        self.assertEqual(int(everything["added"]), len(read_lines(self.with_failed)) - len(records))
        # An export on this farm uses the imported records.
        artifact = os.path.join(farm.dir, "mlp.gtco")
        farm.client("export", MODEL, "-o", artifact, "--require-tuned")
        self.assertTrue(os.path.getsize(artifact) > 0)
        # And the round trip exports the same records.
        round_trip = os.path.join(farm.dir, "again.jsonl")
        farm.client("records", "export", "-o", round_trip)
        self.assertEqual(sorted(json.dumps(r, sort_keys=True) for r in read_lines(round_trip)),
                         sorted(json.dumps(r, sort_keys=True) for r in records))

    def refused(self, path, code):
        result = self.target.client("records", "import", path, check=False)
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn(code, result.stderr)
        self.assertEqual(self.count(), 0, "a refused import stored records")
        return result.stderr

    def test_tampered_records_are_refused_and_nothing_is_stored(self):
        records = read_lines(self.exported)
        self.assertGreaterEqual(len(records), 2)
        bad = os.path.join(self.target.dir, "bad.jsonl")
        # A changed workload key: the canonical text no longer has that key.
        changed = [dict(r) for r in records]
        changed[-1]["workload_key"] = "0" * len(changed[-1]["workload_key"])
        write_lines(bad, changed)
        message = self.refused(bad, "INVALID_ARGUMENT")
        self.assertIn(f"record {len(records)}", message)
        self.assertIn(changed[-1]["candidate_id"], message)
        # A trace that does not belong to the workload.
        changed = [dict(r) for r in records]
        changed[0]["trace"] = "sketch no_such_sketch/v1\n"
        write_lines(bad, changed)
        self.assertIn("trace", self.refused(bad, "INVALID_ARGUMENT"))
        # Implausible timings.
        changed = [dict(r) for r in records]
        changed[1]["median_seconds"] = -1.0
        write_lines(bad, changed)
        self.assertIn("implausible timings", self.refused(bad, "INVALID_ARGUMENT"))
        # No provenance.
        changed = [dict(r) for r in records]
        changed[0]["hardware"] = ""
        write_lines(bad, changed)
        self.assertIn("provenance", self.refused(bad, "INVALID_ARGUMENT"))
        # Two different records with one id.
        changed = [dict(r) for r in records]
        changed[1]["candidate_id"] = changed[0]["candidate_id"]
        write_lines(bad, changed)
        self.assertIn("share candidate id", self.refused(bad, "INVALID_ARGUMENT"))
        # Not JSON, or JSON of something else: the client names the line, nothing is sent.
        with open(bad, "w") as file:
            file.write(json.dumps(records[0]) + "\n{not json\n")
        result = self.target.client("records", "import", bad, check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"{bad}:2:", result.stderr)
        write_lines(bad, [{"job_id": "j1", "state": "done"}])
        result = self.target.client("records", "import", bad, check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"{bad}:1:", result.stderr)
        result = self.target.client("records", "import", os.path.join(self.work, "missing"),
                                    check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("cannot read records file", result.stderr)
        self.assertEqual(self.count(), 0)


class RecordsAuthTest(unittest.TestCase):
    def test_only_an_admin_imports_and_any_team_exports(self):
        farm = Farm(auth=True)
        try:
            admin(farm.db, "create-team", "vision")
            submitter = admin(farm.db, "issue-token", "--team", "vision", "--role",
                              "submitter").stdout.strip()
            admin_token = admin(farm.db, "issue-token", "--role", "admin").stdout.strip()
            farm.start_server()
            path = os.path.join(farm.dir, "empty.jsonl")
            exported = farm.client_json("records", "export", "-o", path, token=submitter)
            self.assertEqual(exported["records"], 0)
            result = farm.client("records", "import", path, check=False, token=submitter)
            self.assertEqual(result.returncode, 3)
            self.assertIn("PERMISSION_DENIED", result.stderr)
            imported = farm.client_json("records", "import", path, token=admin_token)
            self.assertEqual(int(imported.get("added", 0)), 0)
        finally:
            farm.stop()
            shutil.rmtree(farm.dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
