// SPDX-License-Identifier: GPL-2.0-only
#include "histd-exporter/encoding.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <thread>
#include <vector>

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

namespace {

// zlib's level 1: a scrape's text compresses nearly as well at a fraction
// of level 6's time.
constexpr int kLevel = 1;
// Output grows by this much at a time: a buffer of deflateBound (the whole
// body's size) would be written over, and so resident, for an eighth of it.
constexpr size_t kOutStep = 128 << 10;
// A body is compressed in pieces on threads of their own from this size on,
// each piece at least this big.
constexpr size_t kPieceFrom = 1 << 20;
constexpr size_t kMaxPieces = 4;

// `piece` as raw deflate blocks appended to `out`: the last piece's end the
// stream's, any other's a sync flush (byte-aligned, not final), after
// which the next piece's blocks follow as pigz's do.
bool deflate_piece(std::string_view piece, bool last, std::string& out) {
  z_stream z{};
  if (deflateInit2(&z, kLevel, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
  z.avail_in = static_cast<uInt>(piece.size());
  const int flush = last ? Z_FINISH : Z_SYNC_FLUSH;
  bool ok = false;
  for (;;) {
    const size_t had = out.size();
    out.resize(had + kOutStep);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + had);
    z.avail_out = static_cast<uInt>(kOutStep);
    const int rc = deflate(&z, flush);
    out.resize(out.size() - z.avail_out);
    if (rc == Z_STREAM_ERROR) break;
    if (rc == Z_STREAM_END) {
      ok = last;
      break;
    }
    // Room left over: a flush has written all (a finish never stops so).
    if (z.avail_out > 0) {
      ok = !last && z.avail_in == 0;
      break;
    }
  }
  deflateEnd(&z);
  return ok;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::optional<std::string> gzip(std::string_view body) {
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return gzip(body, std::clamp<size_t>(std::min(cpus, body.size() / kPieceFrom), 1, kMaxPieces));
}

std::optional<std::string> gzip(std::string_view body, size_t n) {
  if (body.size() > (uInt{1} << 30)) return std::nullopt;  // zlib counts in uInt
  n = std::clamp<size_t>(n, 1, std::max<size_t>(body.size(), 1));
  struct Piece {
    std::string_view in;
    std::string out;
    uLong crc = 0;
    bool ok = false;
  };
  std::vector<Piece> pieces(n);
  for (size_t i = 0; i < n; ++i)
    pieces[i].in = body.substr(body.size() / n * i, i + 1 < n ? body.size() / n : std::string_view::npos);
  auto pack = [](Piece& p, bool last) {
    p.crc = crc32(0, reinterpret_cast<const Bytef*>(p.in.data()), static_cast<uInt>(p.in.size()));
    p.ok = deflate_piece(p.in, last, p.out);
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) {
    try {
      threads.emplace_back(pack, std::ref(pieces[i]), i + 1 == n);
    } catch (const std::system_error&) {
      pack(pieces[i], i + 1 == n);  // no thread to be had: here, in turn
    }
  }
  pack(pieces[0], n == 1);
  for (std::thread& t : threads) t.join();
  // gzip's header as zlib writes it (level 1: XFL 4, "fastest"; OS 3, Unix),
  // the pieces, the CRC-32 and size of the whole.
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03", 10);
  uLong crc = 0;
  size_t size = 0;
  for (const Piece& p : pieces) size += p.out.size();
  out.reserve(out.size() + size + 8);
  for (const Piece& p : pieces) {
    if (!p.ok) return std::nullopt;
    out += p.out;
    crc = crc32_combine(crc, p.crc, static_cast<z_off_t>(p.in.size()));
  }
  put_le32(out, static_cast<uint32_t>(crc));
  put_le32(out, static_cast<uint32_t>(body.size()));
  return out;
}

}  // namespace histd::exporter
