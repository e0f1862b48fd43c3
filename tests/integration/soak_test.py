"""Soak: one job, several real workers, random workers and the server killed with SIGKILL many
times while it runs; the job completes and every trial is stored exactly once. On SQLite and on
a private PostgreSQL server (pg.py), where the end-to-end and fault tests run once more too.
LeaseRenewalTest: what the soak showed about lease renewal by heartbeats, pinned down.

GTCO_SOAK_SEED=N replays a run's kill schedule (each run prints its seed).
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import unittest

import end_to_end_test
import faults_test
import pg
from farm import DATA, Farm

MODEL = os.path.join(DATA, "transformer_block.onnx")
BUDGET = 150
WORKERS = 3
SERVER_KILLS = 5
LEASE_SECONDS = 2
CHAOS_TIMEOUT = 240  # seconds for the job under chaos (it takes ~10 s undisturbed)
WORKER_KILL_EVERY = (1.0, 3.0)  # seconds between worker kills, uniformly drawn


def tearDownModule():
    pg.stop_shared()


def _postgres_server():
    """The module's PostgreSQL server; skips the calling test where none can be started."""
    try:
        return pg.shared()
    except pg.Unavailable as error:
        raise unittest.SkipTest(f"no PostgreSQL server for this test: {error}")


def _literal(value):
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _value(text):
    if text is None:
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


class SoakFarm(Farm):
    """A Farm that closes its log files at stop() (the soak starts dozens of processes)."""

    def _log(self, name):
        handle = super()._log(name)
        self.__dict__.setdefault("handles", []).append(handle)
        return handle

    def stop(self):
        super().stop()
        for handle in self.__dict__.pop("handles", []):
            handle.close()


class PostgresFarm(SoakFarm):
    """A Farm whose server keeps its database in `database` on a PostgreSQL server."""

    def __init__(self, server, database, **kwargs):
        super().__init__(**kwargs)
        self.postgres = server
        self.database = database
        self.db = server.uri(database)

    def sql(self, query, *params):
        """Farm.sql on PostgreSQL: '?' placeholders filled in as literals; numbers as numbers."""
        pieces = query.split("?")
        if len(pieces) != len(params) + 1:
            raise ValueError(f"{len(params)} parameters for {query}")
        text = pieces[0] + "".join(_literal(p) + piece for p, piece in zip(params, pieces[1:]))
        return [tuple(_value(field) for field in row)
                for row in self.postgres.query(self.database, text)]

    def read_logs(self):
        return super().read_logs() + "\n--- postgresql server.log\n" + self.postgres.log()


