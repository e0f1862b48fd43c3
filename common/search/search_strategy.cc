// Random + evolutionary search over a task's schedule space.
#include "common/search/search_strategy.h"

#include <algorithm>

namespace gtco::search {
namespace {
constexpr int kMaxAttemptsPerProposal = 64;
/// Suggestions kept waiting; older ones are dropped (newer ones come from better schedules).
constexpr size_t kMaxSuggested = 8;
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
  Measured measured{trace, seconds, seconds, 1};
  auto same = std::find_if(measured_ok_.begin(), measured_ok_.end(),
                           [&trace](const Measured& item) { return item.trace == trace; });
  if (same != measured_ok_.end()) {  // measured again: ranked by the mean of its measurements
    measured = std::move(*same);
    measured_ok_.erase(same);
    measured.total += seconds;
    ++measured.measurements;
    measured.seconds = measured.total / measured.measurements;
  }
  auto position = std::upper_bound(
      measured_ok_.begin(), measured_ok_.end(), measured.seconds,
      [](double value, const Measured& item) { return value < item.seconds; });
  measured_ok_.insert(position, std::move(measured));
  best_seconds_ = measured_ok_.front().seconds;
}

void EvolutionarySearch::Suggest(const schedule::Trace& trace) {
  std::optional<schedule::Trace> nearest = space_.Nearest(trace);
  if (!nearest || !Fresh(*nearest)) return;
  if (std::find(suggested_.begin(), suggested_.end(), *nearest) != suggested_.end()) return;
  suggested_.push_back(*std::move(nearest));
  if (suggested_.size() > kMaxSuggested) suggested_.pop_front();
}

schedule::Trace EvolutionarySearch::Offspring(bool evolve) {
  if (!evolve || measured_ok_.empty()) return space_.Sample(rng_);
  int parents = std::min<int>(options_.population, static_cast<int>(measured_ok_.size()));
  std::uniform_int_distribution<int> pick(0, parents - 1);
  // Bias towards the best parents: take the better of two draws.
  int parent = std::min(pick(rng_), pick(rng_));
  return space_.Mutate(measured_ok_[parent].trace, rng_);
}

std::vector<schedule::Trace> EvolutionarySearch::BestScored(std::vector<schedule::Trace> pool,
                                                            int count) {
  std::vector<schedule::Trace> chosen;
  std::vector<double> scores = options_.scorer(pool);
  if (scores.size() != pool.size()) {
    pool.resize(std::min<size_t>(pool.size(), count));
    return pool;
  }
  std::vector<size_t> order(pool.size());
  for (size_t index = 0; index < order.size(); ++index) order[index] = index;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  for (size_t index : order) {
    if (static_cast<int>(chosen.size()) >= count) break;
    chosen.push_back(std::move(pool[index]));
  }
  return chosen;
}

std::vector<schedule::Trace> EvolutionarySearch::Propose(int count) {
  std::vector<schedule::Trace> proposals;
  // The best trace again while it has fewer measurements than options_.confirmations (and has
  // not been proposed again that often already: a confirmation that failed or is still out is
  // not repeated), so that the best is not merely the luckiest single measurement.
  if (count > 0 && !measured_ok_.empty()) {
    const Measured& best = measured_ok_.front();
    int& again = reproposed_[best.trace.ToString()];
    if (best.measurements < options_.confirmations && again < options_.confirmations - 1) {
      ++again;
      proposals.push_back(best.trace);
    }
  }
  // Then the space's default trace (the sketch's hand-picked start for this workload, what an
  // export runs untuned), once, before anything else: a task given one or two trials measures
  // its own default, not another task's best moved to the nearest values of this space (those
  // carry over choices that suited the other shape: RegNetY's grouped 3x3 convs, given one
  // trial each, ran the single-threaded tile of its 1x1 squeeze convs, 2-3x their default).
  if (default_pending_ && static_cast<int>(proposals.size()) < count) {
    default_pending_ = false;
    schedule::Trace trace = space_.DefaultTrace();
    if (Fresh(trace)) {
      seen_.insert(trace.ToString());
      proposals.push_back(std::move(trace));
    }
  }
  // Then suggestions, newest (from the best schedule so far) first, in at most half the slots
  // (one of one) so that the task's own search goes on; one observed meanwhile is dropped.
  const int max_suggested = std::max(1, count / 2);
  int suggestions = 0;
  while (!suggested_.empty() && static_cast<int>(proposals.size()) < count &&
         suggestions < max_suggested) {
    schedule::Trace trace = std::move(suggested_.back());
    suggested_.pop_back();
    if (!Fresh(trace)) continue;
    seen_.insert(trace.ToString());
    proposals.push_back(std::move(trace));
    ++suggestions;
  }
  // Then the sketch's seeds (other hand-picked starts, e.g. other register-tile shapes), once
  // each, so that a mapping is not judged on its default alone.
  if (!default_pending_) {
    const std::vector<schedule::Trace>& seeds = space_.SeedTraces();
    while (seeds_proposed_ < seeds.size() && static_cast<int>(proposals.size()) < count) {
      const schedule::Trace& trace = seeds[seeds_proposed_++];
      if (!Fresh(trace)) continue;
      seen_.insert(trace.ToString());
      proposals.push_back(trace);
    }
  }
  const int own = count - static_cast<int>(proposals.size());
  if (own <= 0) return proposals;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  bool evolve = observed_ >= options_.warmup_random && !measured_ok_.empty();
  int random_slots = 0;
  // Before evolution every slot is a uniform sample, unless there is a scorer: then fresh samples
  // are ranked by it (a model trained on earlier tasks' records already knows good programs;
  // an untrained one returns no scores and the samples stay in random order), with the ε share.
  for (int slot = 0; slot < own; ++slot) {
    if ((!evolve && !options_.scorer) || coin(rng_) < options_.epsilon_random) ++random_slots;
  }
  int guided_slots = own - random_slots;
  // Guided slots: offspring (or, before evolution, samples) ranked by the scorer when there is one.
  if (guided_slots > 0) {
    int per_slot = options_.scorer ? std::max(1, options_.candidates_per_slot) : 1;
    std::vector<schedule::Trace> pool;
    std::unordered_set<std::string> in_pool;
    int attempts = guided_slots * per_slot * 4 + kMaxAttemptsPerProposal;
    while (static_cast<int>(pool.size()) < guided_slots * per_slot && attempts-- > 0) {
      schedule::Trace candidate = Offspring(evolve);
      std::string text = candidate.ToString();
      if (!Fresh(candidate) || !in_pool.insert(text).second) continue;
      pool.push_back(std::move(candidate));
    }
    if (options_.scorer && !pool.empty()) pool = BestScored(std::move(pool), guided_slots);
    pool.resize(std::min<size_t>(pool.size(), guided_slots));
    for (auto& trace : pool) {
      seen_.insert(trace.ToString());
      proposals.push_back(std::move(trace));
    }
  }
  // Random slots (and any guided slot the pool could not fill): uniform samples.
  int missing = count - static_cast<int>(proposals.size());
  for (int slot = 0; slot < missing; ++slot) {
    for (int attempt = 0; attempt < kMaxAttemptsPerProposal; ++attempt) {
      schedule::Trace candidate = space_.Sample(rng_);
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
