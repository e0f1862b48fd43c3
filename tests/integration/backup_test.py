"""Back up and restore the schedule database, as docs/operations.md tells an operator to: SQLite
with the online backup of the sqlite3 shell while the server runs, PostgreSQL with pg_dump and
pg_restore.
A server started on the restored copy has every job and record: a finished job reads the same,
`query` answers from the tuned records, and a job that was mid-flight resumes and finishes."""
import os
import shutil
import subprocess
import unittest

import pg
from farm import DATA, Farm, scratch_dir
from soak_test import PostgresFarm

FINISHED = os.path.join(DATA, "mlp.onnx")
MID_FLIGHT = os.path.join(DATA, "transformer_block.onnx")


def trials(status):
    return int(status["trials_done"])


class BackupChecks:
    """Tunes one job to the end and another part way, backs up while the server runs, then
    checks a server on the restored database."""

    def tearDown(self):
        for farm in (self.farm, self.restored):
            if farm:
                farm.stop()
                shutil.rmtree(farm.dir, ignore_errors=True)

    def run_jobs(self):
        farm = self.farm
        farm.start_worker()
        finished = farm.submit(FINISHED, 6)
        done = farm.wait_for(finished, lambda s: s["state"] != "running")
        self.assertEqual(done["state"], "done", farm.read_logs())
        running = farm.submit(MID_FLIGHT, 40)
        farm.wait_for(running, lambda s: trials(s) >= 3)
        return finished, done, running

    def check_restored(self, restored, finished, done, running):
        jobs = {job["job_id"]: job for job in restored.client_json("jobs")["jobs"]}
        self.assertIn(finished, jobs)
        self.assertIn(running, jobs)
        again = restored.client_json("status", finished)
        self.assertEqual(again["state"], "done")
        self.assertEqual(trials(again), trials(done))
        query = restored.client_json("query", "--model", FINISHED)
        self.assertGreater(float(query["estimated_latency_seconds"]), 0, query)
        # The job that was running resumes from the copy and finishes.
        restored.start_worker()
        resumed = restored.wait_for(running, lambda s: s["state"] != "running")
        self.assertEqual(resumed["state"], "done", restored.read_logs())
        self.assertEqual(trials(resumed), 40)


class SqliteBackupTest(BackupChecks, unittest.TestCase):
    def setUp(self):
        # Software, not hardware: its absence fails (scripts/setup.sh installs sqlite3).
        self.assertTrue(shutil.which("sqlite3"),
                        "the sqlite3 shell is missing: install the Debian package sqlite3")
        self.farm = Farm()
        self.farm.start_server()
        self.restored = None

    def test_online_backup_restores_every_job_and_record(self):
        finished, done, running = self.run_jobs()
        backup = os.path.join(scratch_dir("gtco-backup-"), "gtco-backup.db")
        # docs/operations.md's command, while the server writes.
        subprocess.run(["sqlite3", self.farm.db, f".backup '{backup}'"], check=True, timeout=120)
        self.farm.stop()
        integrity = subprocess.run(["sqlite3", backup, "PRAGMA integrity_check"], check=True,
                                   capture_output=True, text=True).stdout.strip()
        self.assertEqual(integrity, "ok")
        self.restored = Farm()
        shutil.copy(backup, self.restored.db)
        shutil.rmtree(os.path.dirname(backup), ignore_errors=True)
        self.restored.start_server()
        self.check_restored(self.restored, finished, done, running)


class PostgresBackupTest(BackupChecks, unittest.TestCase):
    def setUp(self):
        try:
            self.postgres = pg.shared()
        except pg.Unavailable as error:
            raise unittest.SkipTest(f"no PostgreSQL server for this test: {error}")
        self.database = self.postgres.create_database("backup")
        self.farm = PostgresFarm(self.postgres, self.database)
        self.farm.start_server()
        self.restored = None

    @classmethod
    def tearDownClass(cls):
        pg.stop_shared()

    def tool(self, name):
        return os.path.join(self.postgres.bin_dir, name)

    def test_pg_dump_restores_every_job_and_record(self):
        finished, done, running = self.run_jobs()
        dump = os.path.join(scratch_dir("gtco-backup-"), "gtco.dump")
        # docs/operations.md's commands: a consistent dump while the server runs, restored into a new
        # database.
        subprocess.run([self.tool("pg_dump"), "--format=custom", "--file", dump,
                        self.postgres.uri(self.database)], check=True, timeout=120)
        self.farm.stop()
        target = self.postgres.create_database("restored")
        subprocess.run([self.tool("pg_restore"), "--no-owner", "--dbname",
                        self.postgres.uri(target), dump], check=True, timeout=120)
        shutil.rmtree(os.path.dirname(dump), ignore_errors=True)
        self.restored = PostgresFarm(self.postgres, target)
        self.restored.start_server()
        self.check_restored(self.restored, finished, done, running)


if __name__ == "__main__":
    unittest.main()
