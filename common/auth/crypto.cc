// OpenSSL-backed randomness, hashing and constant-time comparison; OpenSSL errors end here.
#include "common/auth/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gtco::auth {
namespace {

// The Status for a failed libcrypto call: `operation` and OpenSSL's oldest queued reason (the
// queue is per thread and is cleared here).
absl::Status OpenSslError(absl::string_view operation) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return absl::InternalError(absl::StrCat(operation, " failed (OpenSSL)"));
  char reason[256];
  ERR_error_string_n(code, reason, sizeof(reason));
  return absl::InternalError(absl::StrCat(operation, " failed: ", reason));
}

}  // namespace

absl::StatusOr<std::string> RandomBytes(size_t count) {
  if (count > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("cannot draw ", count, " random bytes at once"));
  }
  std::string bytes(count, '\0');
  if (count == 0) return bytes;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(count)) != 1) {
    return OpenSslError("drawing random bytes (RAND_bytes)");
  }
  return bytes;
}

absl::StatusOr<std::string> Sha256(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &digest_size, EVP_sha256(), nullptr) != 1) {
    return OpenSslError("SHA-256 (EVP_Digest)");
  }
  return std::string(reinterpret_cast<const char*>(digest), digest_size);
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool IsLowerHex(absl::string_view text) {
  if (text.empty() || text.size() % 2 != 0) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace gtco::auth
