// The GTCO dashboard: sign-in, routing and the pages (jobs, a job's tuning, workers, a
// workload's records). Everything shown comes from the JSON API under /api/, polled every two
// seconds while it can change; when the server stops answering the page says so and keeps
// trying, so it picks up again by itself after a restart. The team token lives in this tab's
// sessionStorage and travels only in the Authorization header.
"use strict";

(function () {
  const TOKEN_KEY = "gtco.token";
  const POLL_MS = 2000;
  const Charts = window.GtcoCharts;
  const main = document.getElementById("main");
  const banner = document.getElementById("banner");
  const signInSection = document.getElementById("sign-in");

  let session = null;
  let view = null;
  let viewSerial = 0;
  let timer = null;

  // ---- the API ----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }
  class Offline extends Error {}

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  async function api(path) {
    const headers = {};
    if (token()) headers.Authorization = "Bearer " + token();
    let response;
    try {
      response = await fetch("/api/" + path, {headers, cache: "no-store"});
    } catch (error) {
      throw new Offline("the server does not answer");
    }
    let body = null;
    try {
      body = await response.json();
    } catch (error) {
      body = null;  // not JSON: e.g. a proxy's error page
    }
    if (!response.ok) {
      throw new ApiError(response.status, (body && body.code) || "",
                         (body && body.error) || response.statusText);
    }
    return body;
  }

  const enc = encodeURIComponent;

  // ---- DOM and formatting helpers ------------------------------------------------------------

  function h(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function link(href, ...children) {
    return h("a", {href, "data-link": true}, ...children);
  }

  function badge(state) {
    return h("span", {class: "badge " + state}, state.replace("_", " "));
  }

  function progress(done, total) {
    const fraction = total > 0 ? Math.min(1, done / total) : 0;
    const bar = h("span");
    bar.style.width = (100 * fraction).toFixed(1) + "%";
    return h("span", {}, h("span", {class: "progress", title: `${done} of ${total}`}, bar),
             h("span", {class: "progress-label"}, `${done}/${total}`));
  }

  function seconds(value) {
    return value === null || value === undefined ? "-" : Charts.formatSeconds(value);
  }

  function duration(value) {
    if (value === null || value === undefined) return "?";
    if (value <= 0) return "-";
    if (value < 60) return Math.round(value) + " s";
    if (value < 3600) return `${Math.floor(value / 60)} min ${Math.round(value % 60)} s`;
    return `${Math.floor(value / 3600)} h ${Math.round((value % 3600) / 60)} min`;
  }

  // 1234567 -> "1.23 M": counts (FLOPs) with an SI prefix.
  function si(value) {
    const prefixes = ["", " k", " M", " G", " T"];
    let index = 0;
    while (Math.abs(value) >= 1000 && index < prefixes.length - 1) {
      value /= 1000;
      index++;
    }
    return (index === 0 ? String(Math.round(value)) : value.toPrecision(3)) + prefixes[index];
  }

  function when(unixSeconds) {
    return unixSeconds > 0 ? new Date(unixSeconds * 1000).toLocaleString() : "-";
  }

  function shortTask(taskId) {
    return taskId.slice(taskId.lastIndexOf(".") + 1);
  }

  function setBanner(kind, message) {
    banner.hidden = !message;
    banner.className = "banner" + (kind ? " " + kind : "");
    banner.textContent = message || "";
  }

  // Colors that stay the same for one mapping (or task) across every chart of the page.
  function colorMap() {
    const assigned = new Map();
    return (key) => {
      if (!assigned.has(key)) {
        assigned.set(key, Charts.PALETTE[assigned.size % Charts.PALETTE.length]);
      }
      return assigned.get(key);
    };
  }

  // ---- routing and polling -------------------------------------------------------------------

  function navigate(href) {
    history.pushState({}, "", href);
    route();
  }

  document.addEventListener("click", (event) => {
    const anchor = event.target.closest("a[data-link]");
    if (!anchor || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    navigate(anchor.getAttribute("href"));
  });
  window.addEventListener("popstate", () => route());

  function route() {
    if (!session) return;
    const path = location.pathname;
    const params = new URLSearchParams(location.search);
    let match;
    let next;
    if (path === "/" || path === "/jobs") {
      next = jobsView(params.get("state") || "");
    } else if ((match = path.match(/^\/jobs\/([^/]+)$/))) {
      next = jobView(decodeURIComponent(match[1]));
    } else if (path === "/workers") {
      next = workersView();
    } else if ((match = path.match(/^\/workloads\/([^/]+)$/))) {
      next = workloadView(decodeURIComponent(match[1]), params.get("target") || "cpu");
    } else {
      next = {root: h("div", {}, h("h1", {id: "error"}, "Page not found")), refresh: null};
    }
    for (const anchor of document.querySelectorAll("[data-nav]")) {
      anchor.classList.toggle("active", path.startsWith("/" + anchor.dataset.nav) ||
                              (path === "/" && anchor.dataset.nav === "jobs"));
    }
    show(next);
  }

  function show(next) {
    clearTimeout(timer);
    view = next;
    const serial = ++viewSerial;
    main.replaceChildren(next.root);
    if (next.refresh) poll(serial);
  }

  // Refreshes the current view every POLL_MS until it says nothing more will change; a server
  // that does not answer (or answers 5xx) shows the banner and is tried again.
  async function poll(serial) {
    let again = true;
    try {
      again = (await view.refresh()) !== false;
      if (serial !== viewSerial) return;
      setBanner(null, "");
    } catch (error) {
      if (serial !== viewSerial) return;
      if (error instanceof ApiError && error.status === 401) {
        signOut(error.message);
        return;
      }
      if (error instanceof Offline || (error instanceof ApiError && error.status >= 500)) {
        setBanner("offline", `Server unreachable (${error.message}): reconnecting…`);
      } else {
        setBanner(null, "");
        view.fail(error);
        return;
      }
    }
    if (again && serial === viewSerial) timer = setTimeout(() => poll(serial), POLL_MS);
  }

  function failure(root, title) {
    return (error) => {
      root.replaceChildren(h("h1", {id: "error"}, title),
                           h("p", {class: "error"}, error.message));
    };
  }

  // ---- sign-in -----------------------------------------------------------------------------

  function signedIn(who) {
    session = who;
    signInSection.hidden = true;
    main.hidden = false;
    document.getElementById("who").textContent =
        !who.auth ? "open farm (no tokens)" : who.role === "admin" ? "admin" : `team ${who.team}`;
    document.getElementById("sign-out").hidden = !who.auth;
  }

  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    session = null;
    clearTimeout(timer);
    viewSerial++;
    main.replaceChildren();
    main.hidden = true;
    signInSection.hidden = false;
    document.getElementById("who").textContent = "";
    document.getElementById("sign-out").hidden = true;
    document.getElementById("sign-in-error").textContent = message || "";
    document.getElementById("token").focus();
  }

  document.getElementById("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = document.getElementById("token");
    sessionStorage.setItem(TOKEN_KEY, field.value.trim());
    try {
      signedIn(await api("session"));
      field.value = "";
      route();
    } catch (error) {
      sessionStorage.removeItem(TOKEN_KEY);
      document.getElementById("sign-in-error").textContent =
          error instanceof Offline ? "The server does not answer; try again." : error.message;
    }
  });
  document.getElementById("sign-out").addEventListener("click", () => signOut(""));

  async function start() {
    try {
      signedIn(await api("session"));
      setBanner(null, "");
      route();
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        signOut(token() ? error.message : "");
      } else {
        setBanner("offline", `Server unreachable (${error.message}): reconnecting…`);
        setTimeout(start, POLL_MS);
      }
    }
  }

  // ---- pages -------------------------------------------------------------------------------

  function jobsView(state) {
    const select = h("select", {id: "state-filter", onchange: (event) => navigate(
        "/jobs" + (event.target.value ? "?state=" + enc(event.target.value) : ""))},
        ["", "running", "done", "failed", "cancelled"].map(
            (name) => h("option", {value: name, selected: name === state}, name || "every state")));
    const rows = h("tbody");
    const empty = h("p", {class: "muted", hidden: true}, "No jobs yet: submit one with ",
                    h("code", {}, "gtco-client submit model.onnx --budget 200"), ".");
    const root = h("div", {},
        h("h1", {}, "Jobs"),
        h("div", {class: "controls"}, "Show ", select),
        h("table", {id: "jobs"},
          h("thead", {}, h("tr", {},
            h("th", {}, "Job"), h("th", {}, "Model"), h("th", {}, "Team"), h("th", {}, "Target"),
            h("th", {}, "State"), h("th", {}, "Trials"), h("th", {}, "Tasks"),
            h("th", {class: "num"}, "Est. latency"), h("th", {class: "num"}, "ETA"),
            h("th", {}, "Submitted"))),
          rows),
        empty);
    return {
      root,
      fail: failure(root, "Cannot list jobs"),
      async refresh() {
        const data = await api("jobs" + (state ? "?state=" + enc(state) : ""));
        rows.replaceChildren(...data.jobs.map((job) => h("tr", {"data-job-id": job.job_id},
            h("td", {}, link("/jobs/" + enc(job.job_id), h("code", {}, job.job_id))),
            h("td", {}, job.model_name),
            h("td", {}, job.team || "-"),
            h("td", {}, job.target),
            h("td", {}, badge(job.state), job.error ? h("div", {class: "error"}, job.error) : null),
            h("td", {}, progress(job.trials_done, job.budget),
              job.trials_failed ? h("span", {class: "muted"}, ` ${job.trials_failed} failed`) : null),
            h("td", {}, `${job.tasks_finished}/${job.tasks_total}`),
            h("td", {class: "num"}, seconds(job.estimated_latency_seconds)),
            h("td", {class: "num"}, job.state === "running" ? duration(job.eta_seconds) : "-"),
            h("td", {}, when(job.created_unix_seconds)))));
        empty.hidden = data.jobs.length > 0;
      },
    };
  }

  function jobView(jobId) {
    const colorOfMapping = colorMap();
    const colorOfTask = colorMap();
    const title = h("h1", {id: "job-title"}, "Job ", h("code", {}, jobId));
    const summary = h("div", {class: "summary", id: "job-summary"});
    const curves = h("div", {class: "curves", id: "curves"});
    const allocation = h("div", {class: "card", id: "allocation"});
    const allocationLegend = h("div", {class: "legend"});
    const tasks = h("div", {id: "tasks"});
    const decisions = h("div", {id: "decisions"});
    const plan = h("div", {id: "plan"});
    const root = h("div", {}, title, summary,
        h("h2", {}, "Tuning curves"),
        h("p", {class: "muted"}, "Best latency so far against the task's trials, one line per " +
          "intrinsic mapping (dots: every successful trial; grey: the best over all mappings)."),
        curves,
        h("h2", {}, "Scheduler allocation over rounds"),
        h("p", {class: "muted"}, "Trials the dual-task scheduler placed in each round, by task."),
        allocation, allocationLegend,
        h("h2", {}, "Tasks and intrinsic mappings"), tasks,
        h("h2", {}, "Latest scheduler decisions"), decisions,
        h("h2", {}, "Fusion plan"), plan);
    let finalLoaded = false;

    function renderSummary(job) {
      const field = (label, ...value) => h("div", {}, h("b", {}, label), ...value);
      title.replaceChildren("Job ", h("code", {}, job.job_id), " ", h("span", {class: "muted"},
                                                                       job.model_name));
      summary.replaceChildren(
          field("State", badge(job.state)),
          field("Trials", progress(job.trials_done, job.budget),
                job.trials_failed ? h("div", {class: "muted"}, `${job.trials_failed} failed`) : null),
          field("ETA", job.state === "running" ? duration(job.eta_seconds) : "-"),
          field("Est. model latency", seconds(job.estimated_latency_seconds)),
          field("Team", job.team || "-"),
          field("Target", job.target),
          field("Scheduler", `${job.scheduler}, ${job.round_size} per round`),
          field("Submitted", when(job.created_unix_seconds)),
          ...(job.error ? [field("Error", h("span", {class: "error"}, job.error))] : []));
    }

    function renderCurves(data, job) {
      const info = new Map(job.tasks.map((task) => [task.task_id, task]));
      curves.replaceChildren(...data.tasks.map((task) => {
        const series = [Object.assign({}, task.overall, {color: "#c9d1db", width: 5, points: []})]
            .concat(task.mappings.map((mapping) => Object.assign({}, mapping,
                                                                   {color: colorOfMapping(mapping.name)})));
        const chart = h("div", {class: "chart"});
        const taskInfo = info.get(task.task_id);
        const fromDatabase = taskInfo && taskInfo.state === "from_database";
        Charts.curveChart(chart, {series, trials: task.overall.trials,
                                  label: `tuning curve of ${task.task_id}`,
                                  empty: fromDatabase ? "answered from the database: not tuned again"
                                                      : "no successful trial yet"});
        const legend = h("div", {class: "legend"}, task.mappings.map((mapping) => {
          const swatch = h("span", {class: "swatch"});
          swatch.style.background = colorOfMapping(mapping.name);
          return h("span", {}, swatch, `${mapping.name}: ${mapping.trials} trials, best ` +
                                       seconds(mapping.best_seconds));
        }));
        return h("div", {class: "card curve-card", "data-task": task.task_id},
            h("h3", {}, shortTask(task.task_id), " ", task.description),
            h("div", {class: "sub"}, `${task.overall.trials} trials`,
              task.overall.failed ? ` (${task.overall.failed} failed)` : "",
              ` · best ${seconds(task.overall.best_seconds)}`),
            chart, legend);
      }));
    }

    function renderAllocation(data, job) {
      const described = new Map(job.tasks.map((task) => [task.task_id, task.description]));
      const bars = data.rounds.map((round) => {
        const placed = Object.entries(round.per_mapping).map(([name, n]) => `${n} ${name}`)
            .join(" + ");
        return {label: String(round.round),
                parts: [{key: shortTask(round.task_id), value: round.trials,
                         title: `round ${round.round}: ${shortTask(round.task_id)} ${placed}`}]};
      });
      const colors = {};
      for (const taskId of data.tasks) colors[shortTask(taskId)] = colorOfTask(taskId);
      Charts.stackedBars(allocation, {bars, colors, xLabel: "round", label: "trials per round",
                                      empty: "no round scheduled yet"});
      allocationLegend.replaceChildren(...data.tasks.map((taskId) => {
        const swatch = h("span", {class: "swatch"});
        swatch.style.background = colorOfTask(taskId);
        return h("span", {}, swatch, `${shortTask(taskId)} ${described.get(taskId) || ""}`);
      }));
    }

    function renderTasks(job) {
      const rows = [];
      for (const task of job.tasks) {
        rows.push(h("tr", {"data-task": task.task_id},
            h("td", {}, h("code", {}, shortTask(task.task_id))),
            h("td", {}, link(`/workloads/${enc(task.workload_key)}?target=${enc(job.target)}`,
                             task.description)),
            h("td", {class: "num"}, "x" + task.weight),
            h("td", {}, badge(task.state)),
            h("td", {class: "num"}, task.state === "from_database" ? "from database"
                                     : `${task.trials_done}/${task.trials_allotted}`),
            h("td", {class: "num"}, task.trials_failed || ""),
            h("td", {class: "num"}, seconds(task.best_seconds)),
            h("td", {class: "num"}, task.gflops > 0 ? task.gflops.toFixed(1) : "-"),
            h("td", {class: "num"}, duration(task.eta_seconds)),
            h("td", {class: "num"}, task.expected_gain_seconds ?
                                     task.expected_gain_seconds.toPrecision(3) : "-")));
        let hardware = "";
        const classes = new Set(task.mappings.map((mapping) => mapping.hardware)).size;
        for (const mapping of task.mappings) {
          if (classes > 1 && mapping.hardware !== hardware) {
            hardware = mapping.hardware;
            rows.push(h("tr", {class: "sub"}, h("td", {}), h("td", {colspan: 9}, "on " + hardware)));
          }
          const pruned = Object.entries(mapping.pruned).map(([rule, n]) => `${rule} ${n}`)
              .join(", ");
          rows.push(h("tr", {class: "sub"}, h("td", {}),
              h("td", {}, h("code", {}, mapping.name)),
              mapping.applies
                ? [h("td", {colspan: 3}, `space ${mapping.admitted} of ${mapping.considered} ` +
                                         "schedules after pruning" +
                                         (pruned ? ` (pruned: ${pruned})` : "")),
                   h("td", {class: "num"}, `${mapping.trials}` +
                                           (mapping.in_flight ? ` +${mapping.in_flight}` : "")),
                   h("td", {class: "num"}, seconds(mapping.best_seconds)),
                   h("td", {colspan: 3})]
                : h("td", {colspan: 8, class: "muted"}, "not applicable: " + mapping.reason)));
        }
      }
      tasks.replaceChildren(h("table", {},
          h("thead", {}, h("tr", {},
            h("th", {}, "Task"), h("th", {}, "Subgraph / mapping"), h("th", {class: "num"}, "Weight"),
            h("th", {}, "State"), h("th", {class: "num"}, "Trials"), h("th", {class: "num"}, "Failed"),
            h("th", {class: "num"}, "Best"), h("th", {class: "num"}, "GFLOP/s"),
            h("th", {class: "num"}, "ETA"), h("th", {class: "num"}, "Expected gain (s/trial)"))),
          h("tbody", {}, rows)));
    }

    function renderDecisions(job) {
      decisions.replaceChildren(job.decisions.length === 0
          ? h("p", {class: "muted"}, "None yet. The server keeps its latest decisions in memory: " +
                                     "after a restart it shows those made since.")
          : h("ol", {class: "decisions"}, job.decisions.map((line) => h("li", {}, line))));
    }

    function renderPlan(data) {
      const choices = data.choices.length === 0 ? [] : [
          h("p", {class: "muted"}, "Regions the plan can compute in more than one way: both " +
            "alternatives are tuned, and the one whose best times add up to less is chosen (*); " +
            "one that falls more than 5% behind draws no more trials while others can take them."),
          h("table", {id: "plan-choices"},
            h("thead", {}, h("tr", {},
              h("th", {}, "Region"), h("th", {}, ""), h("th", {}, "Alternative"),
              h("th", {class: "num"}, "Time per region"), h("th", {}, "Tasks"))),
            h("tbody", {}, data.choices.flatMap((choice) => choice.alternatives.map(
              (alternative, index) => h("tr", {class: alternative.chosen ? "chosen" : ""},
                h("td", {}, index === 0 ? `${choice.description} x${choice.instances}` : ""),
                h("td", {}, alternative.chosen ? "*" : ""),
                h("td", {}, alternative.name, !alternative.left_behind ? null
                  : h("span", {class: "muted"}, " (too far behind: no more trials)")),
                h("td", {class: "num"}, alternative.seconds === null ? "not measured yet"
                                                                     : seconds(alternative.seconds)),
                h("td", {class: "mono"}, alternative.tasks.map(
                  (task) => `${task.task_id} x${task.count}`).join(", ")))))))];
      const fallbacks = (data.fallbacks || []).length === 0 ? [] : [
          h("p", {class: "muted"}, `${data.fallbacks.length} node(s) have no kernel family and ` +
            "run as fallback steps (the reference op library, not tuned); an export measures " +
            "their share of the run."),
          h("table", {id: "fallback-steps"},
            h("thead", {}, h("tr", {}, h("th", {}, "Op"), h("th", {}, "Node"), h("th", {}, "Why"))),
            h("tbody", {}, data.fallbacks.map((fallback) => h("tr", {},
              h("td", {}, fallback.op_type), h("td", {class: "mono"}, fallback.node),
              h("td", {}, fallback.reason)))))];
      plan.replaceChildren(
          ...choices,
          ...fallbacks,
          h("p", {class: "muted"}, `The fusion planner split ${data.model_name} into ` +
            `${data.subgraphs.length} fused subgraphs (${si(data.total_flops)}FLOP a run in the ` +
            "chosen plan); each is one task, tuned once whatever model it comes from."),
          h("table", {},
            h("thead", {}, h("tr", {},
              h("th", {}, "#"), h("th", {}, "Anchor"), h("th", {}, "Fused subgraph"),
              h("th", {class: "num"}, "Weight"), h("th", {class: "num"}, "FLOP"),
              h("th", {class: "num"}, "Best"), h("th", {}, "Share of est. latency"))),
            h("tbody", {}, data.subgraphs.map((subgraph) => {
              const share = h("span", {class: "share"});
              share.style.width = Math.round(120 * (subgraph.latency_share || 0)) + "px";
              return h("tr", {},
                  h("td", {}, subgraph.ordinal),
                  h("td", {}, subgraph.kind),
                  h("td", {}, link(`/workloads/${enc(subgraph.workload_key)}?target=${enc(data.target)}`,
                                   subgraph.description),
                    h("details", {}, h("summary", {}, "workload"),
                      h("pre", {class: "mono"}, subgraph.canonical))),
                  h("td", {class: "num"}, subgraph.runs > 0 ? "x" + subgraph.runs
                                                            : "alternative, not chosen"),
                  h("td", {class: "num"}, si(subgraph.flops)),
                  h("td", {class: "num"}, seconds(subgraph.best_seconds)),
                  h("td", {}, share, subgraph.latency_share === null ? " -"
                     : ` ${(100 * subgraph.latency_share).toFixed(1)}%`));
            }))));
    }

    return {
      root,
      fail: failure(root, "Job not found"),
      async refresh() {
        const path = "jobs/" + enc(jobId);
        const job = await api(path);
        renderSummary(job);
        renderTasks(job);
        renderDecisions(job);
        const running = job.state === "running";
        if (!finalLoaded) {
          const [curveData, allocationData, planData] = await Promise.all(
              [api(path + "/curves"), api(path + "/allocation"), api(path + "/plan")]);
          renderCurves(curveData, job);
          renderAllocation(allocationData, job);
          renderPlan(planData);
          finalLoaded = !running;
        }
        return running;  // a finished job changes no more
      },
    };
  }

  function workersView() {
    const rows = h("tbody");
    const empty = h("p", {class: "muted", hidden: true}, "No worker has registered with this " +
                    "server since it started: run ", h("code", {}, "gtco-worker --server HOST:PORT"), ".");
    const root = h("div", {}, h("h1", {}, "Workers"),
        h("table", {id: "workers"},
          h("thead", {}, h("tr", {},
            h("th", {}, "Health"), h("th", {}, "Worker"), h("th", {}, "Host"), h("th", {}, "Target"),
            h("th", {}, "Hardware"), h("th", {class: "num"}, "Trials/min"),
            h("th", {class: "num"}, "Results"), h("th", {}, "Current lease"))),
          rows),
        empty);
    return {
      root,
      fail: failure(root, "Cannot list workers"),
      async refresh() {
        const data = await api("workers");
        rows.replaceChildren(...data.workers.map((worker) => {
          const hardware = worker.hardware;
          const details = worker.target === "cuda"
              ? `compute capability ${hardware.compute_capability}, ${hardware.sm_count} SMs`
              : `${(hardware.features || []).join(" ")}; L2 ${hardware.l2_bytes / 1024} KiB`;
          const leases = worker.leases.length === 0 ? h("span", {class: "muted"}, "idle")
              : h("div", {}, `${worker.leases.length} candidate${worker.leases.length > 1 ? "s" : ""}`,
                  worker.leases.slice(0, 3).map((lease) => h("div", {class: "muted"},
                    lease.visible
                      ? [link("/jobs/" + enc(lease.job_id), shortTask(lease.task_id) + " of " +
                                                            lease.job_id)]
                      : "another team's job",
                    ` (lease ends in ${Math.max(0, Math.round(lease.deadline_in_seconds))} s)`)));
          return h("tr", {"data-worker-id": worker.worker_id},
              h("td", {}, h("span", {class: "dot " + (worker.alive ? "alive" : "dead")}),
                worker.alive ? "alive" : "silent", h("div", {class: "muted"},
                  `seen ${worker.seen_seconds_ago.toFixed(1)} s ago`)),
              h("td", {}, h("code", {}, worker.worker_id)),
              h("td", {}, worker.hostname),
              h("td", {}, worker.target),
              h("td", {}, hardware.summary, h("div", {class: "muted"}, details)),
              h("td", {class: "num"}, worker.trials_per_minute),
              h("td", {class: "num"}, worker.results),
              h("td", {}, leases));
        }));
        empty.hidden = data.workers.length > 0;
      },
    };
  }

  function workloadView(key, target) {
    const rows = h("tbody");
    const heading = h("p", {class: "muted"});
    const select = h("select", {id: "target", onchange: (event) => navigate(
        `/workloads/${enc(key)}?target=${enc(event.target.value)}`)},
        ["cpu", "cuda"].map((name) => h("option", {value: name, selected: name === target}, name)));
    const root = h("div", {},
        h("h1", {}, "Records of workload ", h("code", {}, key)), heading,
        h("div", {class: "controls"}, "Target ", select),
        h("table", {id: "records"},
          h("thead", {}, h("tr", {},
            h("th", {class: "num"}, "#"), h("th", {class: "num"}, "Median"),
            h("th", {class: "num"}, "Min / max"), h("th", {class: "num"}, "Std dev"),
            h("th", {class: "num"}, "GFLOP/s"), h("th", {}, "Mapping"), h("th", {}, "Schedule trace"),
            h("th", {}, "Measured on"), h("th", {}, "When"))),
          rows));
    return {
      root,
      fail: failure(root, "No records"),
      async refresh() {
        const data = await api(`workloads/${enc(key)}/records?target=${enc(target)}&limit=50`);
        heading.textContent = `${data.description}: the ${data.records.length} best measured ` +
            `schedules on ${data.target}, shared by every team.`;
        rows.replaceChildren(...data.records.map((record, index) => h("tr", {},
            h("td", {class: "num"}, index + 1),
            h("td", {class: "num"}, seconds(record.median_seconds)),
            h("td", {class: "num"}, `${seconds(record.min_seconds)} / ${seconds(record.max_seconds)}`),
            h("td", {class: "num"}, seconds(record.stddev_seconds)),
            h("td", {class: "num"}, record.gflops.toFixed(1)),
            h("td", {}, h("code", {}, record.mapping)),
            h("td", {class: "trace mono"}, record.trace),
            h("td", {}, record.hardware, h("div", {class: "muted"}, record.worker_id)),
            h("td", {}, when(record.measured_unix_seconds)))));
        return false;  // records change slowly: loaded once per visit
      },
    };
  }

  start();
})();
