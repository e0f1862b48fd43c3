// Ranking-quality measures shared by the cost model tests.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace gtco::costmodel::testing {

/// Kendall's tau between `scores` (higher = predicted faster) and `seconds` (lower = faster):
/// 1 when the orders agree completely, -1 when reversed.
inline double KendallTau(const std::vector<float>& scores, const std::vector<double>& seconds) {
  double concordant = 0, discordant = 0;
  for (size_t a = 0; a < scores.size(); ++a) {
    for (size_t b = a + 1; b < scores.size(); ++b) {
      const double predicted = static_cast<double>(scores[a]) - scores[b];
      const double actual = seconds[b] - seconds[a];
      if (predicted * actual > 0) concordant += 1;
      if (predicted * actual < 0) discordant += 1;
    }
  }
  const double pairs = static_cast<double>(scores.size() * (scores.size() - 1) / 2);
  return pairs > 0 ? (concordant - discordant) / pairs : 0.0;
}

/// Indices of `scores` from the highest score down.
inline std::vector<size_t> OrderByScore(const std::vector<float>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

/// 0-based rank of `seconds[index]` among `seconds` (0 = fastest).
inline size_t TrueRank(const std::vector<double>& seconds, size_t index) {
  size_t rank = 0;
  for (double other : seconds) rank += other < seconds[index] ? 1 : 0;
  return rank;
}

}  // namespace gtco::costmodel::testing
