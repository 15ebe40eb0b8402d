// SPDX-License-Identifier: GPL-2.0-only
#include "histd-exporter/encoding.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace histd::exporter {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool same_word(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

// The q of one coding's parameters ("q=0.5"): 1 when it has none; 0 when it
// cannot be read (refusing is the safe reading).
double quality(std::string_view params) {
  while (!params.empty()) {
    const size_t semi = params.find(';');
    const std::string_view p = trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view{} : params.substr(semi + 1);
    if (p.size() >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
      const std::string value(p.substr(2));
      char* end = nullptr;
      const double q = std::strtod(value.c_str(), &end);
      return end && *end == '\0' && !value.empty() ? q : 0;
    }
  }
  return 1;
}

}  // namespace

bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    const size_t comma = header.find(',');
    const std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view coding = trim(item.substr(0, semi));
    const std::string_view params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
    if (same_word(coding, "gzip") || same_word(coding, "x-gzip") || coding == "*") return quality(params) > 0;
  }
  return false;
}

std::optional<std::string> gzip(std::string_view body) {
  if (body.size() > (uInt{1} << 30)) return std::nullopt;  // zlib counts in uInt
  z_stream z{};
  // 15 + 16: a gzip header and trailer. Level 1: a scrape's text
  // compresses nearly as well at a fraction of level 6's time.
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out(deflateBound(&z, body.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

}  // namespace histd::exporter
