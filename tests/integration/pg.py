"""A private PostgreSQL server for the integration tests (initdb + pg_ctl in a temporary folder).

Python's counterpart of tests/unit/db/postgres_server.cc: the newest /usr/lib/postgresql/*/bin
(or $GTCO_POSTGRES_BIN_DIR), a cluster in /tmp/gtco_pg_XXXXXX on a free loopback port with
trust authentication for the superuser `gtco`, run as the `postgres` user when the tests run as
root (initdb and pg_ctl refuse root). A watchdog in its own session stops the server and removes
the folder when the test process closes its pipe, by stop() or by dying, so that no cluster is
left behind. `scripts/setup.sh --tests` installs PostgreSQL, so missing binaries, client or
`postgres` user are errors (the tests fail, saying what to install); only a host where the
`postgres` user cannot reach the installed binaries (a chroot private to root) raises
`Unavailable`, and the tests skip with that reason.
"""
import glob
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile

from farm import free_port

SUPERUSER = "gtco"

# Runs in its own session: waits for EOF on stdin (the test process closed the pipe or died),
# then stops the cluster immediately and removes its folder.
_WATCHDOG = r"""
import subprocess, shutil, sys
prefix, pg_ctl, data, directory = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
while sys.stdin.buffer.read(65536):
    pass
import os
if os.path.exists(data):
    command = [pg_ctl, "stop", "-D", data, "-m", "immediate", "-s"]
    if prefix:
        command = prefix.split("\x1f") + command
    subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
shutil.rmtree(directory, ignore_errors=True)
"""


def _bin_dir():
    configured = os.environ.get("GTCO_POSTGRES_BIN_DIR")
    candidates = [configured] if configured else sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda path: int(re.sub(r"\D", "", path.split("/")[-2]) or 0), reverse=True)
    for bin_dir in candidates:
        if all(os.access(os.path.join(bin_dir, tool), os.X_OK) for tool in ("initdb", "pg_ctl")):
            return bin_dir
    return None


def _psql():
    bin_dir = _bin_dir()
    if bin_dir and os.access(os.path.join(bin_dir, "psql"), os.X_OK):
        return os.path.join(bin_dir, "psql")
    return shutil.which("psql")


class Unavailable(Exception):
    """The host keeps the `postgres` user from running the installed server; the message says why."""


class NotInstalled(RuntimeError):
    """Something scripts/setup.sh --tests installs is missing; the message says what."""


class PostgresServer:
    def __init__(self):
        self.bin_dir = None
        self.dir = None
        self.port = None
        self.prefix = []  # how to run a server command as the cluster's owner
        self._watchdog = None
        self._databases = 0

    # --- starting and stopping ------------------------------------------------------------

    def start(self):
        """Starts the cluster; raises NotInstalled or Unavailable (see the module's doc)."""
        self.bin_dir = _bin_dir()
        if not self.bin_dir:
            raise NotInstalled("PostgreSQL server binaries (initdb, pg_ctl) not found under "
                               "/usr/lib/postgresql/*/bin or $GTCO_POSTGRES_BIN_DIR: run "
                               "scripts/setup.sh --tests (or install the Debian package "
                               "'postgresql')")
        if not _psql():
            raise NotInstalled("psql not found: install the Debian package 'postgresql-client'")
        owner = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise NotInstalled("running as root and there is no 'postgres' user to run the "
                                   "PostgreSQL server as (the Debian package 'postgresql' "
                                   "creates it)")
            runuser = shutil.which("runuser") or "/usr/sbin/runuser"
            if not os.access(runuser, os.X_OK):
                raise NotInstalled("running as root and runuser(1) is missing, so the server "
                                   "cannot be started as the 'postgres' user")
            self.prefix = [runuser, "-u", "postgres", "--"]
            probe = subprocess.run(self.prefix + ["test", "-x", os.path.join(self.bin_dir, "initdb")],
                                   stdin=subprocess.DEVNULL, capture_output=True)
            if probe.returncode != 0:
                raise Unavailable(f"the 'postgres' user cannot execute {self.bin_dir}/initdb here "
                                  f"(a directory on the way is not traversable)")
        # Short: the socket path must stay under ~100 characters.
        self.dir = tempfile.mkdtemp(prefix="gtco_pg_", dir="/tmp")
        if owner:
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        self._start_watchdog()
        self.port = free_port()
        data = os.path.join(self.dir, "data")
        self._run([os.path.join(self.bin_dir, "initdb"), "-D", data, "-U", SUPERUSER,
                   "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"], "initdb")
        self.resume()
        return self

    def resume(self):
        """Starts the cluster's server process (again, after pause()) on the same port."""
        # Durability of the test cluster itself is irrelevant (the tests kill gtco-server, not
        # PostgreSQL); speed is not.
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run([os.path.join(self.bin_dir, "pg_ctl"), "start", "-D",
                   os.path.join(self.dir, "data"), "-w", "-t", "60",
                   "-l", os.path.join(self.dir, "server.log"), "-o", options], "pg_ctl_start")
        self.query("postgres", "SELECT 1")

    def pause(self):
        """Stops the server process (fast shutdown: every connection is closed), keeping the
        cluster for resume(): a database restart as clients see it."""
        self._run([os.path.join(self.bin_dir, "pg_ctl"), "stop", "-D",
                   os.path.join(self.dir, "data"), "-m", "fast", "-w", "-t", "60"], "pg_ctl_stop")

    def _start_watchdog(self):
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, "\x1f".join(self.prefix),
             os.path.join(self.bin_dir, "pg_ctl"), os.path.join(self.dir, "data"), self.dir],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    def _run(self, argv, what):
        log = os.path.join(self.dir, what + ".log")
        with open(log, "ab") as out:
            result = subprocess.run(self.prefix + argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n"
                               f"{self._tail(log)}\n--- server.log\n"
                               f"{self._tail(os.path.join(self.dir, 'server.log'))}")

    @staticmethod
    def _tail(path, chars=3000):
        try:
            with open(path, "rb") as file:
                return file.read().decode(errors="replace")[-chars:]
        except OSError:
            return ""

    def log(self):
        return self._tail(os.path.join(self.dir, "server.log")) if self.dir else ""

    def stop(self):
        """Stops the server and removes its folder (the watchdog does both)."""
        if self._watchdog is None:
            return
        self._watchdog.stdin.close()
        try:
            self._watchdog.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        self._watchdog = None

    # --- databases and queries ------------------------------------------------------------

    def uri(self, database):
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, hint="t"):
        self._databases += 1
        name = f"t{self._databases}_" + re.sub(r"[^a-z0-9]", "_", hint.lower())[:40]
        self.query("postgres", f"CREATE DATABASE {name}")
        return name

    def query(self, database, sql):
        """Rows of `sql` as tuples of strings (psql's unaligned output); raises on error."""
        result = subprocess.run(
            [_psql(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\x1f", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", SUPERUSER, "-d", database, "-c", sql],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"psql on {database} failed ({result.returncode}): {sql}\n"
                               f"{result.stderr}")
        return [tuple(line.split("\x1f")) for line in result.stdout.splitlines()]


_shared = None
_shared_error = None


def shared():
    """The module-wide server, started on first use; raises Unavailable (every time) where the
    host keeps the `postgres` user from running it."""
    global _shared, _shared_error
    if _shared_error is not None:
        raise Unavailable(_shared_error)
    if _shared is None:
        server = PostgresServer()
        try:
            _shared = server.start()
        except Unavailable as error:
            server.stop()
            _shared_error = str(error)
            raise
        except Exception:
            server.stop()
            raise
    return _shared


def stop_shared():
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None
