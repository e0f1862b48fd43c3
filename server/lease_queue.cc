// LeaseQueue: the ready queues between the preparer and the workers' Lease calls.
#include "server/lease_queue.h"

#include <iterator>

namespace gtco::server {

void LeaseQueue::NotifyAllLocked() {
  for (auto& [hardware_class, queue] : ready_) queue.ready_cv.notify_all();
}

void LeaseQueue::Push(ReadyCandidate ready) {
  std::lock_guard<std::mutex> lock(mutex_);
  Queue& queue = ready_[ready.task->hardware_class];
  queue.items.push_back(std::move(ready));
  queue.ready_cv.notify_one();
}

void LeaseQueue::Requeue(const std::string& hardware_class, std::vector<ReadyCandidate> ready) {
  if (ready.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Queue& queue = ready_[hardware_class];
  queue.items.insert(queue.items.begin(), std::make_move_iterator(ready.begin()),
                     std::make_move_iterator(ready.end()));
  queue.ready_cv.notify_all();
}

std::vector<ReadyCandidate> LeaseQueue::Pop(const std::string& hardware_class, int max_candidates,
                                            Clock::time_point deadline) {
  std::vector<ReadyCandidate> taken;
  std::unique_lock<std::mutex> lock(mutex_);
  Queue& queue = ready_[hardware_class];
  while (true) {
    while (static_cast<int>(taken.size()) < max_candidates && !queue.items.empty()) {
      ReadyCandidate ready = std::move(queue.items.front());
      queue.items.pop_front();
      if (ready.task->withdrawn.load()) continue;  // cancelled while it waited
      taken.push_back(std::move(ready));
    }
    if (!taken.empty() || shutting_down_) break;
    if (queue.ready_cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return taken;
}

size_t LeaseQueue::Size(const std::string& hardware_class) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = ready_.find(hardware_class);
  return found == ready_.end() ? 0 : found->second.items.size();
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
  std::lock_guard<std::mutex> lock(mutex_);
  ++passes_;
  in_pass_ = false;
  NotifyAllLocked();
}

void LeaseQueue::AwaitPass(const std::string& hardware_class, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A pass running now may have looked at the queues before this call: then wait for the next.
  const int64_t wanted = passes_ + (in_pass_ ? 2 : 1);
  demanded_ = true;
  demand_cv_.notify_one();
  Queue& queue = ready_[hardware_class];
  queue.ready_cv.wait_until(lock, deadline, [&] {
    return shutting_down_ || passes_ >= wanted || !queue.items.empty();
  });
}

void LeaseQueue::Shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  shutting_down_ = true;
  NotifyAllLocked();
  demand_cv_.notify_all();
}

bool LeaseQueue::shutting_down() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shutting_down_;
}

}  // namespace gtco::server
