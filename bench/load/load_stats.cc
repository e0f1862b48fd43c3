// Per-RPC latency samples and outcomes of a load run, and the report they make.
#include "bench/load/load_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gtco::bench {
namespace {

/// Nearest-rank quantile of sorted samples (0 when there are none).
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

RpcSummary SummarizeSamples(std::string name, std::vector<double> latency_ms,
                            const std::map<std::string, int64_t>& errors, double seconds) {
  RpcSummary row;
  row.name = std::move(name);
  row.errors_by_code = errors;
  for (const auto& [code, count] : errors) row.errors += count;
  row.calls = static_cast<int64_t>(latency_ms.size()) + row.errors;
  row.per_second = seconds > 0 ? static_cast<double>(row.calls) / seconds : 0;
  std::sort(latency_ms.begin(), latency_ms.end());
  row.p50_ms = Quantile(latency_ms, 0.50);
  row.p90_ms = Quantile(latency_ms, 0.90);
  row.p99_ms = Quantile(latency_ms, 0.99);
  row.max_ms = latency_ms.empty() ? 0 : latency_ms.back();
  return row;
}

std::string ErrorsText(const RpcSummary& row) {
  if (row.errors_by_code.empty()) return "0";
  std::vector<std::string> parts;
  for (const auto& [code, count] : row.errors_by_code)
    parts.push_back(absl::StrCat(code, " ", count));
  return absl::StrCat(row.errors, " (", absl::StrJoin(parts, ", "), ")");
}

}  // namespace

const char* RpcKindName(RpcKind kind) {
  switch (kind) {
    case RpcKind::kSubmit:
      return "Submit";
    case RpcKind::kWatchJob:
      return "WatchJob";
    case RpcKind::kGetJob:
      return "GetJob";
    case RpcKind::kListJobs:
      return "ListJobs";
    case RpcKind::kQueryModel:
      return "QueryModel";
    case RpcKind::kQueryWorkload:
      return "QueryWorkload";
  }
  return "?";
}

std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  int index = static_cast<int>(code);
  if (index >= 0 && index < static_cast<int>(std::size(kNames))) return kNames[index];
  return absl::StrCat("CODE_", index);
}

void LoadStats::Record(RpcKind kind, double latency_ms, const grpc::Status& status) {
  Kind& samples = kinds_[static_cast<int>(kind)];
  if (status.ok()) {
    samples.latency_ms.push_back(latency_ms);
  } else {
    std::string code = CodeName(status.error_code());
    if (++samples.errors[code] == 1) samples.first_message[code] = status.error_message();
  }
}

void LoadStats::RecordWatchEnd(bool terminal, int64_t updates) {
  ++(terminal ? watch_terminal_ : watch_cut_);
  watch_updates_ += updates;
}

void LoadStats::Merge(const LoadStats& other) {
  for (int index = 0; index < kRpcKindCount; ++index) {
    Kind& mine = kinds_[index];
    const Kind& theirs = other.kinds_[index];
    mine.latency_ms.insert(mine.latency_ms.end(), theirs.latency_ms.begin(),
                           theirs.latency_ms.end());
    for (const auto& [code, count] : theirs.errors) mine.errors[code] += count;
    for (const auto& [code, message] : theirs.first_message)
      mine.first_message.insert({code, message});
  }
  watch_terminal_ += other.watch_terminal_;
  watch_cut_ += other.watch_cut_;
  watch_updates_ += other.watch_updates_;
}

int64_t LoadStats::TotalErrors() const {
  int64_t total = 0;
  for (const Kind& samples : kinds_) {
    for (const auto& [code, count] : samples.errors) total += count;
  }
  return total;
}

std::vector<RpcSummary> Summarize(const LoadStats& stats, double seconds) {
  std::vector<RpcSummary> rows;
  std::vector<double> all_latency_ms;
  std::map<std::string, int64_t> all_errors;
  for (int index = 0; index < kRpcKindCount; ++index) {
    auto kind = static_cast<RpcKind>(index);
    const LoadStats::Kind& samples = stats.kind(kind);
    rows.push_back(
        SummarizeSamples(RpcKindName(kind), samples.latency_ms, samples.errors, seconds));
    all_latency_ms.insert(all_latency_ms.end(), samples.latency_ms.begin(),
                          samples.latency_ms.end());
    for (const auto& [code, count] : samples.errors) all_errors[code] += count;
  }
  rows.push_back(SummarizeSamples("total", std::move(all_latency_ms), all_errors, seconds));
  return rows;
}

std::string FormatFirstErrors(const LoadStats& stats) {
  std::string text;
  for (int index = 0; index < kRpcKindCount; ++index) {
    auto kind = static_cast<RpcKind>(index);
    for (const auto& [code, message] : stats.kind(kind).first_message) {
      absl::StrAppend(&text, RpcKindName(kind), " ", code, ": ", message, "\n");
    }
  }
  return text;
}

std::string FormatTable(const std::vector<RpcSummary>& rows) {
  std::string table =
      "| RPC | calls | calls/s | p50 ms | p90 ms | p99 ms | max ms | errors |\n"
      "|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const RpcSummary& row : rows) {
    absl::StrAppendFormat(&table, "| %s | %d | %.1f | %.2f | %.2f | %.2f | %.2f | %s |\n", row.name,
                          row.calls, row.per_second, row.p50_ms, row.p90_ms, row.p99_ms, row.max_ms,
                          ErrorsText(row));
  }
  return table;
}

std::string FormatJson(const std::vector<RpcSummary>& rows, const LoadStats& stats, double seconds,
                       const std::string& settings_json) {
  std::vector<std::string> row_texts;
  for (const RpcSummary& row : rows) {
    std::vector<std::string> errors;
    for (const auto& [code, count] : row.errors_by_code) {
      errors.push_back(absl::StrFormat("\"%s\": %d", code, count));
    }
    row_texts.push_back(absl::StrFormat(
        "    {\"rpc\": \"%s\", \"calls\": %d, \"errors\": %d, \"calls_per_second\": %.3f, "
        "\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, "
        "\"errors_by_code\": {%s}}",
        row.name, row.calls, row.errors, row.per_second, row.p50_ms, row.p90_ms, row.p99_ms,
        row.max_ms, absl::StrJoin(errors, ", ")));
  }
  return absl::StrFormat(
      "{\n  \"settings\": %s,\n  \"seconds\": %.3f,\n  \"watch\": {\"reached_terminal\": %d, "
      "\"cut_by_client\": %d, \"updates\": %d},\n  \"rpcs\": [\n%s\n  ]\n}\n",
      settings_json, seconds, stats.watch_terminal(), stats.watch_cut(), stats.watch_updates(),
      absl::StrJoin(row_texts, ",\n"));
}

}  // namespace gtco::bench
