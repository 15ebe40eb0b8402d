// SPDX-License-Identifier: GPL-2.0-only
// gzip for scrapes that ask for it: a 100k-series body is megabytes of text
// that compresses to an eighth, which a fleet's scrapers pay on the wire.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace histd::exporter {

// Whether an Accept-Encoding header allows gzip: a "gzip" (or "x-gzip", or
// "*") coding whose q is not 0 (RFC 9110, 12.5.3).
bool accepts_gzip(std::string_view accept_encoding);

// `body` in gzip's format; nullopt if zlib fails (the body then goes as it is).
// A big body is compressed in pieces, one a CPU (up to 4), which follow
// one another in one deflate stream as pigz's do.
std::optional<std::string> gzip(std::string_view body);
// The same in `pieces` pieces.
std::optional<std::string> gzip(std::string_view body, size_t pieces);
// The first `size` bytes of the file `fd` in gzip's format, read a piece
// at a time (pread: the file offset is not used), as gzip() compresses a
// body in memory.
std::optional<std::string> gzip_file(int fd, size_t size);
std::optional<std::string> gzip_file(int fd, size_t size, size_t pieces);

}  // namespace histd::exporter
