// SPDX-License-Identifier: GPL-2.0-only
// gzip for scrapes that ask for it: a 100k-series body is megabytes of text
// that compresses to an eighth, which a fleet's scrapers pay on the wire.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace histd::exporter {

// Whether an Accept-Encoding header allows gzip: a "gzip" (or "x-gzip", or
// "*") coding whose q is not 0 (RFC 9110, 12.5.3).
bool accepts_gzip(std::string_view accept_encoding);

// `body` in gzip's format; nullopt if zlib fails (the body then goes as it is).
std::optional<std::string> gzip(std::string_view body);

}  // namespace histd::exporter
