"""Database faults mid-job: the disk under SQLite fills up, PostgreSQL's backends are terminated,
PostgreSQL restarts. While the database cannot serve, calls get UNAVAILABLE naming it and its
error; no acknowledged result is lost (workers retry their reports, or a candidate whose lease
lapsed is measured again); the server recovers by itself once the database is back; /metrics
counts the errors."""
import errno
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

import pg
from farm import DATA, Farm
from soak_test import PostgresFarm

MODEL = os.path.join(DATA, "transformer_block.onnx")
BUDGET = 60


def trials(status):
    return int(status["trials_done"])


def database_errors(farm):
    """gtco_database_errors_total{code="UNAVAILABLE"} from the server's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{farm.metrics_port}/metrics") as response:
        text = response.read().decode()
    found = re.search(r'^gtco_database_errors_total\{code="UNAVAILABLE"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


class DatabaseFaultChecks:
    """What every fault must leave: the job done, each measurement stored once, every task's
    allotment measured, the errors counted, and the server serving new work."""

    def wait_until(self, predicate, what, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        self.fail(f"timed out waiting until {what}:\n{self.farm.read_logs()}")

    def sql(self, query, *params):
        return self.farm.sql(query, *params)

    def assert_refused_as_unavailable(self, database_words):
        """A submit while the database is down: UNAVAILABLE, naming the database and its error."""
        result = self.farm.client("submit", MODEL, "--budget", "20", check=False, timeout=60)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)  # kExitUnreachable
        self.assertIn("cannot serve this now (UNAVAILABLE)", result.stderr)
        self.assertIn("database '", result.stderr)
        self.assertRegex(result.stderr, database_words)

    def assert_done_and_stored_once(self, job_id):
        farm = self.farm
        job = farm.wait_for(job_id, lambda s: s["state"] != "running", timeout=600)
        self.assertEqual(job["state"], "done", farm.read_logs())
        count, distinct = [int(value) for value in self.sql(
            "SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM measurements")[0]]
        self.assertEqual(count, distinct)
        self.assertEqual(count, trials(job))
        for task in job["tasks"]:
            rows = self.sql("SELECT COUNT(*) FROM measurements WHERE task_id=?", task["task_id"])
            self.assertEqual(int(rows[0][0]), int(task["trials_done"]), task)
            self.assertEqual(int(task["trials_done"]), int(task["trials_allotted"]), task)
        # Recovered by itself: new work is accepted and measured.
        again = farm.submit(os.path.join(DATA, "mlp.onnx"), 4)
        self.assertEqual(farm.wait_for(again, lambda s: s["state"] != "running")["state"], "done",
                         farm.read_logs())


class SqliteFullDiskTest(DatabaseFaultChecks, unittest.TestCase):
    """The server's database lives on a 16 MiB tmpfs of its own (a private mount namespace); the
    test fills it mid-job, checks the outage, then frees the space."""

    def setUp(self):
        if not shutil.which("unshare"):
            self.fail("unshare(1) is missing: install the Debian package util-linux")
        self.farm = Farm(metrics=True, lease_seconds=4)
        self.mount = tempfile.mkdtemp(prefix="gtco-tmpfs-")
        self.farm.db = os.path.join(self.mount, "gtco.db")
        user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        # "--propagation private" fails in a chroot whose root is not a mount point (a fresh
        # Debian root made with debootstrap): keep the propagation and make the mounts private
        # from inside where that works; tearDown unmounts anything that reached this namespace.
        self.farm.server_wrapper = [
            "unshare", *user, "--mount", "--propagation", "unchanged", "sh", "-c",
            'mount --make-rprivate / 2>/dev/null || mount --make-rprivate "$0" 2>/dev/null; '
            'mount -t tmpfs -o size=16m gtco-test-tmpfs "$0" && exec "$@"', self.mount]
        self.farm.start_server()
        # The tmpfs as the server sees it (its mount namespace, through /proc).
        self.inside = f"/proc/{self.farm.server.pid}/root{self.mount}"

    def sql(self, query, *params):
        """Farm.sql on a copy of the database files: SQLite resolves /proc/PID/root to "/" of
        this process's namespace, so it cannot open the server's file in place."""
        copy = os.path.join(self.farm.dir, "copy")
        shutil.rmtree(copy, ignore_errors=True)
        os.makedirs(copy)
        for suffix in ("", "-wal"):
            source = os.path.join(self.inside, "gtco.db" + suffix)
            if os.path.exists(source):
                shutil.copyfile(source, os.path.join(copy, "gtco.db" + suffix))
        self.farm.sql_path = os.path.join(copy, "gtco.db")
        return self.farm.sql(query, *params)

    def tearDown(self):
        self.farm.stop()
        if self.farm.server is not None:
            self.farm.server.wait(timeout=60)
        if os.path.ismount(self.mount):  # propagated out of the server's namespace
            subprocess.run(["umount", "-l", self.mount], check=False)
        shutil.rmtree(self.mount, ignore_errors=True)

    def fill(self):
        """Writes a ballast file until the tmpfs is full; returns its path."""
        ballast = os.path.join(self.inside, "ballast")
        chunk = b"\0" * (64 * 1024)
        with open(ballast, "wb", buffering=0) as file:
            try:
                while True:
                    file.write(chunk)
            except OSError as error:
                self.assertEqual(error.errno, errno.ENOSPC, error)
        try:  # the last partial chunk
            with open(ballast, "ab", buffering=0) as file:
                while True:
                    file.write(b"\0" * 512)
        except OSError:
            pass
        return ballast

    def test_disk_fills_mid_job_and_the_server_recovers(self):
        farm = self.farm
        farm.start_worker()
        job_id = farm.submit(MODEL, BUDGET)
        farm.wait_for(job_id, lambda s: trials(s) >= 5)
        ballast = self.fill()
        self.wait_until(lambda: database_errors(farm) > 0, "the server counts database errors")
        self.assert_refused_as_unavailable(r"full")
        os.unlink(ballast)
        self.assert_done_and_stored_once(job_id)
        self.assertEqual(self.sql("PRAGMA integrity_check")[0][0], "ok")
        log = open(os.path.join(farm.dir, "server.log")).read()
        self.assertIn("database or disk is full", log)


class PostgresFaultTest(DatabaseFaultChecks, unittest.TestCase):
    """A private PostgreSQL server (restarted by one case, so not the module's shared one)."""

    def setUp(self):
        self.postgres = pg.PostgresServer()
        try:
            self.postgres.start()
        except pg.Unavailable as error:
            self.postgres.stop()
            raise unittest.SkipTest(f"no PostgreSQL server for this test: {error}")
        self.database = self.postgres.create_database(self.id().rsplit(".", 1)[-1])
        self.farm = PostgresFarm(self.postgres, self.database, metrics=True, lease_seconds=4)
        self.farm.start_server()

    def tearDown(self):
        self.farm.stop()
        self.postgres.stop()

    def terminate_backends(self):
        """pg_terminate_backend on every connection the farm holds to its database."""
        return self.postgres.query(
            "postgres", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = '{self.database}' AND pid <> pg_backend_pid()")[0][0]

    def test_connections_terminated_mid_job(self):
        farm = self.farm
        farm.start_worker()
        job_id = farm.submit(MODEL, BUDGET)
        for round_index in range(3):
            farm.wait_for(job_id, lambda s: trials(s) >= 10 * (round_index + 1)
                          or s["state"] != "running")
            self.assertGreater(int(self.terminate_backends()), 0)
        self.assert_done_and_stored_once(job_id)

    def test_database_restart_mid_job(self):
        farm = self.farm
        farm.start_worker()
        job_id = farm.submit(MODEL, BUDGET)
        farm.wait_for(job_id, lambda s: trials(s) >= 5)
        self.postgres.pause()
        try:
            self.wait_until(lambda: database_errors(farm) > 0, "the server counts database errors")
            self.assert_refused_as_unavailable(r"postgresql://[^']*127\.0\.0\.1")
        finally:
            self.postgres.resume()
        self.assert_done_and_stored_once(job_id)


if __name__ == "__main__":
    unittest.main()
