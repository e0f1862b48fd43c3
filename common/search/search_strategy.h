// Search strategies: propose the next schedules to measure for one task, learning from results.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/schedule/space.h"
#include "common/schedule/trace.h"

namespace gtco::search {

/// One task's search. Not thread-safe: the server serializes calls per task.
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  /// Records a measured (or failed) trace. `seconds` is ignored when !ok.
  virtual void Observe(const schedule::Trace& trace, bool ok, double seconds) = 0;
  /// Up to `count` traces to measure (fewer when the space is exhausted): traces never proposed
  /// or observed before, and (EvolutionarySearch with confirmations > 1) the best one again while
  /// it has fewer measurements than that.
  virtual std::vector<schedule::Trace> Propose(int count) = 0;
  /// Records a trace proposed earlier (e.g. by a server before it restarted) and not measured
  /// yet, so that it is not proposed again.
  virtual void MarkProposed(const schedule::Trace& trace) = 0;
  /// Offers a good schedule of a similar workload (another task of the job under the same
  /// sketch): the search proposes its nearest trace ahead of its own picks, unless that was
  /// proposed already. A trace with no nearest trace in the space is ignored.
  virtual void Suggest(const schedule::Trace& trace) = 0;
  /// Best observed latency so far (0 when none): of a trace measured more than once, the mean
  /// of its measurements.
  virtual double best_seconds() const = 0;
};

/// Scores candidate traces (higher = predicted faster); the cost model plugs in here. Must
/// return one score per trace, or an empty vector when it cannot rank yet.
using TraceScorer = std::function<std::vector<double>(const std::vector<schedule::Trace>&)>;

struct EvolutionaryOptions {
  int warmup_random = 16;        ///< measured trials before evolution starts
  int population = 8;            ///< top-k parents mutated
  double epsilon_random = 0.25;  ///< fraction of each round drawn uniformly at random
  /// With a scorer: offspring generated per proposed slot, of which the best-scored are kept.
  int candidates_per_slot = 16;
  TraceScorer scorer;            ///< empty: offspring taken in generation order
  uint64_t seed = 1;
  /// Measurements the best trace gets before it is trusted: while the best (by the mean of its
  /// measurements) has fewer, the next proposal measures it again, first. On a shared or
  /// virtual machine one measurement can come out 20-40 % fast (a quiet moment of the host);
  /// the lowest of many such single measurements is mostly the luckiest, not the fastest
  /// program. 1: every trace is measured once.
  int confirmations = 2;
};

/// The best measured trace again while it is unconfirmed (see confirmations), then suggested
/// schedules (see Suggest), then the space's default trace and its seeds (once
/// each: the sketch's hand-picked starts, SearchSpace::SeedTraces), then random sampling (ranked
/// by the scorer when there is one), then mutations of the best measured schedules with an ε
/// share of random picks. With a scorer (the cost model), each round generates
/// candidates_per_slot offspring and fresh samples per slot and keeps the best-scored ones; the
/// ε share stays random so the model keeps seeing programs it did not choose.
class EvolutionarySearch final : public SearchStrategy {
 public:
  EvolutionarySearch(schedule::SearchSpace space, EvolutionaryOptions options);
  void Observe(const schedule::Trace& trace, bool ok, double seconds) override;
  std::vector<schedule::Trace> Propose(int count) override;
  void MarkProposed(const schedule::Trace& trace) override { seen_.insert(trace.ToString()); }
  void Suggest(const schedule::Trace& trace) override;
  double best_seconds() const override { return best_seconds_; }

 private:
  struct Measured {
    schedule::Trace trace;
    double seconds;     ///< the mean of its measurements
    double total = 0;   ///< their sum
    int measurements = 0;
  };
  bool Fresh(const schedule::Trace& trace) const;
  /// One offspring of the measured population (or a fresh sample before there is one).
  schedule::Trace Offspring(bool evolve);
  /// Keeps the `count` best-scored fresh traces of `pool`.
  std::vector<schedule::Trace> BestScored(std::vector<schedule::Trace> pool, int count);

  schedule::SearchSpace space_;
  EvolutionaryOptions options_;
  std::mt19937_64 rng_;
  std::unordered_set<std::string> seen_;  ///< traces proposed or observed
  std::deque<schedule::Trace> suggested_;  ///< nearest traces of suggestions, oldest first
  bool default_pending_ = true;  ///< the default trace is yet to be proposed
  size_t seeds_proposed_ = 0;    ///< the space's seed traces proposed (or skipped) so far
  std::vector<Measured> measured_ok_;     ///< one per trace, sorted by seconds, ascending
  /// Trace -> times proposed again to confirm it (at most confirmations - 1 each).
  std::unordered_map<std::string, int> reproposed_;
  int observed_ = 0;
  double best_seconds_ = 0;
};

}  // namespace gtco::search
