"""Teams and tokens through the real CLI: every refusal gets its gRPC code and an actionable
message, the server keeps serving, teams are isolated, quotas hold, two teams with equal shares
split the workers' trials evenly, and a TLS farm on a non-loopback address works end to end."""
import os
import subprocess
import time
import unittest

from farm import DATA, SERVER, Farm, free_port, scratch_dir

MODEL = os.path.join(DATA, "mlp.onnx")


def admin(db, *args, check=True):
    result = subprocess.run([SERVER, "admin", "--db", db, *args], capture_output=True, text=True,
                            timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"admin {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def trials_by_team(farm):
    return dict(farm.sql(
        "SELECT j.team, COUNT(*) FROM measurements m JOIN tasks t ON t.task_id = m.task_id "
        "JOIN jobs j ON j.job_id = t.job_id GROUP BY j.team"))


class AuthTest(unittest.TestCase):
    def setUp(self):
        self.farm = Farm(auth=True)
        # The database exists before the server: the admin commands create it.
        admin(self.farm.db, "create-team", "vision", "--max-concurrent-jobs", "1")
        admin(self.farm.db, "create-team", "nlp")
        self.vision = admin(self.farm.db, "issue-token", "--team", "vision", "--role",
                            "submitter").stdout.strip()
        self.nlp = admin(self.farm.db, "issue-token", "--team", "nlp", "--role",
                         "submitter").stdout.strip()
        self.worker = admin(self.farm.db, "issue-token", "--role", "worker").stdout.strip()
        self.farm.start_server()

    def tearDown(self):
        self.farm.stop()

    def refused(self, code, *args, token=None):
        result = self.farm.client(*args, check=False, token=token)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn(code, result.stderr)
        self.assertEqual(self.farm.client("health", check=False).returncode, 0)
        return result.stderr

    def test_tokens_roles_and_isolation(self):
        self.assertTrue(self.vision.startswith("gtco_s_"), self.vision)
        teams = admin(self.farm.db, "list-teams", "--json").stdout
        self.assertIn('"name":"vision"', teams)
        self.assertIn('"max_concurrent_jobs":1', teams)

        message = self.refused("UNAUTHENTICATED", "jobs")
        self.assertIn("--token", message)
        self.refused("UNAUTHENTICATED", "jobs", token="gtco_s_000000000000_" + "0" * 40)
        self.refused("UNAUTHENTICATED", "jobs", token="not-a-token")
        message = self.refused("PERMISSION_DENIED", "jobs", token=self.worker)
        self.assertIn("submitter", message)

        job = self.farm.client_json("submit", MODEL, "--budget", "6", token=self.vision)["job_id"]
        self.assertEqual(self.farm.client_json("status", job, token=self.vision)["team"], "vision")
        # Another team's job answers exactly like a job that does not exist.
        missing = self.refused("NOT_FOUND", "status", "j-does-not-exist", token=self.nlp)
        other = self.refused("NOT_FOUND", "status", job, token=self.nlp)
        self.assertEqual(other.replace(job, "ID"), missing.replace("j-does-not-exist", "ID"))
        self.refused("NOT_FOUND", "cancel", job, token=self.nlp)
        self.refused("NOT_FOUND", "watch", job, token=self.nlp)
        listed = self.farm.client_json("jobs", token=self.nlp)
        self.assertNotIn(job, str(listed))
        self.assertIn(job, str(self.farm.client_json("jobs", "--state", "running",
                                                     token=self.vision)))
        self.assertNotIn(job, str(self.farm.client_json("jobs", "--state", "done",
                                                        token=self.vision)))
        # A state filter no job can have is a usage error naming the states, not an empty list.
        message = self.refused("INVALID_ARGUMENT", "jobs", "--state", "finished",
                               token=self.vision)
        self.assertIn("unknown job state 'finished' (one of running, done, failed, cancelled)",
                      message)

        # max-concurrent-jobs 1: a second running job of the team is refused with the limit.
        message = self.refused("RESOURCE_EXHAUSTED", "submit", MODEL, "--budget", "6",
                               token=self.vision)
        self.assertIn("max-concurrent-jobs 1", message)

        # A submitter token cannot serve as a worker; the worker token finishes the job.
        bad_worker = self.farm.start_worker(token=self.vision)
        bad_worker.wait(timeout=60)
        self.assertNotEqual(bad_worker.returncode, 0)
        self.assertIn("PERMISSION_DENIED", self.farm.read_logs())
        self.farm.start_worker(token=self.worker)
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.farm.client_json("status", job, token=self.vision)["state"] == "done":
                break
            time.sleep(0.3)
        self.assertEqual(self.farm.client_json("status", job, token=self.vision)["state"], "done")
        # Shared schedules: the other team may query the tuned workloads.
        query = self.farm.client_json("query", "--model", MODEL, token=self.nlp)
        self.assertTrue(query.get("records"))
        self.assertNotIn(job, str(query))

        revoked = admin(self.farm.db, "revoke-token", self.vision[:19]).stdout
        self.assertIn("revoked 1 token", revoked)
        message = self.refused("UNAUTHENTICATED", "jobs", token=self.vision)
        self.assertIn("revoked", message)
        self.assertNotEqual(admin(self.farm.db, "revoke-token", "gtco", check=False).returncode, 0)

    def test_trials_per_day_quota(self):
        admin(self.farm.db, "create-team", "small", "--max-trials-per-day", "4")
        small = admin(self.farm.db, "issue-token", "--team", "small", "--role",
                      "submitter").stdout.strip()
        job = self.farm.client_json("submit", MODEL, "--budget", "40", token=small)["job_id"]
        self.farm.start_worker(token=self.worker)
        deadline = time.time() + 120
        while time.time() < deadline and trials_by_team(self.farm).get("small", 0) < 4:
            time.sleep(0.3)
        time.sleep(3)  # the worker keeps leasing; the team gets no more trials
        self.assertEqual(trials_by_team(self.farm).get("small", 0), 4)
        message = self.refused("RESOURCE_EXHAUSTED", "submit", MODEL, "--budget", "4", token=small)
        self.assertIn("max-trials-per-day 4", message)
        self.assertEqual(self.farm.client_json("status", job, token=small)["state"], "running")

    def test_equal_shares_split_the_trials(self):
        vision_job = self.farm.client_json("submit", os.path.join(DATA, "transformer_block.onnx"),
                                           "--budget", "400", token=self.vision)["job_id"]
        nlp_job = self.farm.client_json("submit", os.path.join(DATA, "transformer_block.onnx"),
                                        "--budget", "400", token=self.nlp)["job_id"]
        self.farm.start_worker(token=self.worker)
        deadline = time.time() + 300
        counts = {}
        while time.time() < deadline:
            counts = trials_by_team(self.farm)
            if sum(counts.values()) >= 120:
                break
            time.sleep(0.5)
        total = counts.get("vision", 0) + counts.get("nlp", 0)
        self.assertGreaterEqual(total, 120, counts)
        share = counts.get("vision", 0) / total
        self.assertGreaterEqual(share, 0.4, counts)
        self.assertLessEqual(share, 0.6, counts)
        for job, token in ((vision_job, self.vision), (nlp_job, self.nlp)):
            self.farm.client("cancel", job, token=token)


class ListenPolicyTest(unittest.TestCase):
    def test_refusals(self):
        directory = scratch_dir("gtco-listen-")
        db = os.path.join(directory, "gtco.db")
        for args, needle in (
                (["--listen", f"0.0.0.0:{free_port()}", "--no-auth"], "--no-auth is refused"),
                (["--listen", f"0.0.0.0:{free_port()}"], "without TLS"),
                (["--tls-cert", os.path.join(directory, "missing.pem"), "--tls-key",
                  os.path.join(directory, "missing.key")], "cannot read")):
            result = subprocess.run([SERVER, "--db", db, *args], capture_output=True, text=True,
                                    timeout=30)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(needle, result.stderr)

    def test_tls_farm_on_all_interfaces(self):
        directory = scratch_dir("gtco-tls-")
        cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
                       check=True, capture_output=True, timeout=60)
        farm = Farm(directory=directory, auth=True, tls=(cert, key, cert))
        farm.client_ca = cert  # the server verifies client certificates signed by this CA
        admin(farm.db, "create-team", "vision")
        farm.token = admin(farm.db, "issue-token", "--team", "vision", "--role",
                           "submitter").stdout.strip()
        worker_token = admin(farm.db, "issue-token", "--role", "worker").stdout.strip()
        port = farm.port
        farm.listen = f"0.0.0.0:{port}"
        try:
            farm.start_server()
            # The worker presents a client certificate (here the same self-signed one).
            farm.start_worker(token=worker_token, extra=["--tls-cert", cert, "--tls-key", key])
            job = farm.submit(MODEL, 6)
            status = farm.wait_for(job, lambda s: s["state"] == "done", timeout=300)
            self.assertEqual(int(status["trials_done"]), 6)
            # Plaintext to the TLS port fails as unreachable, not as a crash of the server.
            plain = subprocess.run([*farm.client_command_without_tls(), "health"],
                                   capture_output=True, text=True, timeout=60)
            self.assertNotEqual(plain.returncode, 0)
            self.assertEqual(farm.client("health", check=False).returncode, 0)
        finally:
            farm.stop()


if __name__ == "__main__":
    unittest.main()
