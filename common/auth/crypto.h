// The few cryptographic primitives the token logic needs, and the one place where OpenSSL
// (libcrypto) errors become absl::Status.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gtco::auth {

/// `count` bytes from OpenSSL's CSPRNG (RAND_bytes). INTERNAL, with OpenSSL's reason, when the
/// generator is not seeded or fails. Thread-safe.
absl::StatusOr<std::string> RandomBytes(size_t count);

/// The 32-byte SHA-256 digest of `data`. INTERNAL when libcrypto fails. Thread-safe.
absl::StatusOr<std::string> Sha256(absl::string_view data);

/// True when `a` and `b` are equal; for equal lengths the time taken does not depend on where
/// they differ (CRYPTO_memcmp). Lengths are not secret.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

/// True when `text` is non-empty, of even length, and only lowercase hex digits.
bool IsLowerHex(absl::string_view text);

}  // namespace gtco::auth
