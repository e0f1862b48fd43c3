"""The deployment files check out: the systemd units pass `systemd-analyze verify` (with their
ExecStart pointed at this build's binaries, as an install to /usr/local/bin would have them) and
the Prometheus configuration passes `promtool check config`. The Grafana dashboard is checked
against a live farm by grafana_test."""
import os
import shutil
import subprocess
import unittest

from farm import CLIENT, SERVER, SOURCE_DIR, WORKER, scratch_dir

DEPLOY = os.path.join(SOURCE_DIR, "deploy")


class DeployFilesTest(unittest.TestCase):
    def test_systemd_units_verify(self):
        analyze = shutil.which("systemd-analyze")
        # Software, not hardware: its absence fails (scripts/setup.sh --tests installs systemd).
        self.assertTrue(analyze, "systemd-analyze is missing: install the Debian package "
                                 "systemd (scripts/setup.sh --tests does)")
        units_dir = os.path.join(DEPLOY, "systemd")
        work = scratch_dir("gtco-units-")
        try:
            units = []
            for name in sorted(os.listdir(units_dir)):
                with open(os.path.join(units_dir, name)) as file:
                    text = file.read()
                self.assertIn("ExecStart=/usr/local/bin/gtco-", text, name)
                for binary in (SERVER, WORKER, CLIENT):
                    text = text.replace("/usr/local/bin/" + os.path.basename(binary), binary)
                path = os.path.join(work, name)
                with open(path, "w") as file:
                    file.write(text)
                units.append(path)
            self.assertGreaterEqual(len(units), 2)
            result = subprocess.run([analyze, "verify", "--man=no", *units], capture_output=True,
                                    text=True, timeout=120)
            # Only problems of our units count (the host's own units may warn about themselves).
            ours = [line for line in (result.stdout + result.stderr).splitlines()
                    if "gtco" in line]
            self.assertEqual(ours, [], result.stdout + result.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_prometheus_config_checks(self):
        promtool = shutil.which("promtool")
        if not promtool:
            self.fail("promtool is missing: run scripts/setup.sh --tests (Debian package "
                      "prometheus)")
        config = os.path.join(DEPLOY, "prometheus", "prometheus.yml")
        result = subprocess.run([promtool, "check", "config", config], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
