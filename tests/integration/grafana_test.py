"""The Grafana dashboard (deploy/grafana/gtco.json) on the real metric names: a real Prometheus
(Debian's package) scrapes a real farm while a job runs, and every PromQL expression of every
panel is evaluated through Prometheus' HTTP API. None may error; the core panels (throughput,
queue, leases, workers, jobs, RPC and database latency) must return data."""
import json
import os
import shutil
import subprocess
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from farm import DATA, SOURCE_DIR, Farm, free_port, scratch_dir

DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "grafana", "gtco.json")
PROMETHEUS = "/usr/bin/prometheus"
CORE = {
    "Trials per second by target", "Trials per second by team", "Queue depth by target",
    "Leases outstanding by target", "Leases granted and expired per second",
    "Connected workers by target", "Jobs by state", "RPC latency p99 by method",
    "Database statement latency p99",
}


class GrafanaDashboardTest(unittest.TestCase):
    def setUp(self):
        if not os.access(PROMETHEUS, os.X_OK):
            self.fail(f"{PROMETHEUS} is missing: run scripts/setup.sh --tests (Debian package "
                      "prometheus)")
        self.farm = Farm(metrics=True)
        self.farm.start_server()
        self.dir = scratch_dir("gtco-prometheus-")
        self.web_port = free_port()
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as config:
            config.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                         "scrape_configs:\n  - job_name: gtco-server\n"
                         "    static_configs:\n"
                         f"      - targets: ['127.0.0.1:{self.farm.metrics_port}']\n")
        self.log = open(os.path.join(self.dir, "prometheus.log"), "wb")
        self.prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.dir}/prometheus.yml",
             f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.web_port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def tearDown(self):
        self.prometheus.terminate()
        try:
            self.prometheus.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.prometheus.kill()
            self.prometheus.wait()
        self.log.close()
        self.farm.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.farm.dir, ignore_errors=True)

    def query(self, expr):
        """Prometheus' answer to an instant query: (status, result list, error)."""
        url = (f"http://127.0.0.1:{self.web_port}/api/v1/query?"
               + urllib.parse.urlencode({"query": expr}))
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:  # 400 / 422: a bad expression
            answer = json.loads(error.read())
        return answer["status"], answer.get("data", {}).get("result", []), answer.get("error", "")

    def wait_until(self, predicate, what, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if predicate():
                    return
            except OSError:
                pass  # prometheus not answering yet
            time.sleep(0.5)
        with open(os.path.join(self.dir, "prometheus.log")) as log:
            self.fail(f"timed out waiting until {what}\n{log.read()[-3000:]}\n"
                      f"{self.farm.read_logs()}")

    def test_every_panel_query_evaluates_on_a_live_farm(self):
        with open(DASHBOARD) as file:
            dashboard = json.load(file)
        panels = dashboard["panels"]
        self.assertTrue(CORE <= {panel["title"] for panel in panels})
        self.farm.start_worker()
        job = self.farm.submit(os.path.join(DATA, "transformer_block.onnx"), 400)
        self.farm.wait_for(job, lambda s: int(s["trials_done"]) >= 5)
        # Rates need two scrapes after the trials; the gauges come from the server's ticker.
        self.wait_until(lambda: self.query("sum(rate(gtco_trials_total[1m])) > 0")[1],
                        "prometheus sees trials per second")
        self.wait_until(lambda: self.query("gtco_leases_outstanding")[1],
                        "prometheus scraped the lease gauges")
        for panel in panels:
            data = False
            for target in panel["targets"]:
                status, result, error = self.query(target["expr"])
                self.assertEqual(status, "success",
                                 f"panel '{panel['title']}': {target['expr']}: {error}")
                data |= bool(result)
            if panel["title"] in CORE:
                self.assertTrue(data, f"core panel '{panel['title']}' returned no data")
        self.farm.client("cancel", job)


if __name__ == "__main__":
    unittest.main()
