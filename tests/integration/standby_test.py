"""A standby gtco-server takes over a killed active server's job: two servers on one database,
the second waits as a standby (leader lease in the database); workers and the client know both
addresses. After SIGKILL of the active server the standby leads within 30 s, the job completes,
and every trial is stored exactly once."""
import os
import signal
import subprocess
import time
import unittest

from farm import DATA, SERVER, Farm, free_port

MODEL = os.path.join(DATA, "transformer_block.onnx")


import pg


def sqlite_counts(farm):
    """(rows, distinct candidate ids) of the measurements table."""
    return farm.sql("SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM measurements")[0]


class StandbyTest(unittest.TestCase):
    def run_takeover(self, farm, standby_args, counts):
        farm.start_server()
        standby_port = free_port()
        standby_log = open(os.path.join(farm.dir, "standby.log"), "wb")
        standby = subprocess.Popen(
            [SERVER, "--listen", f"127.0.0.1:{standby_port}", "--no-auth", "--lease-seconds", "10",
             "--heartbeat-seconds", "1", *standby_args],
            stdout=standby_log, stderr=subprocess.STDOUT)
        farm.logs.append(os.path.join(farm.dir, "standby.log"))
        both = f"{farm.address},127.0.0.1:{standby_port}"
        try:
            deadline = time.time() + 30
            while "standby" not in farm.read_logs() and time.time() < deadline:
                time.sleep(0.2)
            self.assertIn("standby", farm.read_logs())
            self.assertIsNone(standby.poll())
            farm.start_worker(extra=["--server", both])
            job = farm.submit(MODEL, 80)
            deadline = time.time() + 120
            while counts(farm)[0] < 15 and time.time() < deadline:
                time.sleep(0.2)
            self.assertGreaterEqual(counts(farm)[0], 15, farm.read_logs())
            farm.kill_server()
            killed_at = time.time()
            # The client follows the job across the takeover (it tries both addresses).
            result = subprocess.run(
                [farm_client(), "--server", both, "--timeout", "60", "watch", job, "--json"],
                capture_output=True, text=True, timeout=600)
            self.assertEqual(result.returncode, 0, result.stderr + farm.read_logs())
            with open(os.path.join(farm.dir, "standby.log"), "rb") as log:
                text = log.read().decode(errors="replace")
            self.assertIn("leading the farm", text)
            took_over = time.time() - killed_at
            print(f"takeover + remaining trials: {took_over:.1f} s")
            rows, distinct = counts(farm)
            self.assertEqual(rows, distinct)
            status = subprocess.run([farm_client(), "--server", both, "status", job, "--json"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(status.returncode, 0, status.stderr)
            self.assertIn('"state": "done"', status.stdout)
            return rows
        finally:
            standby.send_signal(signal.SIGTERM)
            standby.wait(timeout=30)
            standby_log.close()

    def test_standby_takes_over_on_sqlite(self):
        farm = Farm(lease_seconds=10)
        try:
            rows = self.run_takeover(farm, ["--db", farm.db], sqlite_counts)
            self.assertEqual(rows, 80)
            self.assertEqual(farm.sql("PRAGMA integrity_check")[0][0], "ok")
        finally:
            farm.stop()

    def test_standby_takes_over_on_postgresql(self):
        try:
            server = pg.shared()
        except pg.Unavailable as error:
            self.skipTest(f"no PostgreSQL server: {error}")
        database = server.create_database("standby")
        farm = Farm(lease_seconds=10)
        farm.db = server.uri(database)

        def pg_counts(_):
            rows, distinct = server.query(
                database, "SELECT COUNT(*), COUNT(DISTINCT candidate_id) FROM measurements")[0]
            return int(rows), int(distinct)

        try:
            rows = self.run_takeover(farm, ["--db", farm.db], pg_counts)
            self.assertEqual(rows, 80)
        finally:
            farm.stop()

    @classmethod
    def tearDownClass(cls):
        pg.stop_shared()


def farm_client():
    from farm import CLIENT
    return CLIENT


if __name__ == "__main__":
    unittest.main()
