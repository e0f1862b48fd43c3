// Regression tests for FarmCore bugs found by fuzzing (tests/fuzz/fuzz_rpc_requests) or review,
// on an in-memory or temporary database.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/db/database.h"
#include "common/ir/workload.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/schedule/trace.h"
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

/// A CPU worker's hello; `replays_traces`: it registers the "trace" language.
WorkerHello CpuWorker(const std::string& worker_id, bool replays_traces = true) {
  WorkerHello hello;
  hello.worker_id = worker_id;
  hello.hardware.target = target::Target::kCpu;
  hello.hardware.cores = 1;
  if (replays_traces) hello.languages = {"trace"};
  return hello;
}

JobSpec Header(int64_t budget) {
  JobSpec spec;
  spec.target = target::Target::kCpu;
  spec.budget = budget;
  return spec;
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
  for (const TaskInfo& task : largest->tasks) allotted += task.trials_allotted;
  // Each task's share is rounded on its own.
  EXPECT_LE(std::llabs(allotted - (int64_t{1} << 40)), static_cast<int64_t>(largest->tasks.size()));
}

// A worker that reported NaN timings made the database refuse the measurement, so the Report
// failed and the candidate was measured again forever; such a result is now a failed trial.
TEST(FarmCoreRegressionTest, NonFiniteTimingsAreAFailedTrial) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto job = core->Submit(Header(4), ReadModel("mlp.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(core->Register(CpuWorker("nan-worker", /*replays_traces=*/false)).ok());
  auto leased = core->Lease("nan-worker", /*max_candidates=*/1, /*wait_ms=*/0);
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_EQ(leased->size(), 1u);
  TrialResult result;
  result.candidate_id = leased->front().candidate_id;
  result.ok = true;
  result.verified = true;
  result.median_seconds = std::numeric_limits<double>::quiet_NaN();
  result.min_seconds = 1e-6;
  auto reply = core->Report("nan-worker", {result});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->stored, 1);
  auto status = core->GetJob(job->job_id);
  ASSERT_TRUE(status.ok()) << status.status();
  int64_t done = 0, failed = 0;
  for (const TaskInfo& task : status->tasks) {
    done += task.trials_done;
    failed += task.trials_failed;
  }
  EXPECT_EQ(done, 1);
  EXPECT_EQ(failed, 1);
}

// A CPU worker that replays traces gets candidates without a program (the server skips the
// LLVM emission) that it can build itself; a worker that does not, gets bitcode, also when the
// candidate was prepared for the other kind.
TEST(FarmCoreRegressionTest, TraceReplayingWorkersGetTracesOthersGetPrograms) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  ASSERT_TRUE(core->Submit(Header(64), ReadModel("mlp.onnx")).ok());
  const WorkerHello replaying = CpuWorker("replaying");
  const WorkerHello older = CpuWorker("older", /*replays_traces=*/false);
  ASSERT_TRUE(core->Register(replaying).ok());

  auto traces = core->Lease("replaying", 2, /*wait_ms=*/1000);
  ASSERT_TRUE(traces.ok()) << traces.status();
  ASSERT_FALSE(traces->empty());
  for (const LeasedCandidate& candidate : *traces) {
    EXPECT_EQ(candidate.language, "trace");
    EXPECT_TRUE(candidate.program.empty());
    EXPECT_FALSE(candidate.program_hash.empty());
    auto workload = ir::ParseWorkload(candidate.workload);
    auto trace = schedule::Trace::Parse(candidate.trace);
    ASSERT_TRUE(workload.ok() && trace.ok());
    auto program = kernels::BuildCode(*workload, *trace, target::Target::kCpu, candidate.entry);
    ASSERT_TRUE(program.ok()) << program.status();
    EXPECT_EQ(program->language, "llvm-bc");
    EXPECT_FALSE(program->code.empty());
  }
  // Candidates the preparer already made as traces are lowered for the older worker.
  ASSERT_TRUE(core->Register(older).ok());
  for (int lease = 0; lease < 3; ++lease) {
    auto programs = core->Lease("older", 2, /*wait_ms=*/1000);
    ASSERT_TRUE(programs.ok()) << programs.status();
    for (const LeasedCandidate& candidate : *programs) {
      EXPECT_EQ(candidate.language, "llvm-bc");
      EXPECT_FALSE(candidate.program.empty());
    }
  }
  core->Shutdown();
}

