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

}  // namespace
}  // namespace gtco::server
