// Human-readable rendering of job status and query results for the terminal.
#pragma once

#include <string>

#include "gtco/v1/gtco.pb.h"

namespace gtco::client {

/// "3.21 ms", "812 µs", "4.5 s"; "-" for 0.
std::string FormatSeconds(double seconds);
/// A header line plus one line per task: trials done/allotted, best latency, GFLOP/s, ETA.
std::string FormatJob(const gtco::v1::JobStatus& job);
/// Per task and mapping: trials spent, best latency, pruning and the scheduler's reasoning.
std::string FormatExplain(const gtco::v1::JobStatus& job);
/// One line per job.
std::string FormatJobLine(const gtco::v1::JobStatus& job);
/// One line per record.
std::string FormatQuery(const gtco::v1::QueryReply& reply, bool model_query);
/// An export's whole-model check and its fallback steps: "verified against the reference
/// interpreter: ..." (or why it was skipped), then one line per fallback step with its share of
/// the run.
std::string FormatVerification(const gtco::v1::ExportSummary& summary);
/// The message as one JSON document (field names as in the proto, every field printed).
std::string ToJson(const google::protobuf::Message& message);

}  // namespace gtco::client