def _children(pid):
    """Process ids whose parent is `pid` (the worker's runner)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class SoakMixin:
    """The soak itself; a subclass provides make_farm() and the backend's integrity check."""

    def make_farm(self):
        raise NotImplementedError

    def integrity_problems(self):
        """What the backend's own consistency check reports ([] when clean)."""
        raise NotImplementedError

    def setUp(self):
        self.farm = self.make_farm()
        self.farm.start_server()

    def tearDown(self):
        self.farm.stop()

    # --- the chaos ------------------------------------------------------------------------

    def status(self, job_id):
        """The job's status, or None while the server is down or restarting."""
        try:
            result = self.farm.client("--timeout", "5", "status", job_id, "--json", check=False,
                                      timeout=20)
        except subprocess.TimeoutExpired:
            return None
        if result.returncode != 0:
            return None
        return json.loads(result.stdout)

    def start_worker(self):
        return self.farm.start_worker(extra=["--threads", "1"])

    def kill_worker(self, worker):
        runners = _children(worker.pid)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        self.orphans.extend(runners)

    def run_chaos(self, job_id, rng):
        farm = self.farm
        workers = [self.start_worker() for _ in range(WORKERS)]
        # Server kills at progress marks spread over the job, so that all of them land while
        # it runs; worker kills on a random clock.
        marks = [BUDGET * (k + 1) // (SERVER_KILLS + 2) for k in range(SERVER_KILLS)]
        server_kills = worker_kills = 0
        next_worker_kill = time.time() + rng.uniform(*WORKER_KILL_EVERY)
        deadline = time.time() + CHAOS_TIMEOUT
        progress = []
        while True:
            self.assertLess(time.time(), deadline,
                            f"job {job_id} not done after {CHAOS_TIMEOUT} s of chaos "
                            f"(progress {progress[-10:]}):\n{farm.read_logs()}")
            status = self.status(job_id)
            if status is not None:
                if status["state"] != "running":
                    break
                trials = int(status["trials_done"])
                progress.append(trials)
                if server_kills < SERVER_KILLS and trials >= marks[server_kills]:
                    time.sleep(rng.uniform(0, 0.5))  # land anywhere in a lease/report cycle
                    farm.kill_server()
                    server_kills += 1
                    down = rng.uniform(0.2, 1.5)
                    if rng.random() < 0.5:  # sometimes a worker dies while the server is down
                        victim = rng.randrange(len(workers))
                        self.kill_worker(workers[victim])
                        worker_kills += 1
                        workers[victim] = self.start_worker()
                    time.sleep(down)
                    farm.start_server()  # the same database and port
                    print(f"  server kill {server_kills} at {trials} trials, down {down:.1f} s",
                          file=sys.stderr)
            if time.time() >= next_worker_kill:
                victim = rng.randrange(len(workers))
                self.kill_worker(workers[victim])
                worker_kills += 1
                if rng.random() < 0.3:
                    time.sleep(rng.uniform(0, 1.0))  # a short gap with one worker less
                workers[victim] = self.start_worker()
                next_worker_kill = time.time() + rng.uniform(*WORKER_KILL_EVERY)
            time.sleep(0.25)
        return status, server_kills, worker_kills

    # --- the checks -----------------------------------------------------------------------

    def rows(self, query, job_id):
        """`query` with :job replaced by the job id's literal, as rows of numbers/strings."""
        self.assertRegex(job_id, r"^[A-Za-z0-9_.-]+$")
        return self.farm.sql(query.replace(":job", _literal(job_id)))

    def assert_stored_exactly_once(self, job):
        job_id = job["job_id"]
        logs = self.farm.read_logs

        # trials_done is the number of the job's measurement rows, each candidate's only one.
        count, distinct = self.rows(
            "SELECT COUNT(*), COUNT(DISTINCT m.candidate_id) FROM measurements m "
            "JOIN tasks t ON t.task_id = m.task_id WHERE t.job_id = :job", job_id)[0]
        self.assertEqual(count, distinct, "a candidate measured twice")
        self.assertEqual(count, int(job["trials_done"]), logs())
        self.assertEqual(int(job["trials_done"]), BUDGET, job)
        per_task = dict(self.rows(
            "SELECT t.task_id, COUNT(m.candidate_id) FROM tasks t LEFT JOIN measurements m "
            "ON m.task_id = t.task_id WHERE t.job_id = :job GROUP BY t.task_id", job_id))
        for task in job["tasks"]:
            self.assertEqual(per_task.get(task["task_id"], 0), int(task["trials_done"]), task)
            self.assertEqual(task["state"], "done", task)

        # Every measurement belongs to an issued candidate of the same task and trace, now
        # "measured" and held by the worker that measured it.
        mismatched = self.rows(
            "SELECT m.candidate_id, c.state, c.task_id, m.task_id FROM measurements m "
            "JOIN tasks t ON t.task_id = m.task_id "
            "LEFT JOIN candidates c ON c.candidate_id = m.candidate_id "
            "WHERE t.job_id = :job AND (c.candidate_id IS NULL OR c.state <> 'measured' "
            "OR c.task_id <> m.task_id OR c.trace <> m.trace OR c.worker_id <> m.worker_id)",
            job_id)
        self.assertEqual(mismatched, [])
        # Nothing lost: no candidate of the finished job is left pending or leased, and none is
        # marked measured without its measurement.
        unfinished = self.rows(
            "SELECT c.candidate_id, c.state FROM candidates c JOIN tasks t "
            "ON t.task_id = c.task_id WHERE t.job_id = :job AND c.state <> 'measured'", job_id)
        self.assertEqual(unfinished, [])
        orphaned = self.rows(
            "SELECT c.candidate_id FROM candidates c JOIN tasks t ON t.task_id = c.task_id "
            "LEFT JOIN measurements m ON m.candidate_id = c.candidate_id "
            "WHERE t.job_id = :job AND m.candidate_id IS NULL", job_id)
        self.assertEqual(orphaned, [])

        # No (task, trace) measured more often than the search proposed it. (It may propose one
        # twice: a restarted server's search learns the measured traces back, not the ones
        # still pending or leased, and can propose one of those again.)
        over = self.rows(
            "SELECT m.task_id, m.trace, COUNT(*), (SELECT COUNT(*) FROM candidates c "
            "WHERE c.task_id = m.task_id AND c.trace = m.trace) FROM measurements m "
            "JOIN tasks t ON t.task_id = m.task_id WHERE t.job_id = :job "
            "GROUP BY m.task_id, m.trace HAVING COUNT(*) > 1", job_id)
        for task_id, trace, measured, proposed in over:
            self.assertLessEqual(measured, proposed, (task_id, trace))
        self.reproposed = sum(measured - 1 for _, _, measured, _ in over)

        self.assertEqual(self.integrity_problems(), [])

    def assert_still_serves(self, job):
        farm = self.farm
        self.assertEqual(farm.client("health").stdout.strip(), "SERVING")
        query = farm.client_json("query", "--model", MODEL, "--target", "cpu")
        self.assertEqual(len(query["records"]), len(job["tasks"]))
        self.assertTrue(all(record["tuned"] for record in query["records"]), query)
        again = json.loads(farm.client("submit", MODEL, "--target", "cpu", "--budget", "20",
                                       "--watch", "--json", timeout=120).stdout)
        self.assertEqual(again["state"], "done", again)
        self.assertEqual(int(again["trials_done"]), 0, again)

    def test_workers_and_server_killed_many_times_during_one_job(self):
        seed = int(os.environ.get("GTCO_SOAK_SEED", random.SystemRandom().randrange(1 << 30)))
        print(f"\n  {type(self).__name__}: GTCO_SOAK_SEED={seed}", file=sys.stderr)
        rng = random.Random(seed)
        self.orphans = []
        farm = self.farm
        started = time.time()
        job_id = farm.submit(MODEL, BUDGET)
        status, server_kills, worker_kills = self.run_chaos(job_id, rng)
        chaos_seconds = time.time() - started
        self.assertEqual(status["state"], "done", f"seed {seed}\n{farm.read_logs()}")
        self.assertEqual(server_kills, SERVER_KILLS, "the job ended before every server kill")
        self.assertGreaterEqual(worker_kills, 3)

        # What the (last restarted) server says is what is stored, once.
        self.assert_stored_exactly_once(status)
        # And so does a server started afresh on the same database.
        farm.kill_server()
        farm.start_server()
        job = farm.client_json("status", job_id)
        self.assertEqual(job["state"], "done")
        self.assertEqual(int(job["trials_done"]), BUDGET)
        self.assert_stored_exactly_once(job)
        self.assert_still_serves(job)

        with open(os.path.join(farm.dir, "server.log"), errors="replace") as file:
            log = file.read()
        # Each restart during the job resumed it (the last one found it done).
        self.assertEqual(log.count(f"resumed job {job_id}"), SERVER_KILLS)
        # A killed worker's runner sees its pipe close and goes too.
        deadline = time.time() + 30
        while any(_alive(pid) for pid in self.orphans) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual([pid for pid in self.orphans if _alive(pid)], [],
                         "runners of killed workers still running")
        print(f"  done in {chaos_seconds:.1f} s: {server_kills} server kills, {worker_kills} "
              f"worker kills, {log.count('expired; handing it to another worker')} leases "
              f"expired, {log.count('rejected a result')} results rejected, "
              f"{self.reproposed} traces proposed and measured again", file=sys.stderr)


class LeaseRenewalTest(unittest.TestCase):
    """A worker busy on its candidates keeps their leases by heartbeat, however young it is and
    across a server restart. Found by the soak (leases of live workers lapsing, their results
    rejected and the candidates measured again): the worker's heartbeat thread slept the default
    5 s before its first heartbeat, sent the ids it had in hand one period earlier, and ignored
    NOT_FOUND from a restarted server, so nothing was renewed until the measuring thread
    registered again after its batch."""

    def setUp(self):
        # Leases of 3 heartbeat periods: renewals that come at all come in time.
        self.farm = SoakFarm(lease_seconds=3)
        self.farm.start_server()
        self.stopped = None

    def tearDown(self):
        if self.stopped:
            os.kill(self.stopped, signal.SIGCONT)
        self.farm.stop()

    def leased(self):
        return dict(self.farm.sql("SELECT candidate_id, worker_id FROM candidates "
                                  "WHERE state = 'leased'"))

    def hold_runner(self, worker, restart_server=False):
        """Submits a job, stops the worker's runner (SIGSTOP) while it holds leases and keeps
        it stopped for 3 lease periods; returns (leased before, leased after)."""
        farm = self.farm
        farm.submit(os.path.join(DATA, "transformer_block.onnx"), 60)
        deadline = time.time() + 60
        while True:
            self.assertLess(time.time(), deadline, farm.read_logs())
            runners = _children(worker.pid)
            held = self.leased()
            if runners and held:
                break
            time.sleep(0.02)
        os.kill(runners[0], signal.SIGSTOP)
        self.stopped = runners[0]
        before = self.leased()
        self.assertTrue(before)
        if restart_server:
            farm.kill_server()
            farm.start_server()
        time.sleep(3 * self.farm.lease_seconds + 0.5)
        return before, self.leased()

    def test_young_busy_worker_keeps_its_leases(self):
        worker = self.farm.start_worker(extra=["--threads", "1"])
        before, after = self.hold_runner(worker)
        self.assertEqual(after, before)

    def test_settled_busy_worker_keeps_its_leases(self):
        worker = self.farm.start_worker(extra=["--threads", "1"])
        time.sleep(7)  # past the worker's first (default 5 s) heartbeat period
        before, after = self.hold_runner(worker)
        self.assertEqual(after, before)

    def test_busy_worker_keeps_its_leases_across_a_server_restart(self):
        worker = self.farm.start_worker(extra=["--threads", "1"])
        time.sleep(7)
        before, after = self.hold_runner(worker, restart_server=True)
        self.assertEqual(after, before)


class SqliteSoakTest(SoakMixin, unittest.TestCase):
    def make_farm(self):
        return SoakFarm(lease_seconds=LEASE_SECONDS)

    def integrity_problems(self):
        problems = [row for row in self.farm.sql("PRAGMA integrity_check") if row != ("ok",)]
        return problems + self.farm.sql("PRAGMA foreign_key_check")


class PostgresSoakTest(SoakMixin, unittest.TestCase):
    def make_farm(self):
        server = _postgres_server()
        return PostgresFarm(server, server.create_database(self.id().rsplit(".", 1)[-1]),
                            lease_seconds=LEASE_SECONDS)

    def integrity_problems(self):
        # PostgreSQL enforces its keys itself; check the stored counts and references.
        farm = self.farm
        problems = []
        count, distinct = farm.sql("SELECT COUNT(*), COUNT(DISTINCT candidate_id) "
                                   "FROM measurements")[0]
        if count != distinct:
            problems.append(f"{count} measurements of {distinct} candidates")
        dangling = farm.sql("SELECT COUNT(*) FROM measurements m LEFT JOIN candidates c "
                            "ON c.candidate_id = m.candidate_id WHERE c.candidate_id IS NULL")
        if dangling[0][0]:
            problems.append(f"{dangling[0][0]} measurements without a candidate")
        return problems


# The existing end-to-end and fault tests, unchanged, once more on PostgreSQL.

class PostgresEndToEndTest(end_to_end_test.EndToEndTest):
    def setUp(self):
        server = _postgres_server()
        self.farm = PostgresFarm(server, server.create_database(self.id().rsplit(".", 1)[-1]),
                                 metrics=True)
        self.farm.start_server()
        self.farm.start_worker()


class PostgresFaultsTest(faults_test.FaultsTest):
    def setUp(self):
        server = _postgres_server()
        self.farm = PostgresFarm(server, server.create_database(self.id().rsplit(".", 1)[-1]),
                                 lease_seconds=4)
        self.farm.start_server()

    def assert_stored_exactly_once(self, job):
        # FaultsTest's checks, with PostgreSQL's own counts in place of PRAGMA integrity_check.
        farm = self.farm
        stored = farm.sql("SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM measurements")[0]
        self.assertEqual(stored[0], stored[1])
        self.assertEqual(stored[0], faults_test.trials(job))
        for task in job["tasks"]:
            rows = farm.sql("SELECT COUNT(*) FROM measurements WHERE task_id=?", task["task_id"])
            self.assertEqual(rows[0][0], int(task["trials_done"]), task)
            self.assertEqual(int(task["trials_done"]), int(task["trials_allotted"]), task)
        dangling = farm.sql("SELECT COUNT(*) FROM measurements m LEFT JOIN candidates c "
                            "ON c.candidate_id = m.candidate_id "
                            "WHERE c.candidate_id IS NULL OR c.state <> 'measured'")
        self.assertEqual(dangling[0][0], 0)


if __name__ == "__main__":
    unittest.main()
