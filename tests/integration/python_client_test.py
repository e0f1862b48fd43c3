"""The `gtco` Python package against a real farm: pip-installed from this checkout into a fresh
venv (offline: --no-index --no-build-isolation, Debian's grpcio, protobuf and pybind11), then
gtco.Client over TLS with team tokens submits, watches, queries, exports (run with gtco.load),
moves records to a second farm and cancels; every refusal is its typed exception with its gRPC
code; and the generated stubs load under both protobuf runtimes of the test machine (pip's in
.deps/python, first on PYTHONPATH here, and Debian's)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

import numpy as np

from auth_test import admin
from farm import DATA, RUN, SOURCE_DIR, Farm, free_port, scratch_dir

MLP = os.path.join(DATA, "mlp.onnx")
UNTUNED = os.path.join(DATA, "vit_tiny.onnx")  # no test here tunes it
CANCELLED = os.path.join(DATA, "transformer_block.onnx")  # only test_cancel submits it
BUDGET = 12


def copy_package_sources(destination):
    """What setup.py builds from (runtime/ and proto/), copied so that this build never shares
    runtime/python/build/ with another test's pip install running at the same time."""
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    shutil.copytree(os.path.join(SOURCE_DIR, "runtime"), os.path.join(destination, "runtime"),
                    ignore=skip)
    shutil.copytree(os.path.join(SOURCE_DIR, "proto"), os.path.join(destination, "proto"))
    return os.path.join(destination, "runtime", "python")


