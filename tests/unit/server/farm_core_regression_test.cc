// Regression tests for FarmCore bugs found by fuzzing (tests/fuzz/fuzz_rpc_requests), on an
// in-memory database.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

#include "common/db/database.h"
#include "server/farm_core.h"

namespace gtco::server {
namespace {

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::unique_ptr<FarmCore> MemoryFarm() {
  auto database = db::OpenSqliteDatabase(":memory:");
  EXPECT_TRUE(database.ok()) << database.status();
  FarmOptions options;
  options.seed = 1;
  auto core = FarmCore::Create(std::move(*database), options, /*metrics=*/nullptr);
  EXPECT_TRUE(core.ok()) << core.status();
  return std::move(*core);
}

gtco::v1::SubmitHeader Header(int64_t budget) {
  gtco::v1::SubmitHeader header;
  header.set_target("cpu");
  header.set_budget(budget);
  return header;
}

// A budget near INT64_MAX overflowed int64 while it was split over the tasks (undefined
// behaviour in SplitBudget); such budgets are now rejected up front.
TEST(FarmCoreRegressionTest, HugeBudgetsAreRejectedNotOverflowed) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  const std::string model = ReadModel("mlp.onnx");
  ASSERT_FALSE(model.empty());
  auto huge = core->Submit(Header(std::numeric_limits<int64_t>::max()), model);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(huge.status().message()).find("at most"), std::string::npos)
      << huge.status();

  auto largest = core->Submit(Header(int64_t{1} << 40), model);
  ASSERT_TRUE(largest.ok()) << largest.status();
  int64_t allotted = 0;
  for (const auto& task : largest->tasks()) allotted += task.trials_allotted();
  // Each task's share is rounded on its own.
  EXPECT_LE(std::llabs(allotted - (int64_t{1} << 40)), largest->tasks_size());
}

// A worker that reported NaN timings made the database refuse the measurement, so the Report
// failed and the candidate was measured again forever; such a result is now a failed trial.
TEST(FarmCoreRegressionTest, NonFiniteTimingsAreAFailedTrial) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto job = core->Submit(Header(4), ReadModel("mlp.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  gtco::v1::RegisterRequest registration;
  registration.set_worker_id("nan-worker");
  registration.mutable_hardware()->set_target("cpu");
  registration.mutable_hardware()->set_cores(1);
  ASSERT_TRUE(core->Register(registration).ok());
  gtco::v1::LeaseRequest lease;
  lease.set_worker_id("nan-worker");
  lease.set_max_candidates(1);
  auto leased = core->Lease(lease);
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_EQ(leased->candidates_size(), 1);
  gtco::v1::ReportRequest report;
  report.set_worker_id("nan-worker");
  gtco::v1::MeasureResult& result = *report.add_results();
  result.set_candidate_id(leased->candidates(0).candidate_id());
  result.set_ok(true);
  result.set_verified(true);
  result.set_median_seconds(std::numeric_limits<double>::quiet_NaN());
  result.set_min_seconds(1e-6);
  auto reply = core->Report(report);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->stored(), 1);
  auto status = core->GetJob(job->job_id());
  ASSERT_TRUE(status.ok()) << status.status();
  int64_t done = 0, failed = 0;
  for (const auto& task : status->tasks()) {
    done += task.trials_done();
    failed += task.trials_failed();
  }
  EXPECT_EQ(done, 1);
  EXPECT_EQ(failed, 1);
}

}  // namespace
}  // namespace gtco::server
