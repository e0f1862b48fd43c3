// The farm's lease queue and worker registry as their own concepts: candidates in and out by
// hardware class, withdrawn tasks dropped, waits bounded, the preparer's passes awaited; workers found,
// touched, counted alive and refused when unknown.
#include "server/lease_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "common/db/database.h"
#include "server/worker_registry.h"

namespace gtco::server {
namespace {

using std::chrono::milliseconds;

const std::string kAvx512 = "cpu: EPYC (2 cores avx512f avx2 fma)";
const std::string kAvx2 = "cpu: EPYC (2 cores avx2 fma)";
const std::string kGpu = "cuda: H100 (sm_90, 132 SMs, 227 KiB shared/block, 50 MiB L2)";

std::shared_ptr<TaskBuild> Build(const std::string& hardware_class) {
  auto build = std::make_shared<TaskBuild>();
  build->hardware_class = hardware_class;
  return build;
}

ReadyCandidate Ready(const std::shared_ptr<TaskBuild>& task, const std::string& id) {
  ReadyCandidate ready;
  ready.task = task;
  ready.candidate.candidate_id = id;
  return ready;
}

TEST(LeaseQueueTest, PopsByHardwareClassInOrderAndDropsWithdrawnTasks) {
  LeaseQueue queue;
  auto live = Build(kAvx512);
  auto cancelled = Build(kAvx512);
  queue.Push(Ready(live, "a"));
  queue.Push(Ready(cancelled, "b"));
  queue.Push(Ready(live, "c"));
  queue.Push(Ready(Build(kGpu), "g"));
  queue.Push(Ready(Build(kAvx2), "v"));
  cancelled->withdrawn = true;
  EXPECT_EQ(queue.Size(kAvx512), 3u);
  std::vector<ReadyCandidate> taken = queue.Pop(kAvx512, 5, LeaseQueue::Clock::now());
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].candidate.candidate_id, "a");
  EXPECT_EQ(taken[1].candidate.candidate_id, "c");
  EXPECT_EQ(queue.Size(kGpu), 1u);
  // An AVX2 worker gets only what was made for its class.
  std::vector<ReadyCandidate> avx2 = queue.Pop(kAvx2, 5, LeaseQueue::Clock::now());
  ASSERT_EQ(avx2.size(), 1u);
  EXPECT_EQ(avx2[0].candidate.candidate_id, "v");

  // What a Lease could not hand out goes back to the front, in order.
  queue.Push(Ready(live, "d"));
  queue.Requeue(kAvx512, std::move(taken));
  taken = queue.Pop(kAvx512, 2, LeaseQueue::Clock::now());
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].candidate.candidate_id, "a");
  EXPECT_EQ(taken[1].candidate.candidate_id, "c");
}

TEST(LeaseQueueTest, AWaitingPopWakesOnPushAndTimesOut) {
  LeaseQueue queue;
  auto task = Build(kAvx512);
  const auto start = LeaseQueue::Clock::now();
  EXPECT_TRUE(queue.Pop(kAvx512, 1, start + milliseconds(50)).empty());
  EXPECT_GE(LeaseQueue::Clock::now() - start, milliseconds(50));

  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(30));
    queue.Push(Ready(task, "late"));
  });
  std::vector<ReadyCandidate> taken =
      queue.Pop(kAvx512, 1, LeaseQueue::Clock::now() + std::chrono::seconds(10));
  producer.join();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].candidate.candidate_id, "late");

  queue.Shutdown();
  const auto before = LeaseQueue::Clock::now();
  EXPECT_TRUE(queue.Pop(kAvx512, 1, before + std::chrono::seconds(10)).empty());
  EXPECT_LT(LeaseQueue::Clock::now() - before, std::chrono::seconds(5));
}