// Transfer within a job: a task's new best schedule is proposed, moved to its nearest values,
// to the job's other tasks of the same sketch (a transformer block's matmuls), ahead of their own
// picks.
TEST(FarmCoreRegressionTest, ANewBestScheduleIsTriedByTheJobsOtherTasks) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  ASSERT_TRUE(core->Submit(Header(400), ReadModel("transformer_block.onnx")).ok());
  // An AVX-512 host: the register-blocked sketch, whose spaces are large enough to differ.
  WorkerHello worker = CpuWorker("transfer");
  worker.hardware.cpu_features = {"avx2", "avx512f", "fma"};
  ASSERT_TRUE(core->Register(worker).ok());
  std::map<std::string, std::vector<schedule::SearchSpace>> spaces;  // task id -> its spaces
  std::set<std::string> leased;                                       // traces per task
  std::vector<LeasedCandidate> unreported;
  auto lease = [&]() {
    auto candidates = core->Lease("transfer", 4, /*wait_ms=*/1000);
    ASSERT_TRUE(candidates.ok()) << candidates.status();
    for (const LeasedCandidate& candidate : *candidates) {
      leased.insert(candidate.task_id + " " + candidate.trace);
      if (spaces.count(candidate.task_id) == 0) {
        auto workload = ir::ParseWorkload(candidate.workload);
        ASSERT_TRUE(workload.ok()) << workload.status();
        auto created = kernels::CreateMappingSpaces(*workload, worker.hardware);
        ASSERT_TRUE(created.ok()) << created.status();
        spaces[candidate.task_id] = *std::move(created);
      }
      unreported.push_back(candidate);
    }
  };
  auto report = [&](const LeasedCandidate& candidate, double seconds, bool ok = true) {
    TrialResult result;
    result.candidate_id = candidate.candidate_id;
    result.ok = result.verified = ok;
    if (!ok) result.error = "failed on purpose";
    result.median_seconds = result.min_seconds = result.max_seconds = seconds;
    ASSERT_TRUE(core->Report("transfer", {result}).ok());
  };
  // The nearest schedule of `trace` in `task_id`'s spaces, when there is one not leased yet.
  auto nearest = [&](const std::string& task_id, const std::string& trace_text) {
    auto trace = schedule::Trace::Parse(trace_text);
    for (const schedule::SearchSpace& space : spaces[task_id]) {
      std::optional<schedule::Trace> near = space.Nearest(*trace);
      if (near && leased.count(task_id + " " + near->ToString()) == 0) {
        return std::optional<std::string>(near->ToString());
      }
    }
    return std::optional<std::string>();
  };
  // A leased candidate whose nearest schedule in another task (seen leased) is new.
  std::optional<LeasedCandidate> best;
  std::string sibling, expected;
  for (int round = 0; round < 40 && !best; ++round) {
    lease();
    for (const LeasedCandidate& candidate : unreported) {
      for (const auto& [task_id, task_spaces] : spaces) {
        if (task_id == candidate.task_id || best) continue;
        if (auto near = nearest(task_id, candidate.trace)) {
          best = candidate;
          sibling = task_id;
          expected = *near;
        }
      }
    }
    if (best) break;
    // Measured slow, so the scheduler moves on to the job's other tasks (it leases a task's
    // next round once its last one is in).
    for (const LeasedCandidate& candidate : unreported) report(candidate, 1e-3);
    unreported.clear();
  }
  ASSERT_TRUE(best.has_value());
  // Every other candidate measured slow first, then the best one fast: a new best of its task.
  for (const LeasedCandidate& candidate : unreported) {
    if (candidate.candidate_id != best->candidate_id) report(candidate, 1e-3);
  }
  report(*best, 1e-6);
  unreported.clear();
  bool tried = false;
  // The sibling's next proposal under that sketch (the scheduler picks the mapping) is that
  // schedule: among its first six of that sketch leased after the report (those the sibling's
  // search proposed before it, lowered ahead into the ready queue, come first).
  const std::string sketch = expected.substr(0, expected.find(';'));
  int sibling_leased = 0;
  for (int round = 0; round < 40 && !tried && sibling_leased < 6; ++round) {
    lease();
    for (const LeasedCandidate& candidate : unreported) {
      const bool same_sketch = candidate.trace.rfind(sketch + ";", 0) == 0;
      if (candidate.task_id == sibling && same_sketch && sibling_leased++ < 6) {
        tried |= candidate.trace == expected;
      }
      // The other tasks' trials fail: a first result of theirs would be a new best, suggested
      // to the sibling ahead of the one under test.
      report(candidate, 1e-3, /*ok=*/candidate.task_id == sibling);
    }
    unreported.clear();
  }
  EXPECT_TRUE(tried) << "task " << sibling << " never tried " << expected << " (the nearest of "
                     << best->trace << ")";
  core->Shutdown();
}

