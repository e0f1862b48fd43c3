// Result helpers shared by the CPU and CUDA measurers.
#include "worker/measurer.h"

#include <algorithm>
#include <cmath>

namespace gtco::worker {

gtco::v1::MeasureResult FailedResult(const gtco::v1::Candidate& candidate, gtco::v1::ErrorKind kind,
                                     const std::string& message) {
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(false);
  result.set_error_kind(kind);
  result.set_error(message);
  return result;
}

void FillStatistics(std::vector<double> samples, gtco::v1::MeasureResult* result) {
  std::sort(samples.begin(), samples.end());
  size_t count = samples.size();
  double median =
      count % 2 ? samples[count / 2] : 0.5 * (samples[count / 2 - 1] + samples[count / 2]);
  double mean = 0;
  for (double sample : samples) mean += sample;
  mean /= count;
  double variance = 0;
  for (double sample : samples) variance += (sample - mean) * (sample - mean);
  result->set_median_seconds(median);
  result->set_min_seconds(samples.front());
  result->set_max_seconds(samples.back());
  result->set_stddev_seconds(count > 1 ? std::sqrt(variance / (count - 1)) : 0.0);
  result->set_repeats(static_cast<int>(count));
}

}  // namespace gtco::worker
