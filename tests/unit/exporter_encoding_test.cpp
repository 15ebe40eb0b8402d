// SPDX-License-Identifier: GPL-2.0-only
// histd-exporter's gzip: which Accept-Encoding headers allow it, and that
// what it makes is gzip that zlib reads back. Without root.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <string>

#include "histd-exporter/encoding.h"

namespace histd::exporter {
namespace {

TEST(ExporterEncoding, WhichHeadersAllowGzip) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate"));  // Prometheus's
  EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("br, *"));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=x"));
  EXPECT_FALSE(accepts_gzip("gzipped"));
}

// zlib's inflate checks the trailer too: a wrong CRC-32 or size fails it.
std::string gunzip(const std::string& packed, size_t size) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string back(size + 1, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  EXPECT_EQ(z.avail_in, 0u) << "nothing after the trailer";
  back.resize(back.size() - z.avail_out);
  inflateEnd(&z);
  return back;
}

std::string scrape_text(int series) {
  std::string body;
  for (int i = 0; i < series; ++i) body += "histd_sizes_bytes_req_bucket{common_pid=\"" + std::to_string(i) + "\"} 1\n";
  return body;
}

TEST(ExporterEncoding, GzipIsReadBackWhole) {
  const std::string body = scrape_text(20000);
  const std::optional<std::string> packed = gzip(body);
  ASSERT_TRUE(packed);
  EXPECT_LT(packed->size(), body.size() / 4);
  ASSERT_GE(packed->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*packed)[0]), 0x1f) << "gzip's magic";
  EXPECT_EQ(static_cast<unsigned char>((*packed)[1]), 0x8b);
  EXPECT_EQ(gunzip(*packed, body.size()), body);
}

// zlib's own gzip of a body, in one call.
std::string zlib_gzip(const std::string& body) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, body.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// In one piece, the very bytes zlib's gzip makes: header, blocks, trailer.
TEST(ExporterEncoding, GzipInOnePieceIsZlibsOwn) {
  const std::string body = scrape_text(20000);
  EXPECT_EQ(gzip(body, 1), zlib_gzip(body));
  EXPECT_EQ(gzip("", 1), zlib_gzip(""));
}

// A big body compressed in pieces is one gzip stream all the same, whose
// pieces' blocks follow one another; as small as in one piece, nearly.
TEST(ExporterEncoding, GzipInPiecesIsReadBackWhole) {
  const std::string body = scrape_text(60000);  // ~3 MB, with a piece's end mid-line
  const std::optional<std::string> whole = gzip(body, 1);
  ASSERT_TRUE(whole);
  for (size_t pieces : {2, 3, 4}) {
    const std::optional<std::string> packed = gzip(body, pieces);
    ASSERT_TRUE(packed) << pieces;
    EXPECT_EQ(gunzip(*packed, body.size()), body) << pieces << " pieces";
    EXPECT_LT(packed->size(), whole->size() * 21 / 20) << pieces << " pieces";
  }
  EXPECT_EQ(gunzip(*gzip(body), body.size()), body) << "as many pieces as CPUs";
  EXPECT_EQ(gunzip(*gzip("x", 4), 1), "x") << "never more pieces than bytes";
  EXPECT_EQ(gunzip(*gzip("", 2), 0), "");
}

// histd's answer comes as a memfd: compressed from it a chunk at a time,
// it is the same gzip as from memory, piece for piece.
TEST(ExporterEncoding, GzipOfAFileIsTheGzipOfItsBytes) {
  const std::string body = scrape_text(60000);
  const int fd = memfd_create("hx-scrape-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  for (size_t pieces : {1, 2, 3}) EXPECT_EQ(gzip_file(fd, body.size(), pieces), gzip(body, pieces)) << pieces;
  EXPECT_EQ(gzip_file(fd, body.size(), 1), zlib_gzip(body));
  EXPECT_EQ(gunzip(*gzip_file(fd, body.size()), body.size()), body);
  EXPECT_EQ(gzip_file(fd, 100, 1), zlib_gzip(body.substr(0, 100))) << "the first `size` bytes";
  EXPECT_FALSE(gzip_file(fd, body.size() + 1, 1)) << "a file shorter than it should be";
  close(fd);
}

}  // namespace
}  // namespace histd::exporter
