// Length-prefixed protobuf messages over file descriptors (worker <-> runner pipes).
#pragma once

#include <google/protobuf/message_lite.h>

namespace gtco::worker {

/// Writes a 4-byte little-endian length and the serialized message. False on a broken pipe.
bool WriteMessage(int fd, const google::protobuf::MessageLite& message);
/// Reads one framed message. False on EOF or a malformed frame.
bool ReadMessage(int fd, google::protobuf::MessageLite* message);

}  // namespace gtco::worker