// Re-planning is part of the search: once a plan alternative is measured far behind the one
// chosen (here the transformer block's unfused attention, its matmul-softmax-matmul chain 1 ms a
// workload against 1 us for everything else), its own tasks stop drawing trials after their
// warm-up; the budget goes to the chosen plan's tasks. (Weighed by occurrences alone, those slow
// tasks took most of the budget: the gradient scheduler's expected gain grows with their best.)
TEST(FarmCoreRegressionTest, AnAlternativeFarBehindStopsDrawingTrials) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto job = core->Submit(Header(240), ReadModel("transformer_block.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->plan.size(), 1u);
  ASSERT_EQ(job->plan[0].alternatives.size(), 2u);
  std::set<std::string> fused, unfused_only;
  for (const auto& [task_id, count] : job->plan[0].alternatives[0].tasks) fused.insert(task_id);
  for (const auto& [task_id, count] : job->plan[0].alternatives[1].tasks) {
    if (fused.count(task_id) == 0) unfused_only.insert(task_id);
  }
  ASSERT_FALSE(unfused_only.empty());
  WorkerHello worker = CpuWorker("replan");
  worker.hardware.cpu_features = {"avx2", "avx512f", "fma"};
  ASSERT_TRUE(core->Register(worker).ok());
  for (int round = 0; round < 400; ++round) {
    auto candidates = core->Lease("replan", 4, /*wait_ms=*/200);
    ASSERT_TRUE(candidates.ok()) << candidates.status();
    if (candidates->empty()) break;
    std::vector<TrialResult> results;
    for (const LeasedCandidate& candidate : *candidates) {
      TrialResult result;
      result.candidate_id = candidate.candidate_id;
      result.ok = result.verified = true;
      result.median_seconds = result.min_seconds = result.max_seconds =
          unfused_only.count(candidate.task_id) ? 1e-3 : 1e-6;
      results.push_back(result);
    }
    ASSERT_TRUE(core->Report("replan", results).ok());
  }
  auto status = core->GetJob(job->job_id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->trials_done, 240);
  ASSERT_EQ(status->plan.size(), 1u);
  EXPECT_TRUE(status->plan[0].alternatives[0].chosen);
  EXPECT_FALSE(status->plan[0].alternatives[1].chosen);
  EXPECT_FALSE(status->plan[0].alternatives[0].left_behind);
  EXPECT_TRUE(status->plan[0].alternatives[1].left_behind);
  int64_t slow_trials = 0;
  for (const TaskInfo& task : status->tasks) {
    if (unfused_only.count(task.task_id) == 0) continue;
    // Its warm-up (8 trials), and at most the round in flight when the plan was decided.
    EXPECT_LE(task.trials_done, 8 + 4) << task.task_id;
    EXPECT_EQ(task.runs, 0) << task.task_id;
    slow_trials += task.trials_done;
  }
  EXPECT_LE(slow_trials, static_cast<int64_t>(unfused_only.size()) * 12);
  core->Shutdown();
}

// Candidates are lowered ahead into a ready queue; those of a job cancelled while they wait
// are never leased, and a worker that reports while others lease is served by each concept
// without waiting for the search: every result is stored once and the budget is kept.
// A worker whose caches admit none of a mapping's schedules (a 64-byte L1 as it describes its
// hardware: no FMA tile's panels fit, even the MLP's smallest) still gets the job's matmuls to measure, under the mappings that remain; `status
// --explain` says why the register-blocked mapping is out.
TEST(FarmCoreRegressionTest, AMappingWithNoScheduleForTheWorkerIsLeftOutNotTheTask) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto job = core->Submit(Header(32), ReadModel("mlp.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  WorkerHello worker = CpuWorker("tiny-l1");
  worker.hardware.cpu_features = {"avx", "avx2", "fma"};
  worker.hardware.l1d_bytes = 64;
  ASSERT_TRUE(core->Register(worker).ok());
  auto candidates = core->Lease("tiny-l1", 4, /*wait_ms=*/1000);
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_FALSE(candidates->empty());
  for (const LeasedCandidate& candidate : *candidates) {
    EXPECT_EQ(candidate.trace.find("mm_avx2_fma/"), std::string::npos) << candidate.trace;
  }
  auto info = core->GetJob(job->job_id);
  ASSERT_TRUE(info.ok()) << info.status();
  int left_out = 0;
  for (const TaskInfo& task : info->tasks) {
    for (const MappingInfo& mapping : task.mappings) {
      if (mapping.name != "avx2_fma") continue;
      EXPECT_FALSE(mapping.applies);
      EXPECT_NE(mapping.reason.find("no search space"), std::string::npos) << mapping.reason;
      ++left_out;
    }
  }
  EXPECT_GT(left_out, 0);
  core->Shutdown();
}

TEST(FarmCoreRegressionTest, ReadyCandidatesOfACancelledJobAreNotLeased) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto job = core->Submit(Header(64), ReadModel("mlp.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(core->Register(CpuWorker("w")).ok());
  auto first = core->Lease("w", 1, /*wait_ms=*/5000);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  ASSERT_TRUE(core->CancelJob(job->job_id).ok());
  auto after = core->Lease("w", 8, /*wait_ms=*/0);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->empty()) << after->front().candidate_id;
  core->Shutdown();
}

TEST(FarmCoreRegressionTest, ConcurrentWorkersStoreEveryResultOnceWithinTheBudget) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  constexpr int64_t kBudget = 48;
  JobSpec spec = Header(kBudget);
  spec.shapes["input"] = {1, 4, 192};  // spaces far larger than the budget
  auto job = core->Submit(spec, ReadModel("patch_vit.onnx"));
  ASSERT_TRUE(job.ok()) << job.status();
  std::atomic<int64_t> stored{0}, duplicates{0};
  std::vector<std::thread> workers;
  for (int index = 0; index < 4; ++index) {
    workers.emplace_back([&, index] {
      const WorkerHello hello = CpuWorker(absl::StrCat("w", index));
      ASSERT_TRUE(core->Register(hello).ok());
      for (int round = 0; round < 200; ++round) {
        auto leased = core->Lease(hello.worker_id, 2, /*wait_ms=*/2000);
        ASSERT_TRUE(leased.ok()) << leased.status();
        if (leased->empty()) break;
        std::vector<TrialResult> results;
        for (const LeasedCandidate& candidate : *leased) {
          TrialResult result;
          result.candidate_id = candidate.candidate_id;
          result.ok = result.verified = true;
          result.median_seconds = result.min_seconds = result.max_seconds =
              1e-5 * (1 + candidate.trace.size() % 7);
          results.push_back(result);
          results.push_back(result);  // reported twice: stored once
        }
        auto tally = core->Report(hello.worker_id, results);
        ASSERT_TRUE(tally.ok()) << tally.status();
        stored += tally->stored;
        duplicates += tally->duplicates;
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  auto status = core->GetJob(job->job_id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state, db::JobState::kDone);
  // The tasks' spaces (a machine without AVX: the vector mapping only) may run out first.
  EXPECT_GT(status->trials_done, 8) << absl::StrJoin(status->decisions, "\n");
  EXPECT_LE(status->trials_done, kBudget);
  EXPECT_EQ(stored.load(), status->trials_done);
  EXPECT_EQ(duplicates.load(), stored.load());
  core->Shutdown();
}

// A running job whose stored task state is a name no state has (a corrupt row, or one a newer
// server wrote) is not resumed; the server still starts and says so for that job only.
TEST(FarmCoreRegressionTest, ACorruptJobDoesNotStopTheServer) {
  char dir_template[] = "/tmp/gtco_farm_resume_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/farm.db";
  std::string corrupt_job, healthy_job;
  {
    auto database = db::OpenSqliteDatabase(path);
    ASSERT_TRUE(database.ok()) << database.status();
    auto core = FarmCore::Create(std::move(*database), FarmOptions{}, /*metrics=*/nullptr);
    ASSERT_TRUE(core.ok()) << core.status();
    auto first = (*core)->Submit(Header(8), ReadModel("mlp.onnx"));
    auto second = (*core)->Submit(Header(8), ReadModel("matmul_integer.onnx"));
    ASSERT_TRUE(first.ok() && second.ok());
    corrupt_job = first->job_id;
    healthy_job = second->job_id;
    (*core)->Shutdown();
  }
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &handle), SQLITE_OK);
  const std::string sql =
      absl::StrCat("UPDATE tasks SET state = 'paused' WHERE job_id = '", corrupt_job, "'");
  ASSERT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(handle);

  auto database = db::OpenSqliteDatabase(path);
  ASSERT_TRUE(database.ok()) << database.status();
  auto core = FarmCore::Create(std::move(*database), FarmOptions{}, /*metrics=*/nullptr);
  ASSERT_TRUE(core.ok()) << core.status();
  auto healthy = (*core)->GetJob(healthy_job);
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_EQ(healthy->state, db::JobState::kRunning);
  auto corrupt = (*core)->GetJob(corrupt_job);
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss) << corrupt.status();
  EXPECT_NE(corrupt.status().message().find("unknown task state 'paused'"), std::string::npos)
      << corrupt.status();
  (*core)->Shutdown();
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  rmdir(dir_template);
}

}  // namespace
}  // namespace gtco::server
