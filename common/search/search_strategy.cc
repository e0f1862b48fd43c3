// Random + evolutionary search over a task's schedule space.
#include "common/search/search_strategy.h"

#include <algorithm>

namespace gtco::search {
namespace {
constexpr int kMaxAttemptsPerProposal = 64;
}  // namespace

EvolutionarySearch::EvolutionarySearch(schedule::SearchSpace space, EvolutionaryOptions options)
    : space_(std::move(space)), options_(options), rng_(options.seed) {}

bool EvolutionarySearch::Fresh(const schedule::Trace& trace) const {
  return seen_.count(trace.ToString()) == 0;
}

void EvolutionarySearch::Observe(const schedule::Trace& trace, bool ok, double seconds) {
  seen_.insert(trace.ToString());
  ++observed_;
  if (!ok) return;
  Measured measured{trace, seconds};
  auto position = std::upper_bound(
      measured_ok_.begin(), measured_ok_.end(), seconds,
      [](double value, const Measured& item) { return value < item.seconds; });
  measured_ok_.insert(position, std::move(measured));
  best_seconds_ = measured_ok_.front().seconds;
}

std::vector<schedule::Trace> EvolutionarySearch::Propose(int count) {
  std::vector<schedule::Trace> proposals;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  bool evolve = observed_ >= options_.warmup_random && !measured_ok_.empty();
  int parents = std::min<int>(options_.population, static_cast<int>(measured_ok_.size()));
  for (int slot = 0; slot < count; ++slot) {
    bool random_pick = !evolve || coin(rng_) < options_.epsilon_random;
    for (int attempt = 0; attempt < kMaxAttemptsPerProposal; ++attempt) {
      schedule::Trace candidate;
      if (random_pick || attempt >= kMaxAttemptsPerProposal / 2) {
        candidate = space_.Sample(rng_);
      } else {
        std::uniform_int_distribution<int> pick(0, parents - 1);
        // Bias towards the best parent: take the better of two draws.
        int parent = std::min(pick(rng_), pick(rng_));
        candidate = space_.Mutate(measured_ok_[parent].trace, rng_);
      }
      if (Fresh(candidate)) {
        seen_.insert(candidate.ToString());
        proposals.push_back(std::move(candidate));
        break;
      }
    }
  }
  return proposals;
}

}  // namespace gtco::search