class PythonClientTest(unittest.TestCase):
    gtco = None  # the installed package, imported once it is built

    @classmethod
    def setUpClass(cls):
        cls.work = scratch_dir("gtco-pyclient-")
        # Build and install while the farm starts: nothing comes from the internet (--no-index).
        cls.venv = os.path.join(cls.work, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", cls.venv],
                       check=True, timeout=120)
        package = copy_package_sources(os.path.join(cls.work, "src"))
        install = subprocess.Popen(
            [os.path.join(cls.venv, "bin", "pip"), "install", "--no-index", "--no-build-isolation",
             "--disable-pip-version-check", "--quiet", package + "[client]"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        directory = os.path.join(cls.work, "farm")
        os.makedirs(directory)
        cls.ca = os.path.join(directory, "cert.pem")
        key = os.path.join(directory, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out",
                        cls.ca], check=True, capture_output=True, timeout=60)
        cls.farm = Farm(directory=directory, auth=True, tls=(cls.ca, key, cls.ca))
        admin(cls.farm.db, "create-team", "vision")
        admin(cls.farm.db, "create-team", "nlp")
        token = lambda *args: admin(cls.farm.db, "issue-token", *args).stdout.strip()
        cls.vision = token("--team", "vision", "--role", "submitter")
        cls.nlp = token("--team", "nlp", "--role", "submitter")
        cls.admin = token("--role", "admin")
        cls.farm.token = cls.vision  # what the CLI cross-checks present
        cls.farm.start_server()
        cls.farm.start_worker(token=token("--role", "worker"))

        output, _ = install.communicate(timeout=900)
        if install.returncode != 0:
            cls.farm.stop()
            raise AssertionError(f"pip install of the gtco package failed:\n{output}")
        site = glob.glob(os.path.join(cls.venv, "lib", "python3*", "site-packages"))[0]
        sys.path.insert(0, site)
        import gtco
        cls.gtco = gtco
        cls.client = gtco.Client(cls.farm.address, token=cls.vision, tls_ca=cls.ca)
        # One tuned job that the tests below read.
        cls.job = cls.client.submit(MLP, "cpu", BUDGET)
        cls.events = list(cls.client.watch(cls.job, timeout=300))

    @classmethod
    def tearDownClass(cls):
        if cls.gtco is not None:
            cls.client.close()
        cls.farm.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def other(self, token, **kwargs):
        return self.gtco.Client(self.farm.address, token=token, tls_ca=self.ca, **kwargs)

    def assert_refused(self, error_class, code_name, call):
        with self.assertRaises(error_class) as caught:
            call()
        error = caught.exception
        self.assertIsInstance(error, self.gtco.Error)
        self.assertEqual(error.code.name, code_name)
        self.assertEqual(error.code, error_class.code)
        self.assertIn(code_name, str(error))
        return error

    def test_submit_watch_status_jobs_and_query(self):
        gtco, client, job = self.gtco, self.client, self.job
        self.assertTrue(job.job_id)
        self.assertEqual(job.team, "vision")  # the token's team
        self.assertEqual(job.model_name, "mlp.onnx")
        # watch: progress events, trials never going back, the last one final.
        self.assertGreaterEqual(len(self.events), 2, [e.state for e in self.events])
        done = [event.trials_done for event in self.events]
        self.assertEqual(done, sorted(done))
        self.assertLess(done[0], BUDGET)
        self.assertTrue(all(e.state == "running" for e in self.events[:-1]))
        final = self.events[-1]
        self.assertEqual(final.state, "done", final)
        self.assertEqual(final.trials_done, BUDGET)
        status = client.status(job.job_id)
        self.assertEqual(status.state, "done")
        self.assertTrue(status.tasks)
        for task in status.tasks:
            self.assertEqual(task.state, "done", task)
            self.assertGreater(task.best_seconds, 0)
            self.assertTrue(task.mappings)
        # The same document `gtco-client status --json` prints.
        self.assertEqual(gtco.to_dict(status), self.farm.client_json("status", job.job_id))
        self.assertEqual(client.wait(job).state, "done")  # a finished job: at once
        self.assertIn(job.job_id, [j.job_id for j in client.jobs()])
        self.assertIn(job.job_id, [j.job_id for j in client.jobs(state="done")])
        self.assertNotIn(job.job_id, [j.job_id for j in client.jobs(state="running")])
        query = client.query(MLP)
        self.assertEqual(len(query.records), len(status.tasks))
        self.assertTrue(all(record.tuned and record.trace for record in query.records))
        self.assertGreater(query.estimated_latency_seconds, 0)
        key = status.tasks[0].workload_key
        by_key = client.query(workload=key, limit=3)
        self.assertTrue(by_key.records)
        self.assertEqual({r.workload_key for r in by_key.records}, {key})
        medians = [r.median_seconds for r in by_key.records]
        self.assertEqual(medians, sorted(medians))
        with self.assertRaises(ValueError):
            client.query(MLP, workload=key)

    def test_export_then_run_with_gtco_load(self):
        out = os.path.join(self.work, "mlp.gtco")
        progress = []
        summary = self.client.export(MLP, out, on_progress=progress.append)
        self.assertTrue(os.path.isfile(out))
        self.assertFalse(os.path.exists(out + ".partial"))
        self.assertEqual(os.path.getsize(out), summary.artifact_bytes)
        self.assertGreater(summary.kernels, 0)
        self.assertEqual(summary.tuned, summary.kernels, summary.warnings)
        self.assertTrue(progress)
        model = self.gtco.load(out)  # the runtime half of the same package
        self.assertTrue(all(kernel["tuned"] for kernel in model.kernels))
        spec = model.inputs[0]
        x = np.random.default_rng(5).standard_normal(spec["shape"]).astype(np.float32)
        y = model.run({spec["name"]: x})[model.outputs[0]["name"]]
        self.assertTrue(np.all(np.isfinite(y)))
        # gtco-run agrees bit for bit.
        x_path, out_dir = os.path.join(self.work, "x.npy"), os.path.join(self.work, "run-out")
        np.save(x_path, x)
        os.makedirs(out_dir)
        subprocess.run([RUN, out, "--input", f"{spec['name']}={x_path}", "--output-dir", out_dir],
                       check=True, capture_output=True, timeout=120)
        (written,) = glob.glob(os.path.join(out_dir, "*.npy"))
        self.assertTrue(np.array_equal(np.load(written), y))
        # Refused: nothing written, not even the .partial.
        refused = os.path.join(self.work, "untuned.gtco")
        error = self.assert_refused(self.gtco.FailedPrecondition, "FAILED_PRECONDITION",
                                    lambda: self.client.export(UNTUNED, refused,
                                                               require_tuned=True))
        self.assertIn("matmul", error.details)
        self.assertFalse(os.path.exists(refused) or os.path.exists(refused + ".partial"))

    def test_records_export_and_import_round_trip(self):
        path = os.path.join(self.work, "records.jsonl")
        written = self.client.export_records(path)
        with open(path) as file:
            lines = [json.loads(line) for line in file]
        self.assertEqual(written.records, len(lines))
        self.assertGreater(written.records, 0)
        self.assertEqual(written.workloads, len({line["workload_key"] for line in lines}))
        # One of the MLP's workloads (test_cancel's late results may still land in others): the
        # same records, in the same format, as `gtco-client records export --workload`.
        key = self.client.status(self.job).tasks[0].workload_key
        one = os.path.join(self.work, "one.jsonl")
        subset = self.client.export_records(one, workload=key)
        self.assertEqual(subset.workloads, 1)
        self.assertEqual(len(list(self.client.records(workload=key))), subset.records)
        cli_path = os.path.join(self.work, "cli-records.jsonl")
        self.farm.client("records", "export", "-o", cli_path, "--workload", key)
        with open(cli_path) as file, open(one) as mine:
            self.assertEqual([json.loads(line) for line in file],
                             [json.loads(line) for line in mine])
        # Only an admin may import.
        self.assert_refused(self.gtco.PermissionDenied, "PERMISSION_DENIED",
                            lambda: self.client.import_records(path))
        second = Farm()
        try:
            second.start_server()
            target = self.gtco.Client(second.address)  # --no-auth on loopback: an admin
            self.assertFalse(all(r.tuned for r in target.query(MLP).records))
            imported = target.import_records(path)
            self.assertEqual((imported.received, imported.added), (written.records,
                                                                   written.records))
            again = target.import_records(path)
            self.assertEqual((again.added, again.already_present), (0, written.records))
            self.assertTrue(all(r.tuned for r in target.query(MLP).records))
            # A tampered record: the server refuses the whole file, naming it.
            tampered = os.path.join(self.work, "tampered.jsonl")
            with open(tampered, "w") as file:
                lines[0]["workload_key"] = "0" * 16
                file.write("\n".join(json.dumps(line) for line in lines) + "\n")
            self.assert_refused(self.gtco.InvalidArgument, "INVALID_ARGUMENT",
                                lambda: target.import_records(tampered))
            # A line that is no record at all: named before anything is sent.
            broken = os.path.join(self.work, "broken.jsonl")
            with open(broken, "w") as file:
                file.write('{"candidate_id": "x"}\nnot json\n')
            with self.assertRaisesRegex(ValueError, "broken.jsonl:2"):
                target.import_records(broken)
            target.close()
        finally:
            second.stop()

    def test_cancel(self):
        job = self.client.submit(CANCELLED, "cpu", 100000, rounds=4)
        self.assertEqual(job.state, "running")
        cancelled = self.client.cancel(job)
        self.assertEqual(cancelled.state, "cancelled")
        final = list(self.client.watch(job, timeout=60))[-1]
        self.assertEqual(final.state, "cancelled")
        self.assertEqual(self.client.status(job).state, "cancelled")

    def test_typed_errors(self):
        gtco = self.gtco
        # No token, an unknown one: Unauthenticated; a worker's token: PermissionDenied.
        for token in ("", "gtco_s_000000000000_" + "0" * 40):
            error = self.assert_refused(gtco.Unauthenticated, "UNAUTHENTICATED",
                                        lambda: self.other(token).jobs())
        self.assertIn("token", error.details)
        worker = admin(self.farm.db, "issue-token", "--role", "worker").stdout.strip()
        self.assert_refused(gtco.PermissionDenied, "PERMISSION_DENIED",
                            lambda: self.other(worker).submit(MLP, "cpu", 4))
        # Another team's job answers exactly like one that does not exist.
        nlp = self.other(self.nlp)
        other = self.assert_refused(gtco.NotFound, "NOT_FOUND", lambda: nlp.status(self.job))
        missing = self.assert_refused(gtco.NotFound, "NOT_FOUND",
                                      lambda: nlp.status("j-does-not-exist"))
        self.assertEqual(other.details.replace(self.job.job_id, "ID"),
                         missing.details.replace("j-does-not-exist", "ID"))
        self.assert_refused(gtco.NotFound, "NOT_FOUND", lambda: nlp.cancel(self.job))
        self.assert_refused(gtco.NotFound, "NOT_FOUND", lambda: list(nlp.watch(self.job)))
        self.assertNotIn(self.job.job_id, [j.job_id for j in nlp.jobs()])
        # A malformed model, an unsupported op, a state no job has.
        error = self.assert_refused(gtco.InvalidArgument, "INVALID_ARGUMENT",
                                    lambda: self.client.submit(b"not an onnx model \xff" * 10,
                                                               "cpu", 10, name="bad.onnx"))
        self.assertIn("ONNX", error.details)
        error = self.assert_refused(
            gtco.Unimplemented, "UNIMPLEMENTED",
            lambda: self.client.submit(os.path.join(DATA, "unsupported_op.onnx"), "cpu", 10))
        self.assertIn("unsupported ONNX op 'LpPool'", error.details)
        self.assert_refused(gtco.InvalidArgument, "INVALID_ARGUMENT",
                            lambda: self.client.jobs(state="finished"))
        # Nobody listening; plaintext to the TLS port: Unavailable.
        nobody = gtco.Client(f"127.0.0.1:{free_port()}", token=self.vision)
        started = time.monotonic()
        self.assert_refused(gtco.Unavailable, "UNAVAILABLE", nobody.jobs)
        self.assertLess(time.monotonic() - started, 20)
        plain = gtco.Client(self.farm.address, token=self.vision, timeout=10)
        self.assert_refused(gtco.Unavailable, "UNAVAILABLE", plain.jobs)
        # Local problems are Python's own errors, before any call.
        with self.assertRaises(FileNotFoundError):
            self.client.submit(os.path.join(self.work, "missing.onnx"), "cpu", 10)
        with self.assertRaises(ValueError):
            self.client.submit(MLP, "cpu", 10, shapes={"input": [0, 32]})

    def test_stubs_load_under_both_protobuf_runtimes(self):
        import google.protobuf
        runtimes = {google.protobuf.__version__}  # this process: .deps/python's first, if any
        script = ("import gtco, google.protobuf, sys\n"
                  "client = gtco.Client(sys.argv[1], token=sys.argv[2], tls_ca=sys.argv[3])\n"
                  "print(google.protobuf.__version__, len(client.jobs()))\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # Debian's protobuf
        ran = subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", script,
                              self.farm.address, self.vision, self.ca],
                             capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        version, jobs = ran.stdout.split()
        self.assertGreater(int(jobs), 0)
        runtimes.add(version)
        # setup.sh --tests puts pip's protobuf (ONNX Runtime's) in .deps/python: both runtimes
        # must have been exercised, or the test did not test what it says.
        self.assertTrue(os.path.isdir(os.path.join(SOURCE_DIR, ".deps", "python", "google",
                                                   "protobuf")),
                        "no pip protobuf in .deps/python: run scripts/setup.sh --tests")
        self.assertEqual(len(runtimes), 2, runtimes)
        print(f"gtco.Client worked under protobuf {', '.join(sorted(runtimes))}",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
