"""The web dashboard in a real headless browser (Debian's Chromium driven by Playwright) against a
real server and worker on a farm with team tokens: sign-in (a wrong token is refused), the jobs
page, a job's page whose tuning curves get their points live while the job runs (the worker
starts only after the page is open), the scheduler's rounds, the --explain table and the fusion
plan, the workers page, a workload's records, another team's job unreachable by URL and by API,
and a page that reconnects by itself after the server is killed and restarted (the job's history
comes back from the database). With GTCO_UPDATE_SCREENSHOT=1 it saves the job page to
bench/results/dashboard.png."""
import json
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import auth_test
from farm import DATA, SERVER, SOURCE_DIR, Farm

PLAYWRIGHT_DIR = os.path.join(SOURCE_DIR, ".deps", "playwright")
CHROMIUM = os.environ.get("GTCO_CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = os.path.join(SOURCE_DIR, "bench", "results", "dashboard.png")
VISION_MODEL = os.path.join(DATA, "transformer_block.onnx")
NLP_MODEL = os.path.join(DATA, "mlp.onnx")
WAIT_MS = 120_000  # what a worker on a loaded 2-core machine may need

sys.path.insert(0, PLAYWRIGHT_DIR)
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # reported by the test, with what to run
    sync_playwright = None


def admin(db, *args):
    """`gtco-server admin` (auth_test's helper), its output without the trailing newline."""
    return auth_test.admin(db, *args).stdout.strip()


class DashboardTest(unittest.TestCase):
    def setUp(self):
        if sync_playwright is None:
            self.fail(f"Playwright is not installed in {PLAYWRIGHT_DIR}: run "
                      "scripts/setup.sh --tests")
        if not os.access(CHROMIUM, os.X_OK):
            self.fail(f"{CHROMIUM} is missing: run scripts/setup.sh --tests (Debian package "
                      "chromium)")
        self.farm = Farm(metrics=True, auth=True)
        admin(self.farm.db, "create-team", "vision")
        admin(self.farm.db, "create-team", "nlp")
        self.vision = admin(self.farm.db, "issue-token", "--team", "vision", "--role", "submitter")
        self.nlp = admin(self.farm.db, "issue-token", "--team", "nlp", "--role", "submitter")
        self.admin = admin(self.farm.db, "issue-token", "--role", "admin")
        self.worker = admin(self.farm.db, "issue-token", "--role", "worker")
        self.farm.start_server()
        self.base = f"http://127.0.0.1:{self.farm.metrics_port}"
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(WAIT_MS)
        self.page_errors = []
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def tearDown(self):
        self.browser.close()
        self.playwright.stop()
        self.farm.stop()
        shutil.rmtree(self.farm.dir, ignore_errors=True)

    def api(self, path, token):
        """(HTTP status, JSON body) of GET /api/<path> with `token` (None: no header)."""
        request = urllib.request.Request(f"{self.base}/api/{path}")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def submit(self, model, budget, token):
        return self.farm.client_json("submit", model, "--target", "cpu", "--budget", str(budget),
                                     token=token)["job_id"]

    def ok_trials(self, job):
        """Points the job's curves must show: its successful trials, from the API."""
        curves = self.api(f"jobs/{job}/curves", self.admin)[1]
        return sum(len(task["overall"]["points"]) for task in curves["tasks"])

    def wait_until(self, condition, what):
        """Polls `condition` from here (the page's CSP forbids the eval that Playwright's
        wait_for_function uses, as it should)."""
        deadline = time.time() + WAIT_MS / 1000
        while time.time() < deadline:
            if condition():
                return
            self.page.wait_for_timeout(250)
        self.fail(f"timed out waiting for {what}:\n{self.farm.read_logs()}")

    def points(self):
        return self.page.locator("#curves svg.curve circle.pt").count()

    def sign_in(self, token):
        self.page.fill("#token", token)
        self.page.click("#sign-in-form button")

    def test_http_port_and_metrics_port_must_agree(self):
        """--http-port and its alias --metrics-port name one port: two different ones are a usage
        error, before anything listens."""
        ran = subprocess.run([SERVER, "--listen", "127.0.0.1:1", "--db", ":memory:", "--no-auth",
                              "--http-port", "9464", "--metrics-port", "9465"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(ran.returncode, 2, ran.stderr)
        self.assertIn("name the same port", ran.stderr)

    def test_api_refuses_wrong_tokens_and_other_teams(self):
        theirs = self.submit(NLP_MODEL, 8, self.nlp)
        status, body = self.api("jobs", None)
        self.assertEqual((status, body["code"]), (401, "UNAUTHENTICATED"), body)
        self.assertIn("Authorization: Bearer", body["error"])
        status, body = self.api("jobs", "gtco_s_000000000000_" + "0" * 40)
        self.assertEqual((status, body["code"]), (401, "UNAUTHENTICATED"), body)
        self.assertIn("unknown token", body["error"])
        status, body = self.api("jobs", "not-a-token")
        self.assertEqual(status, 401, body)
        status, body = self.api("jobs", self.worker)
        self.assertEqual((status, body["code"]), (403, "PERMISSION_DENIED"), body)
        # Another team's job, on every document of it, reads exactly like one that does not exist.
        for part in ("", "/curves", "/allocation", "/plan"):
            status, hidden = self.api(f"jobs/{theirs}{part}", self.vision)
            _, unknown = self.api(f"jobs/j-does-not-exist{part}", self.vision)
            self.assertEqual(status, 404, hidden)
            self.assertEqual(hidden["error"].replace(theirs, "ID"),
                             unknown["error"].replace("j-does-not-exist", "ID"))
        self.assertEqual(self.api("jobs", self.vision)[1]["jobs"], [])
        self.assertEqual([job["job_id"] for job in self.api("jobs", self.nlp)[1]["jobs"]], [theirs])
        self.assertEqual(self.api(f"jobs/{theirs}", self.admin)[1]["team"], "nlp")
        # The same over gRPC, for comparison: NOT_FOUND.
        result = self.farm.client("status", theirs, check=False, token=self.vision)
        self.assertEqual(result.returncode, 3)
        self.assertIn("NOT_FOUND", result.stderr)

    def test_pages_in_a_browser(self):
        page = self.page
        ours = self.submit(VISION_MODEL, 160, self.vision)
        theirs = self.submit(NLP_MODEL, 8, self.nlp)

        # Sign-in: a wrong token is refused with the server's reason, then the team's token works.
        page.goto(f"{self.base}/jobs")
        page.wait_for_selector("#sign-in-form")
        self.sign_in("gtco_s_000000000000_" + "0" * 40)
        page.wait_for_selector("#sign-in-error:has-text('unknown token')")
        self.sign_in(self.worker)
        page.wait_for_selector("#sign-in-error:has-text('needs a submitter or admin token')")
        self.sign_in(self.vision)
        page.wait_for_selector(f"#jobs tr[data-job-id='{ours}']")
        self.assertIn("team vision", page.inner_text("#who"))
        jobs_text = page.inner_text("#jobs")
        self.assertIn("transformer_block.onnx", jobs_text)
        self.assertIn("running", jobs_text)
        self.assertNotIn(theirs, jobs_text)
        self.assertNotIn("mlp.onnx", jobs_text)

        # The job page before any worker exists: no points yet; they arrive without a reload.
        page.click(f"#jobs tr[data-job-id='{ours}'] a")
        page.wait_for_selector("#curves .curve-card")
        self.assertEqual(self.points(), 0)
        self.assertEqual(page.url, f"{self.base}/jobs/{ours}")
        self.farm.start_worker(token=self.worker)
        self.wait_until(lambda: self.points() > 0, "the first points of the curves")
        page.wait_for_selector("#job-summary .badge.done")
        ok_trials = self.ok_trials(ours)
        self.assertGreater(ok_trials, 80)
        # The last poll, after the end, brings every trial's point.
        self.wait_until(lambda: self.points() == ok_trials, f"{ok_trials} points")
        # Six fused subgraphs, and the attention's unfused alternative (matmul, softmax, matmul).
        self.assertEqual(page.locator("#curves .curve-card").count(), 9)
        self.assertGreaterEqual(page.locator("#curves svg.curve path.best").count(), 16)
        self.assertGreater(page.locator("#allocation svg rect.bar").count(), 0)
        # The --explain table: every task with its mappings' spaces after pruning.
        self.assertGreaterEqual(page.locator("#tasks tr.sub").count(), 8)
        self.assertIn("schedules after pruning", page.inner_text("#tasks"))
        self.assertGreater(page.locator("#decisions li").count(), 0)
        self.assertIn("round", page.inner_text("#decisions"))
        # The plan choice (attention fused or not, one row per alternative, one chosen) above
        # the subgraphs, each alternative's tasks among them.
        self.assertEqual(page.locator("#plan-choices tbody tr").count(), 2)
        self.assertEqual(page.locator("#plan-choices tbody tr.chosen").count(), 1)
        self.assertIn("unfused attention", page.inner_text("#plan-choices"))
        self.assertEqual(page.locator("#plan table:not(#plan-choices) tbody tr").count(), 9)
        self.assertIn("alternative, not chosen", page.inner_text("#plan"))
        if os.environ.get("GTCO_UPDATE_SCREENSHOT") == "1":
            os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
            # The top of the page: summary, curves, rounds and the start of the --explain table.
            page.screenshot(path=SCREENSHOT, full_page=True,
                            clip={"x": 0, "y": 0, "width": 1400, "height": 2300})

        # A workload's records, from the task table's link.
        page.click("#tasks tbody tr[data-task] a >> nth=0")
        page.wait_for_selector("#records tbody tr")
        self.assertIn("/workloads/", page.url)

        # Workers: the one worker, alive, with its hardware and throughput.
        page.click("nav a[data-nav='workers']")
        page.wait_for_selector("#workers tbody tr")
        workers = self.api("workers", self.admin)[1]["workers"]
        self.assertEqual(len(workers), 1)
        row = page.inner_text(f"#workers tr[data-worker-id='{workers[0]['worker_id']}']")
        self.assertIn("alive", row)
        self.assertIn(workers[0]["hardware"]["summary"], row)

        # Another team's job by URL: the same page as for a job that does not exist.
        page.goto(f"{self.base}/jobs/{theirs}")
        page.wait_for_selector("#error")
        self.assertEqual(page.inner_text("#error"), "Job not found")
        self.assertIn(f"job '{theirs}' not found", page.inner_text("main"))
        self.assertNotIn("mlp.onnx", page.inner_text("main"))

        # The server dies and comes back: the page says so, reconnects by itself and shows the
        # job again from the database (still signed in).
        page.goto(f"{self.base}/jobs")
        page.wait_for_selector(f"#jobs tr[data-job-id='{ours}']")
        self.farm.kill_server()
        page.wait_for_selector("#banner:has-text('reconnecting')")
        self.farm.start_server()
        page.wait_for_selector("#banner", state="hidden")
        page.wait_for_selector(f"#jobs tr[data-job-id='{ours}'] .badge.done")
        page.click(f"#jobs tr[data-job-id='{ours}'] a")
        self.wait_until(lambda: self.points() == ok_trials, f"{ok_trials} points after a restart")
        self.assertEqual(self.page_errors, [])


if __name__ == "__main__":
    unittest.main()
