// SPDX-License-Identifier: GPL-2.0-only
// histd-exporter's gzip: which Accept-Encoding headers allow it, and that
// what it makes is gzip that zlib reads back. Without root.
#include <gtest/gtest.h>
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

TEST(ExporterEncoding, GzipIsReadBackWhole) {
  std::string body;
  for (int i = 0; i < 20000; ++i) body += "histd_sizes_bytes_req_bucket{common_pid=\"" + std::to_string(i) + "\"} 1\n";
  const std::optional<std::string> packed = gzip(body);
  ASSERT_TRUE(packed);
  EXPECT_LT(packed->size(), body.size() / 4);
  ASSERT_GE(packed->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*packed)[0]), 0x1f) << "gzip's magic";
  EXPECT_EQ(static_cast<unsigned char>((*packed)[1]), 0x8b);
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string back(body.size(), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed->data()));
  z.avail_in = static_cast<uInt>(packed->size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  inflateEnd(&z);
  EXPECT_EQ(back, body);
}

}  // namespace
}  // namespace histd::exporter
