// RPC fuzz scripts: decoding and encoding of the call records.
#include "tests/fuzz/rpc_script.h"

#include <cstdlib>

namespace gtco::fuzz {

constexpr size_t kRecordHeaderBytes = 4;
constexpr size_t kMaxPayloadBytes = 0xffff;

std::vector<RpcCall> ParseRpcScript(std::string_view bytes) {
  std::vector<RpcCall> calls;
  size_t offset = 0;
  while (offset + kRecordHeaderBytes <= bytes.size()) {
    RpcCall call;
    call.op = static_cast<RpcOp>(static_cast<uint8_t>(bytes[offset]) %
                                 static_cast<uint8_t>(RpcOp::kNumOps));
    call.flags = static_cast<uint8_t>(bytes[offset + 1]);
    const size_t length = static_cast<uint8_t>(bytes[offset + 2]) |
                          (static_cast<size_t>(static_cast<uint8_t>(bytes[offset + 3])) << 8);
    offset += kRecordHeaderBytes;
    call.payload = std::string(bytes.substr(offset, length));
    offset += call.payload.size();
    calls.push_back(std::move(call));
  }
  return calls;
}

std::string SerializeRpcScript(const std::vector<RpcCall>& calls) {
  std::string bytes;
  for (const RpcCall& call : calls) {
    if (call.payload.size() > kMaxPayloadBytes) std::abort();
    bytes.push_back(static_cast<char>(call.op));
    bytes.push_back(static_cast<char>(call.flags));
    bytes.push_back(static_cast<char>(call.payload.size() & 0xff));
    bytes.push_back(static_cast<char>(call.payload.size() >> 8));
    bytes += call.payload;
  }
  return bytes;
}

}  // namespace gtco::fuzz
