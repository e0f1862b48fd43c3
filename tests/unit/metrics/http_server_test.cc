// Tests of the /metrics HTTP endpoint over a loopback socket.
#include "common/metrics/http_server.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/metrics/registry.h"
#include "tests/unit/metrics/http_get.h"

namespace gtco::metrics {
namespace {

using ::gtco::metrics::testing::HttpRequest;
using ::gtco::metrics::testing::HttpResponse;

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("gtco_test_total", "A test counter.").Add({{"kind", "a\"b"}}).Increment(7);
    ASSERT_TRUE(server_.Start("127.0.0.1", 0).ok());
    ASSERT_GT(server_.port(), 0);
  }

  Registry registry_;
  MetricsHttpServer server_{&registry_};
};

TEST_F(MetricsHttpServerTest, ServesRegistryTextWithContentType) {
  const HttpResponse response = HttpRequest(server_.port(), "/metrics");
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.body, registry_.Serialize());
  EXPECT_NE(response.body.find("gtco_test_total{kind=\"a\\\"b\"} 7\n"), std::string::npos);
  EXPECT_EQ(response.headers.at("content-length"), std::to_string(response.body.size()));
}

TEST_F(MetricsHttpServerTest, ReflectsUpdatesBetweenScrapes) {
  registry_.AddCounter("gtco_test_total", "").Add({{"kind", "a\"b"}}).Increment(1);
  EXPECT_NE(HttpRequest(server_.port(), "/metrics").body.find("} 8\n"), std::string::npos);
}

TEST_F(MetricsHttpServerTest, HeadHasNoBodyOtherPathsAndMethodsFail) {
  const HttpResponse head = HttpRequest(server_.port(), "/metrics", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(HttpRequest(server_.port(), "/").status, 404);
  EXPECT_EQ(HttpRequest(server_.port(), "/metricsx").status, 404);
  EXPECT_EQ(HttpRequest(server_.port(), "/metrics", "POST").status, 405);
}

TEST_F(MetricsHttpServerTest, PortInUseIsAClearError) {
  MetricsHttpServer second(&registry_);
  const absl::Status status = second.Start("127.0.0.1", server_.port());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find(absl::StrCat("127.0.0.1:", server_.port())), std::string::npos)
      << status;
  EXPECT_FALSE(second.running());
}

TEST_F(MetricsHttpServerTest, StartTwiceAndBadPortAreErrors) {
  EXPECT_EQ(server_.Start("127.0.0.1", 0).code(), absl::StatusCode::kFailedPrecondition);
  MetricsHttpServer other(&registry_);
  EXPECT_EQ(other.Start("127.0.0.1", 70000).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MetricsHttpServerTest, StopClosesThePortAndRestartWorks) {
  const int old_port = server_.port();
  server_.Stop();
  EXPECT_FALSE(server_.running());
  EXPECT_EQ(server_.port(), 0);
  EXPECT_EQ(HttpRequest(old_port, "/metrics").status, 0);
  ASSERT_TRUE(server_.Start("127.0.0.1", 0).ok());
  EXPECT_EQ(HttpRequest(server_.port(), "/metrics").status, 200);
}

TEST(MetricsHttpServerCallbackTest, BeforeScrapeRefreshesValues) {
  Registry registry;
  Gauge& gauge = registry.AddGauge("gtco_refreshed", "Set at scrape time.").Add({});
  int scrapes = 0;
  MetricsHttpServer server(&registry);
  server.set_before_scrape([&] { gauge.Set(++scrapes * 10); });
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  EXPECT_NE(HttpRequest(server.port(), "/metrics").body.find("gtco_refreshed 10\n"),
            std::string::npos);
  EXPECT_NE(HttpRequest(server.port(), "/metrics").body.find("gtco_refreshed 20\n"),
            std::string::npos);
}

}  // namespace
}  // namespace gtco::metrics
