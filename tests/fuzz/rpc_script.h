// A fuzz input for the RPC fuzzer: a sequence of calls, each an operation, id-substitution
// flags and the serialized request message (as it arrives over gRPC).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gtco::fuzz {

/// The operation of one call. kModelChunk/kModelData append to the current model stream (as a
/// client-streaming Submit/QueryModel sends it); kSubmit and kQueryModel end the stream.
enum class RpcOp : uint8_t {
  kModelChunk,     ///< payload: gtco.v1.ModelChunk
  kModelData,      ///< payload: raw model bytes, appended as one data chunk
  kSubmit,         ///< payload ignored: Submit(stream)
  kQueryModel,     ///< payload ignored: QueryModel(stream)
  kGetJob,         ///< payload: GetJobRequest
  kWatchJob,       ///< payload: WatchJobRequest (one status, no waiting)
  kListJobs,       ///< payload: ListJobsRequest
  kCancelJob,      ///< payload: CancelJobRequest
  kQueryWorkload,  ///< payload: QueryWorkloadRequest
  kRegister,       ///< payload: RegisterRequest
  kLease,          ///< payload: LeaseRequest (never waits)
  kReport,         ///< payload: ReportRequest
  kHeartbeat,      ///< payload: HeartbeatRequest
  kTick,           ///< payload ignored: the server's housekeeping tick
  kNumOps,
};

/// Bits of RpcCall::flags. The ids a fuzzer cannot guess (job, worker and candidate ids made
/// by the server) are taken from earlier replies when asked: entry `flags >> 2` (modulo the
/// number known) replaces the request's own.
constexpr uint8_t kUseKnownId = 1;      ///< job id / worker id / workload key of the request
constexpr uint8_t kUseKnownNested = 2;  ///< candidate ids inside Report and Heartbeat requests

struct RpcCall {
  RpcOp op = RpcOp::kTick;
  uint8_t flags = 0;
  std::string payload;
};

/// Decodes records "[op][flags][length: 2 bytes, little endian][payload]"; op is taken modulo
/// kNumOps and a truncated last payload is cut to the bytes present.
std::vector<RpcCall> ParseRpcScript(std::string_view bytes);
/// The inverse of ParseRpcScript (payloads longer than 65535 bytes are an error: check first).
std::string SerializeRpcScript(const std::vector<RpcCall>& calls);

}  // namespace gtco::fuzz
