// Integration: a real Prometheus scrapes our /metrics endpoint and parses it without errors.
// Skips when /usr/bin/prometheus is not installed (Debian package `prometheus`).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/metrics/http_server.h"
#include "tests/unit/metrics/http_get.h"

namespace gtco::metrics {
namespace {

constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";
constexpr auto kReadyDeadline = std::chrono::seconds(90);

using ::gtco::metrics::testing::HttpRequest;

// A port that was free a moment ago (bound to port 0, then released).
int PickFreePort() {
  const int socket_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(socket_fd);
    return 0;
  }
  close(socket_fd);
  return ntohs(address.sin_port);
}

// Runs prometheus in its own directory and stops it (SIGTERM, then SIGKILL) on destruction.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::filesystem::path& directory, int scrape_port)
      : directory_(directory), web_port_(PickFreePort()) {
    std::ofstream(directory_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: gtco\n    scrape_interval: 1s\n"
        << "    static_configs:\n      - targets: ['127.0.0.1:" << scrape_port << "']\n";
    const std::string config_flag = "--config.file=" + (directory_ / "prometheus.yml").string();
    const std::string storage_flag = "--storage.tsdb.path=" + (directory_ / "data").string();
    const std::string listen_flag = absl::StrCat("--web.listen-address=127.0.0.1:", web_port_);
    const std::string log_path = (directory_ / "prometheus.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      FILE* log = freopen(log_path.c_str(), "w", stdout);
      if (log != nullptr) dup2(fileno(stdout), STDERR_FILENO);
      execl(kPrometheusBinary, kPrometheusBinary, config_flag.c_str(), storage_flag.c_str(),
            listen_flag.c_str(), "--log.level=warn", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~PrometheusProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  int web_port() const { return web_port_; }
  bool started() const { return pid_ > 0 && web_port_ > 0; }
  std::string Log() const {
    std::ifstream log(directory_ / "prometheus.log");
    return std::string(std::istreambuf_iterator<char>(log), {});
  }
  /// Body of an API GET, "" when prometheus is not answering yet.
  std::string ApiGet(const std::string& path_and_query) const {
    testing::HttpResponse response = HttpRequest(web_port_, path_and_query);
    return response.status == 200 ? response.body : "";
  }

 private:
  std::filesystem::path directory_;
  int web_port_;
  pid_t pid_ = -1;
};

// Polls `probe` every 250 ms until it returns true or the deadline passes.
template <typename Probe>
bool WaitFor(Probe probe) {
  const auto deadline = std::chrono::steady_clock::now() + kReadyDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

TEST(PrometheusIntegrationTest, RealPrometheusScrapesWithoutErrors) {
  ASSERT_EQ(access(kPrometheusBinary, X_OK), 0)
      << kPrometheusBinary << " not installed: run scripts/setup.sh --tests (or apt-get install "
      << "prometheus)";
  std::string directory_template = ::testing::TempDir() + "gtco_prometheus_XXXXXX";
  ASSERT_NE(mkdtemp(directory_template.data()), nullptr);
  const std::filesystem::path directory(directory_template);

  Registry registry;
  registry.AddCounter("gtco_itest_trials_total", "Trials \"measured\" in the test.")
      .Add({{"target", "cpu"}, {"path", "C:\\x \"y\"\nz"}})
      .Increment(42);
  registry.AddGauge("gtco_itest_ratio", "A fraction.").Add({}).Set(0.125);
  Histogram& histogram =
      registry.AddHistogram("gtco_itest_seconds", "Latencies.", {0.001, 0.1}).Add({{"t", "a"}});
  histogram.Observe(0.05);
  histogram.Observe(7);
  MetricsHttpServer server(&registry);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  {
    PrometheusProcess prometheus(directory, server.port());
    ASSERT_TRUE(prometheus.started());

    const bool scraped = WaitFor([&] {
      return prometheus.ApiGet("/api/v1/query?query=gtco_itest_trials_total").find("\"42\"]") !=
             std::string::npos;
    });
    ASSERT_TRUE(scraped) << "prometheus never returned our value; its log:\n" << prometheus.Log();

    const std::string series = prometheus.ApiGet("/api/v1/query?query=gtco_itest_trials_total");
    // The escaped label value arrives intact (JSON-escaped in the API answer).
    EXPECT_NE(series.find(R"("path":"C:\\x \"y\"\nz")"), std::string::npos) << series;
    EXPECT_NE(prometheus.ApiGet("/api/v1/query?query=gtco_itest_ratio").find("\"0.125\"]"),
              std::string::npos);
    EXPECT_NE(prometheus.ApiGet("/api/v1/query?query=gtco_itest_seconds_bucket%7Ble%3D%220.1%22%7D")
                  .find("\"1\"]"),
              std::string::npos);
    EXPECT_NE(prometheus.ApiGet("/api/v1/query?query=up").find("\"1\"]"), std::string::npos);
    // Every sample we exposed was ingested: 1 counter + 1 gauge + 3 buckets, sum, count.
    EXPECT_NE(prometheus.ApiGet("/api/v1/query?query=scrape_samples_scraped").find("\"7\"]"),
              std::string::npos);
    const std::string targets = prometheus.ApiGet("/api/v1/targets?state=active");
    EXPECT_NE(targets.find("\"health\":\"up\""), std::string::npos) << targets;
    EXPECT_NE(targets.find("\"lastError\":\"\""), std::string::npos) << targets;
  }
  server.Stop();
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
}

}  // namespace
}  // namespace gtco::metrics
