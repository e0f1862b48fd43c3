// TSV of the tuned cases: render and parse.
#include "bench/tuned_traces.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/util/status.h"

namespace gtco::bench {

std::string RenderTunedTraces(const std::vector<std::pair<std::string, TuneResult>>& tuned) {
  std::string text = "# id\ttrials\tfailed\ttuning_seconds\tbest_seconds\tbest_trace\n";
  for (const auto& [id, result] : tuned) {
    absl::StrAppend(&text, absl::StrFormat("%s\t%d\t%d\t%.3f\t%.9g\t%s\n", id, result.trials,
                                           result.failed, result.tuning_seconds,
                                           result.best_seconds, result.best_trace.ToString()));
  }
  return text;
}

absl::StatusOr<std::map<std::string, TuneResult>> ParseTunedTraces(const std::string& text) {
  std::map<std::string, TuneResult> tuned;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    TuneResult result;
    bool ok = fields.size() == 6 && absl::SimpleAtoi(fields[1], &result.trials) &&
              absl::SimpleAtoi(fields[2], &result.failed) &&
              absl::SimpleAtod(fields[3], &result.tuning_seconds) &&
              absl::SimpleAtod(fields[4], &result.best_seconds);
    if (ok && result.best_seconds > 0) {
      absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(fields[5]);
      ok = trace.ok();
      if (ok) result.best_trace = *std::move(trace);
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuned traces line ", line_number, " is malformed: ", line));
    }
    tuned[fields[0]] = std::move(result);
  }
  return tuned;
}

}  // namespace gtco::bench
