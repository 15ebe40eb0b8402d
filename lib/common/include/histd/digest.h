// SPDX-License-Identifier: GPL-2.0-only
// SHA-256 (OpenSSL's libcrypto), for what histd checks it wrote itself: a
// cached object before it is loaded, the state file before it is restored,
// the keyed hash of a pointer a reader may not see, and the page's script
// that the exporter allows by its hash.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace histd {

// The digest of `data`; all zeros should libcrypto fail.
std::array<uint8_t, 32> sha256(std::string_view data);
// The same in lowercase hex ("" should libcrypto fail).
std::string sha256_hex(std::string_view data);
// The same in base64, as a Content-Security-Policy's 'sha256-...' source
// names a script ("" should libcrypto fail).
std::string sha256_base64(std::string_view data);

}  // namespace histd
