// LeaseQueue: the ready queues between the preparer and the workers' Lease calls.
#include "server/lease_queue.h"

#include <iterator>

namespace gtco::server {

void LeaseQueue::Push(ReadyCandidate ready) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const target::Target target = ready.candidate.target;
    ready_[target].push_back(std::move(ready));
  }
  ready_cv_.notify_one();
}

void LeaseQueue::Requeue(target::Target target, std::vector<ReadyCandidate> ready) {
  if (ready.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<ReadyCandidate>& queue = ready_[target];
    queue.insert(queue.begin(), std::make_move_iterator(ready.begin()),
                 std::make_move_iterator(ready.end()));
  }
  ready_cv_.notify_all();
}

std::vector<ReadyCandidate> LeaseQueue::Pop(target::Target target, int max_candidates,
                                            Clock::time_point deadline) {
  std::vector<ReadyCandidate> taken;
  std::unique_lock<std::mutex> lock(mutex_);
  std::deque<ReadyCandidate>& queue = ready_[target];
  while (true) {
    while (static_cast<int>(taken.size()) < max_candidates && !queue.empty()) {
      ReadyCandidate ready = std::move(queue.front());
      queue.pop_front();
      if (ready.task->withdrawn.load()) continue;  // cancelled while it waited
      taken.push_back(std::move(ready));
    }
    if (!taken.empty() || shutting_down_) break;
    if (ready_cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return taken;
}

size_t LeaseQueue::Size(target::Target target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = ready_.find(target);
  return found == ready_.end() ? 0 : found->second.size();
}

void LeaseQueue::MarkLeased(const std::string& candidate_id, target::Target target,
                            int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  leased_[candidate_id] = Held{target, now_ms};
}

std::optional<int64_t> LeaseQueue::TakeLeasedAt(const std::string& candidate_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = leased_.find(candidate_id);
  if (found == leased_.end()) return std::nullopt;
  const int64_t leased_at = found->second.leased_at_ms;
  leased_.erase(found);
  return leased_at;
}

size_t LeaseQueue::Outstanding(target::Target target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t held = 0;
  for (const auto& [candidate_id, lease] : leased_) held += lease.target == target ? 1 : 0;
  return held;
}

void LeaseQueue::Demand() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    demanded_ = true;
  }
  demand_cv_.notify_one();
}

void LeaseQueue::WaitForDemand(Clock::duration timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  demand_cv_.wait_for(lock, timeout, [this] { return demanded_ || shutting_down_; });
  demanded_ = false;
  in_pass_ = true;
}

void LeaseQueue::PassDone() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++passes_;
    in_pass_ = false;
  }
  ready_cv_.notify_all();
}

void LeaseQueue::AwaitPass(target::Target target, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A pass running now may have looked at the queues before this call: then wait for the next.
  const int64_t wanted = passes_ + (in_pass_ ? 2 : 1);
  demanded_ = true;
  demand_cv_.notify_one();
  ready_cv_.wait_until(lock, deadline, [&] {
    return shutting_down_ || passes_ >= wanted || !ready_[target].empty();
  });
}

void LeaseQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
  }
  ready_cv_.notify_all();
  demand_cv_.notify_all();
}

bool LeaseQueue::shutting_down() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shutting_down_;
}

}  // namespace gtco::server