TEST(LeaseQueueTest, AwaitPassWaitsForAPassThatStartedAfterTheCall) {
  LeaseQueue queue;
  std::atomic<int> passes{0};
  std::atomic<bool> stop{false};
  std::thread preparer([&] {
    while (!stop) {
      queue.WaitForDemand(milliseconds(20));  // the pass starts here
      std::this_thread::sleep_for(milliseconds(5));
      ++passes;
      queue.PassDone();
    }
  });
  const int before = passes.load();
  queue.AwaitPass(kAvx512, LeaseQueue::Clock::now() + std::chrono::seconds(10));
  // The pass running at the call may have started before it: one more must have ended.
  EXPECT_GE(passes.load(), before + 1);
  stop = true;
  queue.Shutdown();
  preparer.join();
}

TEST(LeaseQueueTest, LeaseTimesAreTakenOnce) {
  LeaseQueue queue;
  queue.MarkLeased("c1", target::Target::kCpu, 1000);
  queue.MarkLeased("c2", target::Target::kCpu, 1001);
  queue.MarkLeased("g1", target::Target::kCuda, 1002);
  EXPECT_EQ(queue.Outstanding(target::Target::kCpu), 2u);
  EXPECT_EQ(queue.TakeLeasedAt("c1"), 1000);
  EXPECT_EQ(queue.Outstanding(target::Target::kCpu), 1u);
  EXPECT_EQ(queue.Outstanding(target::Target::kCuda), 1u);
  EXPECT_EQ(queue.TakeLeasedAt("c1"), std::nullopt);
  EXPECT_EQ(queue.TakeLeasedAt("never"), std::nullopt);
}

TEST(WorkerRegistryTest, RegistersTouchesAndCountsLiveWorkers) {
  auto database = db::OpenSqliteDatabase(":memory:");
  ASSERT_TRUE(database.ok()) << database.status();
  WorkerRegistry registry(database->get(), /*heartbeat_seconds=*/5);
  WorkerHello cpu;
  cpu.hardware.target = target::Target::kCpu;
  cpu.languages = {"trace"};
  ASSERT_TRUE(registry.Register(cpu, "w1", 1'000).ok());
  ASSERT_TRUE(registry.Register(cpu, "w2", 2'000).ok());
  WorkerHello gpu;
  gpu.hardware.target = target::Target::kCuda;
  gpu.languages = {"trace"};  // only CPU workers replay traces
  auto cuda = registry.Register(gpu, "g1", 2'000);
  ASSERT_TRUE(cuda.ok());
  EXPECT_FALSE((*cuda)->replays_traces);

  // An AVX2-only host: same target, another hardware class.
  WorkerHello avx2 = cpu;
  avx2.hardware.cpu_features = {"avx2", "fma"};
  ASSERT_TRUE(registry.Register(avx2, "w3", 2'500).ok());
  const std::string cpu_class = HardwareClassOf(cpu.hardware);
  const std::string avx2_class = HardwareClassOf(avx2.hardware);
  EXPECT_NE(cpu_class, avx2_class);
  EXPECT_EQ(avx2_class, HardwareClassOf(target::Target::kCpu, avx2.hardware.Summary()));

  EXPECT_EQ(registry.Alive(target::Target::kCpu, 3'000), 3u);
  EXPECT_EQ(registry.AliveInClass(cpu_class, 3'000), 2u);
  EXPECT_EQ(registry.AliveInClass(avx2_class, 3'000), 1u);
  EXPECT_EQ(registry.Reference(cpu_class, 3'000)->row.worker_id, "w2");
  EXPECT_EQ(registry.Reference(avx2_class, 3'000)->row.worker_id, "w3");
  auto touched = registry.Touch("w1", 4'000);
  ASSERT_TRUE(touched.ok());
  EXPECT_TRUE((*touched)->replays_traces);
  EXPECT_EQ((*touched)->hardware_class, cpu_class);
  EXPECT_EQ(registry.Reference(cpu_class, 4'000)->row.worker_id, "w1");
  // Three heartbeats without a word: no longer alive.
  EXPECT_EQ(registry.Alive(target::Target::kCpu, 4'000 + 15'000), 0u);
  EXPECT_EQ(registry.Reference(cpu_class, 4'000 + 15'000), nullptr);
  EXPECT_EQ(registry.Classes().size(), 3u);

  auto unknown = registry.Touch("ghost", 5'000);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(unknown.status().message()).find("register"), std::string::npos);
}

}  // namespace
}  // namespace gtco::server
