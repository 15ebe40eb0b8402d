// SPDX-License-Identifier: GPL-2.0-only
#include "histd-exporter/encoding.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
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

// Runs deflate with `flush` until it has taken every byte of input
// (Z_NO_FLUSH) or written all it had (a flush, the finish), appending to
// `out`.
bool pump(z_stream& z, int flush, std::string& out) {
  for (;;) {
    const size_t had = out.size();
    out.resize(had + kOutStep);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + had);
    z.avail_out = static_cast<uInt>(kOutStep);
    const int rc = deflate(&z, flush);
    out.resize(out.size() - z.avail_out);
    if (rc == Z_STREAM_ERROR) return false;
    if (rc == Z_STREAM_END) return flush == Z_FINISH;
    // Room left over: the input all taken, or a flush all written (a
    // finish never stops so).
    if (z.avail_out > 0) return z.avail_in == 0 && flush != Z_FINISH;
  }
}

// Where a piece's bytes are: in memory, or in a file, read a chunk at a
// time (a memfd of histd's, whose pages the exporter then never maps).
struct Source {
  std::string_view memory;
  int fd = -1;
  size_t offset = 0;
  size_t size = 0;
};
constexpr size_t kChunk = 256 << 10;

// A piece as raw deflate blocks in `out` and its CRC-32 in `crc`: the last
// piece's end the stream's, any other's a sync flush (byte-aligned, not
// final), after which the next piece's blocks follow as pigz's do.
bool deflate_piece(const Source& in, bool last, std::string& out, uLong& crc) {
  z_stream z{};
  if (deflateInit2(&z, kLevel, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  std::string buffer(in.fd >= 0 ? std::min(kChunk, in.size) : 0, '\0');
  bool ok = true;
  crc = crc32(0, nullptr, 0);
  for (size_t done = 0; ok && done < in.size;) {
    std::string_view chunk;
    if (in.fd < 0) {
      chunk = in.memory.substr(done);
    } else {
      const ssize_t n =
          pread(in.fd, buffer.data(), std::min(buffer.size(), in.size - done), static_cast<off_t>(in.offset + done));
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      chunk = std::string_view(buffer.data(), n > 0 ? static_cast<size_t>(n) : 0);
    }
    crc = crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size()));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z.avail_in = static_cast<uInt>(chunk.size());
    ok = ok && pump(z, Z_NO_FLUSH, out);
    done += chunk.size();
  }
  ok = ok && pump(z, last ? Z_FINISH : Z_SYNC_FLUSH, out);
  deflateEnd(&z);
  return ok;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The pieces compressed at once, one a thread, in one gzip stream.
std::optional<std::string> gzip_pieces(const std::vector<Source>& sources) {
  const size_t n = sources.size();
  struct Piece {
    std::string out;
    uLong crc = 0;
    bool ok = false;
  };
  std::vector<Piece> pieces(n);
  auto pack = [&](size_t i) { pieces[i].ok = deflate_piece(sources[i], i + 1 == n, pieces[i].out, pieces[i].crc); };
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 1; i < n; ++i) {
    try {
      threads.emplace_back(pack, i);
    } catch (const std::system_error&) {
      pack(i);  // no thread to be had: here, in turn
    }
  }
  pack(0);
  for (std::thread& t : threads) t.join();
  // gzip's header as zlib writes it (level 1: XFL 4, "fastest"; OS 3, Unix),
  // the pieces, the CRC-32 and size of the whole.
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03", 10);
  uLong crc = crc32(0, nullptr, 0);
  size_t size = 0, packed = 0;
  for (const Piece& p : pieces) packed += p.out.size();
  out.reserve(out.size() + packed + 8);
  for (size_t i = 0; i < n; ++i) {
    if (!pieces[i].ok) return std::nullopt;
    out += pieces[i].out;
    crc = crc32_combine(crc, pieces[i].crc, static_cast<z_off_t>(sources[i].size));
    size += sources[i].size;
  }
  put_le32(out, static_cast<uint32_t>(crc));
  put_le32(out, static_cast<uint32_t>(size));
  return out;
}

// `size` bytes in `n` pieces (one at least, one a byte at most).
std::vector<Source> split(size_t size, size_t n, const Source& whole) {
  n = std::clamp<size_t>(n, 1, std::max<size_t>(size, 1));
  std::vector<Source> pieces(n, whole);
  for (size_t i = 0; i < n; ++i) {
    pieces[i].offset = size / n * i;
    pieces[i].size = i + 1 < n ? size / n : size - pieces[i].offset;
    if (whole.fd < 0) pieces[i].memory = whole.memory.substr(pieces[i].offset, pieces[i].size);
  }
  return pieces;
}

size_t pieces_for(size_t size) {
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(std::min(cpus, size / kPieceFrom), 1, kMaxPieces);
}

}  // namespace

std::optional<std::string> gzip(std::string_view body) { return gzip(body, pieces_for(body.size())); }

std::optional<std::string> gzip(std::string_view body, size_t pieces) {
  if (body.size() > (uInt{1} << 30)) return std::nullopt;  // zlib counts in uInt
  return gzip_pieces(split(body.size(), pieces, Source{body, -1, 0, body.size()}));
}

std::optional<std::string> gzip_file(int fd, size_t size) { return gzip_file(fd, size, pieces_for(size)); }

std::optional<std::string> gzip_file(int fd, size_t size, size_t pieces) {
  if (size > (uInt{1} << 30)) return std::nullopt;
  return gzip_pieces(split(size, pieces, Source{{}, fd, 0, size}));
}

}  // namespace histd::exporter
