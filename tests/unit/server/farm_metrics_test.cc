// The farm's metrics as Prometheus serves them: every family the server exports, with samples,
// passes `promtool check metrics` (names, types, units and help by Prometheus' conventions).
#include "server/farm_metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/metrics/registry.h"

namespace gtco::server {
namespace {

/// Runs `command` with `input` on stdin; returns its exit status and stdout + stderr.
int RunWithInput(const std::string& command, const std::string& input, std::string* output) {
  char path[] = "/tmp/gtco_metrics_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return -1;
  FILE* file = fdopen(fd, "w");
  fwrite(input.data(), 1, input.size(), file);
  fclose(file);
  FILE* pipe = popen((command + " < " + path + " 2>&1").c_str(), "r");
  char buffer[4096];
  size_t read = 0;
  while (pipe != nullptr && (read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output->append(buffer, read);
  }
  const int status = pipe == nullptr ? -1 : pclose(pipe);
  std::remove(path);
  return status;
}

TEST(FarmMetricsTest, EveryFamilyPassesPromtool) {
  // Software, not hardware: its absence fails (scripts/setup.sh --tests installs prometheus).
  ASSERT_EQ(std::system("command -v promtool > /dev/null 2>&1"), 0)
      << "promtool is not installed (Debian package prometheus)";
  metrics::Registry registry;
  FarmMetrics farm(registry);
  farm.SetJobsByState({{db::JobState::kRunning, 2}});
  farm.CountTrial(target::Target::kCpu, "ok");
  farm.CountTrial(target::Target::kCuda, "timeout");
  farm.CountRejectedResult("duplicate");
  farm.SetQueueDepth(target::Target::kCpu, 12);
  farm.SetConnectedWorkers(target::Target::kCpu, 3);
  farm.ObserveMeasurementSeconds(target::Target::kCpu, 0.2);
  farm.ObserveDatabaseStatement(0.0004, absl::StatusCode::kOk);
  farm.ObserveDatabaseStatement(0.002, absl::StatusCode::kUnavailable);
  farm.CountLeasesGranted(target::Target::kCpu, 4);
  farm.CountLeaseExpired(target::Target::kCpu);
  farm.SetLeasesOutstanding(target::Target::kCpu, 5);
  farm.CountTeamTrial("vision");
  farm.SetWorkerInfo("w1", "host-a", target::Target::kCpu, "x86-64 avx2 (2 cores)");
  const std::string text = registry.Serialize();
  for (const char* sample :
       {"gtco_trials_total{outcome=\"ok\",target=\"cpu\"} 1", "gtco_leases_granted_total",
        "gtco_leases_expired_total", "gtco_team_trials_total{team=\"vision\"} 1",
        "gtco_worker_info{", "gtco_database_errors_total{code=\"UNAVAILABLE\"} 1",
        "gtco_measurement_seconds_bucket"}) {
    EXPECT_NE(text.find(sample), std::string::npos) << sample << "\n" << text;
  }
  std::string output;
  const int status = RunWithInput("promtool check metrics", text, &output);
  EXPECT_EQ(status, 0) << output << "\n" << text;
  EXPECT_EQ(output.find("problem"), std::string::npos) << output;
}

}  // namespace
}  // namespace gtco::server
