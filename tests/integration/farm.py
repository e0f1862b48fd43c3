"""Test harness: real gtco-server / gtco-worker processes on loopback and the real CLI."""
import atexit
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

BINARY_DIR = os.environ.get("GTCO_BINARY_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SOURCE_DIR = os.environ.get("GTCO_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
# GTCO_BIN_DIR: one folder holding the three binaries (the packed GPU build); else a build tree.
_FLAT = os.environ.get("GTCO_BIN_DIR")
SERVER = os.path.join(_FLAT, "gtco-server") if _FLAT else os.path.join(BINARY_DIR, "server", "gtco-server")
WORKER = os.path.join(_FLAT, "gtco-worker") if _FLAT else os.path.join(BINARY_DIR, "worker", "gtco-worker")
CLIENT = os.path.join(_FLAT, "gtco-client") if _FLAT else os.path.join(BINARY_DIR, "client", "gtco-client")
RUN = os.path.join(_FLAT, "gtco-run") if _FLAT else os.path.join(BINARY_DIR, "runtime", "gtco-run")
DATA = os.path.join(SOURCE_DIR, "tests", "data")


def scratch_dir(prefix):
    """A new folder under the system's temporary directory, removed when this process exits, so
    that test and benchmark runs leave no exported models or farm databases behind (a few hundred
    runs of the export tests and the e2e farms, 1.5-3 GB each, once filled a 96 GB disk).
    GTCO_KEEP_SCRATCH=1 keeps it and says where; what a failing test needs from it (the farm's
    logs) is in its failure message already."""
    directory = tempfile.mkdtemp(prefix=prefix)
    if os.environ.get("GTCO_KEEP_SCRATCH") == "1":
        atexit.register(print, f"kept {directory} (GTCO_KEEP_SCRATCH=1)", file=sys.stderr)
    else:
        atexit.register(shutil.rmtree, directory, True)
    return directory


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_processes(processes, timeout=10):
    """SIGTERM to each process still running; SIGKILL to any that has not exited `timeout` s later."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Farm:
    """A server on a temporary SQLite file plus any number of workers."""

    def __init__(self, directory=None, metrics=False, lease_seconds=10, auth=False, tls=None,
                 token=None):
        """auth: require tokens (else --no-auth); tls: (cert, key, ca) paths; token: what the
        CLI and workers present (GTCO_TOKEN)."""
        self.auth = auth
        self.tls = tls
        self.token = token
        self.dir = directory or scratch_dir("gtco-farm-")
        self.db = os.path.join(self.dir, "gtco.db")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.listen = self.address  # what the server binds (clients always dial self.address)
        self.metrics_port = free_port() if metrics else None
        self.lease_seconds = lease_seconds
        self.server = None
        self.server_wrapper = []  # a command the server runs under (e.g. unshare + a tmpfs)
        self.workers = []
        self.logs = []

    def _log(self, name):
        path = os.path.join(self.dir, name)
        self.logs.append(path)
        return open(path, "ab")

    def start_server(self):
        args = [SERVER, "--listen", self.listen, "--db", self.db,
                "--lease-seconds", str(self.lease_seconds), "--heartbeat-seconds", "1"]
        if not self.auth:
            args.append("--no-auth")
        if self.tls:
            args += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        if getattr(self, "client_ca", None):
            args += ["--tls-client-ca", self.client_ca]
        if self.metrics_port:
            # --http-port (the documented name; --metrics-port is its older alias, which
            # scripts/run-local-farm.sh and deploy/k8s use).
            args += ["--http-port", str(self.metrics_port)]
        self.server = subprocess.Popen(self.server_wrapper + args, stdout=self._log("server.log"),
                                       stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError("server exited: " + self.read_logs())
            result = self.client("health", check=False)
            if result.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("server did not come up: " + self.read_logs())

    def _security(self, token):
        args = []
        if self.tls:
            args += ["--tls-ca", self.tls[2]]
        if token:
            args += ["--token", token]
        return args

    def start_worker(self, extra=(), target="cpu", token=None, env=None):
        """env: extra environment variables of the worker (e.g. GTCO_CPU_ISA=avx2)."""
        worker = subprocess.Popen([WORKER, "--server", self.address, "--target", target,
                                   *self._security(token or self.token), *extra],
                                  stdout=self._log(f"worker{len(self.workers)}.log"),
                                  stderr=subprocess.STDOUT,
                                  env=dict(os.environ, **env) if env else None)
        self.workers.append(worker)
        return worker

    def client(self, *args, check=True, timeout=600, token=None):
        result = subprocess.run([CLIENT, "--server", self.address,
                                 *self._security(token or self.token), *args],
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"gtco-client {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout}\n{result.stderr}\n{self.read_logs()}")
        return result

    def client_command_without_tls(self):
        return [CLIENT, "--server", self.address, "--timeout", "5"]

    def client_json(self, *args, timeout=600, token=None):
        return json.loads(self.client(*args, "--json", timeout=timeout, token=token).stdout)

    def submit(self, model, budget, *extra, target="cpu"):
        job = self.client_json("submit", model, "--target", target, "--budget", str(budget), *extra)
        return job["job_id"]

    def wait_for(self, job_id, predicate, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status = self.client_json("status", job_id)
            if predicate(status):
                return status
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting on job {job_id}:\n{self.read_logs()}")

    def kill_server(self, sig=signal.SIGKILL):
        self.server.send_signal(sig)
        self.server.wait()

    def read_logs(self):
        text = []
        for path in self.logs:
            try:
                with open(path, "rb") as file:
                    text.append(f"--- {path}\n" + file.read().decode(errors="replace")[-4000:])
            except OSError:
                pass
        return "\n".join(text)

    def sql(self, query, *params):
        # sql_path: where this process reaches the database when the server sees it elsewhere.
        with sqlite3.connect(getattr(self, "sql_path", self.db), timeout=30) as connection:
            return connection.execute(query, params).fetchall()

    def stop(self):
        stop_processes(self.workers + ([self.server] if self.server else []))
