// A small spin-then-sleep thread pool behind gtco_parallel_for, with dynamic claiming of
// chunks of iterations so a thread slowed by a busy core does not hold the loop back.
#include "runtime/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gtco::runtime {
namespace {

using Body = void (*)(int64_t, void*);

/// True on pool workers always, and on a caller while it runs its share: nested parallel
/// loops then run serially.
thread_local bool in_parallel_region = false;

std::atomic<uint64_t> next_pool_id{0};

constexpr auto kSpinDuration = std::chrono::microseconds(200);

/// The cores of this process's affinity mask, in order (empty where it cannot be read).
std::vector<int> AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  }
  return cores;
}

/// Binds the calling thread to `cpu`; a failure (a core taken away meanwhile) leaves it free.
void BindCurrentThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void RunRange(Body body, void* closure, int64_t begin, int64_t end) {
  for (int64_t index = begin; index < end; ++index) body(index, closure);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

/// Chunks per thread a loop is cut into: enough that a thread running late (its core busy with
/// another process) simply claims fewer of them, few enough that claiming (two atomics on a
/// line both cores write) stays small against the work when iterations are short (a softmax
/// row of 197 floats takes ~0.1 µs; claiming each alone made 2 threads slower than one).
constexpr int64_t kChunksPerThread = 16;

/// One parallel loop: chunks of `chunk` iterations are claimed from `next`.
struct Job {
  Job(int64_t n, int64_t chunk, Body body, void* closure)
      : n(n), chunk(chunk), body(body), closure(closure) {}
  const int64_t n;
  const int64_t chunk;
  const Body body;
  void* const closure;
  alignas(64) std::atomic<int64_t> next{0};
  alignas(64) std::atomic<int64_t> completed{0};
};

void Work(Job& job) {
  while (true) {
    const int64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.n) return;
    const int64_t end = std::min(job.n, begin + job.chunk);
    RunRange(job.body, job.closure, begin, end);
    job.completed.fetch_add(end - begin, std::memory_order_release);
  }
}

class ParallelPool {
 public:
  ParallelPool(int threads, ThreadPlacement placement)
      : num_threads_(std::max(1, threads)),
        cores_(placement == ThreadPlacement::kPinned ? AllowedCores() : std::vector<int>{}) {
    for (int worker = 1; worker < num_threads_; ++worker) {
      const int core = cores_.empty() ? -1 : cores_[worker % cores_.size()];
      workers_.emplace_back([this, core] {
        if (core >= 0) BindCurrentThread(core);
        WorkerLoop();
      });
    }
  }

  ~ParallelPool() {
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  int num_threads() const { return num_threads_; }

  void Run(int64_t n, Body body, void* closure) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    // A pinned pool binds each thread that runs its loops to the first core, once.
    thread_local uint64_t bound_for = 0;
    if (!cores_.empty() && bound_for != id_) {
      BindCurrentThread(cores_[0]);
      bound_for = id_;
    }
    const int64_t chunk = std::max<int64_t>(1, n / (kChunksPerThread * num_threads_));
    auto job = std::make_shared<Job>(n, chunk, body, closure);
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      current_ = job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    in_parallel_region = true;
    Work(*job);
    in_parallel_region = false;
    // Only iterations other threads claimed are left; a worker that never woke claims none.
    const auto spin_until = std::chrono::steady_clock::now() + kSpinDuration;
    while (job->completed.load(std::memory_order_acquire) != n) {
      if (std::chrono::steady_clock::now() < spin_until) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  void WorkerLoop() {
    in_parallel_region = true;
    uint64_t seen = 0;
    while (true) {
      const auto spin_until = std::chrono::steady_clock::now() + kSpinDuration;
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < spin_until) {
        for (int i = 0; i < 64; ++i) CpuRelax();
      }
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(wake_mutex_);
        wake_.wait(lock,
                   [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
        if (stop_) return;
        seen = generation_.load(std::memory_order_acquire);
        job = current_;
      }
      // A job that already ended (all iterations claimed) costs one failed claim.
      Work(*job);
    }
  }

  const int num_threads_;
  const std::vector<int> cores_;  ///< kPinned: the cores threads are bound to; empty: free
  const uint64_t id_ = next_pool_id.fetch_add(1) + 1;  ///< which pool a caller was bound for
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  ///< one parallel-for at a time
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;             ///< guarded by wake_mutex_
  std::shared_ptr<Job> current_;  ///< guarded by wake_mutex_
  std::atomic<uint64_t> generation_{0};
};

std::mutex pool_mutex;
std::shared_ptr<ParallelPool> pool;  // guarded by pool_mutex

int DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

std::shared_ptr<ParallelPool> GetPool() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (pool == nullptr) {
    pool = std::make_shared<ParallelPool>(DefaultThreads(), ThreadPlacement::kFree);
  }
  return pool;
}

}  // namespace

void SetParallelThreads(int threads, ThreadPlacement placement) {
  auto replacement =
      std::make_shared<ParallelPool>(threads > 0 ? threads : DefaultThreads(), placement);
  std::shared_ptr<ParallelPool> old;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    old = std::move(pool);
    pool = std::move(replacement);
  }
}

int ParallelThreads() { return GetPool()->num_threads(); }

bool AmxTileStateUsable() {
  static const bool usable = [] {
    constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
    constexpr unsigned long kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long permitted = 0;
    return syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) == 0 &&
           (permitted & (1ul << kXfeatureXtiledata)) != 0;
  }();
  return usable;
}

bool DropAmxUnlessUsable(std::vector<std::string>* flags) {
  const auto is_amx = [](const std::string& flag) { return flag.rfind("amx", 0) == 0; };
  if (std::find(flags->begin(), flags->end(), "amx_tile") == flags->end() ||
      AmxTileStateUsable()) {
    return false;
  }
  flags->erase(std::remove_if(flags->begin(), flags->end(), is_amx), flags->end());
  return true;
}

}  // namespace gtco::runtime

extern "C" void gtco_parallel_for(int64_t n, void (*body)(int64_t, void*), void* closure) {
  if (n <= 0) return;
  if (n == 1 || gtco::runtime::in_parallel_region) {
    gtco::runtime::RunRange(body, closure, 0, n);
    return;
  }
  std::shared_ptr<gtco::runtime::ParallelPool> pool = gtco::runtime::GetPool();
  if (pool->num_threads() == 1) {
    gtco::runtime::RunRange(body, closure, 0, n);
    return;
  }
  pool->Run(n, body, closure);
}
