// Length-prefixed protobuf framing.
#include "worker/framing.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace gtco::worker {
namespace {

constexpr uint32_t kMaxFrameBytes = 1u << 30;

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t got = ::read(fd, data, size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

bool WriteMessage(int fd, const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!message.SerializeToString(&payload)) return false;
  uint32_t size = static_cast<uint32_t>(payload.size());
  unsigned char header[4] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                             static_cast<unsigned char>(size >> 16),
                             static_cast<unsigned char>(size >> 24)};
  return WriteAll(fd, reinterpret_cast<const char*>(header), 4) &&
         WriteAll(fd, payload.data(), payload.size());
}

bool ReadMessage(int fd, google::protobuf::MessageLite* message) {
  unsigned char header[4];
  if (!ReadAll(fd, reinterpret_cast<char*>(header), 4)) return false;
  uint32_t size = header[0] | (header[1] << 8) | (header[2] << 16) |
                  (static_cast<uint32_t>(header[3]) << 24);
  if (size > kMaxFrameBytes) return false;
  std::string payload(size, '\0');
  if (!ReadAll(fd, payload.data(), size)) return false;
  return message->ParseFromString(payload);
}

}  // namespace gtco::worker
