// load_gen: hundreds of concurrent clients (submit, watch, query) against one gtco-server,
// reporting per-RPC throughput, p50/p90/p99/max latency and errors by gRPC code.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/load/load_client.h"
#include "bench/load/load_stats.h"
#include "common/util/flags.h"

namespace gtco::bench {
namespace {

constexpr int kExitOk = 0, kExitErrors = 1, kExitUsage = 2, kExitUnreachable = 4;

constexpr const char* kUsage =
    "usage: load_gen --server HOST:PORT [--clients 300] [--seconds 60]\n"
    "                [--mix submit=1,watch=2,query=5,status=4,list=1] [--model "
    "tests/data/mlp.onnx]\n"
    "                [--budget 2] [--watch-seconds 3] [--think-ms 0] [--timeout 30]\n"
    "                [--warmup-budget 16] [--background-model M.onnx] [--background-budget N]\n"
    "                [--target cpu] [--token T] [--json out.json]\n"
    "  Each client holds its own channel (connection) for the whole run and loops over the mix:\n"
    "  submit: Submit --model with --budget trials; watch: WatchJob on the client's job while it\n"
    "  runs, else on the background job, for at most --watch-seconds (latency: first update);\n"
    "  status: GetJob; list: ListJobs of the client's team; query: QueryModel and QueryWorkload\n"
    "  (a workload with a measurement) in turn. Before the clock starts, one job of --model with\n"
    "  --warmup-budget trials is tuned to completion (so later submissions of it complete at\n"
    "  once from the database), and --background-model, when given, is submitted with\n"
    "  --background-budget trials to keep the workers busy and the watch streams updating; it\n"
    "  is cancelled at the end.\n"
    "  Exit codes: 0 no errors, 1 a call failed (or the warm-up job did not finish), 2 usage,\n"
    "  4 the server was unreachable.\n";

int Usage(const std::string& message) {
  if (!message.empty()) std::cerr << "load_gen: " << message << "\n";
  std::cerr << kUsage;
  return kExitUsage;
}

bool ReadFile(const std::string& path, std::string* bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream content;
  content << file.rdbuf();
  *bytes = content.str();
  return true;
}

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

/// Submits `model` with `budget` trials and follows it until it ends or `seconds` pass.
absl::StatusOr<gtco::v1::JobStatus> TuneToCompletion(LoadClient& client, const std::string& name,
                                                     const std::string& model, int64_t budget,
                                                     int seconds) {
  absl::StatusOr<gtco::v1::JobStatus> job = client.Submit(name, model, budget);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (job.ok() && job->state() == "running" && std::chrono::steady_clock::now() < end) {
    job = client.Watch(job->job_id(), 30);
  }
  return job;
}

int Run(const util::ParsedArgs& args) {
  auto clients = args.GetInt("clients", 300);
  auto seconds = args.GetInt("seconds", 60);
  auto budget = args.GetInt("budget", 2);
  auto watch_seconds = args.GetInt("watch-seconds", 3);
  auto think_ms = args.GetInt("think-ms", 0);
  auto timeout = args.GetInt("timeout", 30);
  auto warmup_budget = args.GetInt("warmup-budget", 16);
  auto background_budget = args.GetInt("background-budget", 100000);
  for (const auto* value : {&clients, &seconds, &budget, &watch_seconds, &think_ms, &timeout,
                            &warmup_budget, &background_budget}) {
    if (!value->ok()) return Usage(std::string(value->status().message()));
  }
  if (*clients < 1 || *seconds < 1 || *watch_seconds < 1 || *timeout < 1 || *think_ms < 0) {
    return Usage("--clients, --seconds, --watch-seconds and --timeout must be positive");
  }
  if (!args.Has("server")) return Usage("--server HOST:PORT is required");
  auto mix = OpMix::Parse(args.Get("mix", "submit=1,watch=2,query=5,status=4,list=1"));
  if (!mix.ok()) return Usage(std::string(mix.status().message()));

  LoadConfig config;
  config.address = args.Get("server");
  config.token = args.Get("token");
  if (config.token.empty() && std::getenv("GTCO_TOKEN")) config.token = std::getenv("GTCO_TOKEN");
  config.target = args.Get("target", "cpu");
  const std::string model_path = args.Get("model", "tests/data/mlp.onnx");
  if (!ReadFile(model_path, &config.model_bytes)) {
    return Usage("cannot read model file '" + model_path + "'");
  }
  config.model_name = BaseName(model_path);
  config.budget = *budget;
  config.watch_seconds = static_cast<int>(*watch_seconds);
  config.timeout_seconds = static_cast<int>(*timeout);
  config.think_ms = static_cast<int>(*think_ms);
  config.mix = *mix;
  std::string background_bytes;
  const std::string background_path = args.Get("background-model");
  if (!background_path.empty() && !ReadFile(background_path, &background_bytes)) {
    return Usage("cannot read model file '" + background_path + "'");
  }

  // Warm-up on a client of its own, not part of the figures.
  TunedKeys tuned_keys;
  const int client_count = static_cast<int>(*clients);
  LoadClient setup(config, client_count, "", &tuned_keys);
  if (!setup.Connect(std::chrono::system_clock::now() + std::chrono::seconds(30))) {
    std::cerr << "load_gen: cannot reach the server at " << config.address << "\n";
    return kExitUnreachable;
  }
  std::cerr << "load_gen: warm-up: tuning " << config.model_name << " (" << *warmup_budget
            << " trials)\n";
  absl::StatusOr<gtco::v1::JobStatus> warmup =
      TuneToCompletion(setup, config.model_name, config.model_bytes, *warmup_budget, 900);
  if (!warmup.ok() || warmup->state() != "done") {
    std::cerr << "load_gen: the warm-up job did not finish: "
              << (warmup.ok() ? warmup->state() + " " + warmup->error()
                              : std::string(warmup.status().message()))
              << "\n";
    return kExitErrors;
  }
  std::string background_job_id;
  if (!background_path.empty()) {
    absl::StatusOr<gtco::v1::JobStatus> background =
        setup.Submit(BaseName(background_path), background_bytes, *background_budget);
    if (!background.ok()) {
      std::cerr << "load_gen: cannot submit the background job: " << background.status() << "\n";
      return kExitErrors;
    }
    background_job_id = background->job_id();
    std::cerr << "load_gen: background job " << background_job_id << " ("
              << BaseName(background_path) << ", " << *background_budget << " trials)\n";
  }

  std::vector<std::unique_ptr<LoadClient>> load_clients;
  int unconnected = 0;
  auto connect_deadline = std::chrono::system_clock::now() + std::chrono::seconds(60);
  for (int index = 0; index < client_count; ++index) {
    load_clients.push_back(
        std::make_unique<LoadClient>(config, index, background_job_id, &tuned_keys));
    if (!load_clients.back()->Connect(connect_deadline)) ++unconnected;
  }
  std::cerr << "load_gen: " << client_count - unconnected << " of " << client_count
            << " clients connected; running " << *seconds << " s, mix " << config.mix.ToString()
            << "\n";

  auto start = std::chrono::steady_clock::now();
  auto end = start + std::chrono::seconds(*seconds);
  std::vector<std::thread> threads;
  threads.reserve(load_clients.size());
  for (auto& client : load_clients) {
    threads.emplace_back([&client, end] { client->Run(end); });
  }
  for (std::thread& thread : threads) thread.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string background_note;
  if (!background_job_id.empty()) {
    absl::StatusOr<gtco::v1::JobStatus> cancelled = setup.Cancel(background_job_id);
    if (cancelled.ok()) {
      background_note = absl::StrFormat(
          "Background job %s (%s): %d trials measured (%d failed) by the end of the run.\n",
          background_job_id, BaseName(background_path), cancelled->trials_done(),
          cancelled->trials_failed());
    } else {
      std::cerr << "load_gen: cancelling the background job: " << cancelled.status() << "\n";
    }
  }

  LoadStats total;
  for (const auto& client : load_clients) total.Merge(client->stats());
  // Every call counted was started inside the window; the last ones finish after it.
  const double window = static_cast<double>(*seconds);
  std::vector<RpcSummary> rows = Summarize(total, window);
  std::cout << absl::StrFormat(
      "%d clients (%d connected), calls started in a %.0f s window (%.1f s until the last "
      "ended), mix %s, model %s (budget %d), watch <= %d s, think %d ms\n\n",
      client_count, client_count - unconnected, window, elapsed, config.mix.ToString(),
      config.model_name, config.budget, config.watch_seconds, config.think_ms);
  std::cout << FormatTable(rows);
  std::cout << absl::StrFormat(
      "\nWatchJob streams: %d reached a terminal state, %d followed until the client's %d s "
      "cutoff, %d updates received. Latency of WatchJob: until its first update.\n",
      total.watch_terminal(), total.watch_cut(), config.watch_seconds, total.watch_updates());
  std::cout << background_note;
  if (total.TotalErrors() > 0) {
    std::cout << "\nFirst error message of each kind:\n" << FormatFirstErrors(total);
  }
  if (args.Has("json")) {
    std::string settings = absl::StrFormat(
        "{\"server\": \"%s\", \"clients\": %d, \"connected\": %d, \"seconds\": %d, \"mix\": "
        "\"%s\", \"model\": \"%s\", \"budget\": %d, \"watch_seconds\": %d, \"think_ms\": %d, "
        "\"background_model\": \"%s\"}",
        config.address, client_count, client_count - unconnected, *seconds, config.mix.ToString(),
        config.model_name, config.budget, config.watch_seconds, config.think_ms,
        BaseName(background_path));
    std::ofstream json(args.Get("json"));
    json << FormatJson(rows, total, window, settings);
    if (!json) {
      std::cerr << "load_gen: cannot write '" << args.Get("json") << "'\n";
      return kExitErrors;
    }
  }
  if (unconnected > 0) std::cerr << "load_gen: " << unconnected << " clients never connected\n";
  return total.TotalErrors() > 0 || unconnected > 0 ? kExitErrors : kExitOk;
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) {
  gtco::util::FlagSpec spec{
      {"server", "clients", "seconds", "mix", "model", "token", "json", "budget", "watch-seconds",
       "think-ms", "timeout", "warmup-budget", "background-model", "background-budget", "target"},
      {"help"}};
  auto args = gtco::util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok()) return gtco::bench::Usage(std::string(args.status().message()));
  if (args->Has("help")) {
    std::cout << gtco::bench::kUsage;
    return 0;
  }
  if (!args->positional().empty()) return gtco::bench::Usage("unexpected argument");
  return gtco::bench::Run(*args);
}
