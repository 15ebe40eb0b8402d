// SPDX-License-Identifier: GPL-2.0-only
// Percentiles of a bucketed key (histd/quantile.h) and the bucket bounds
// they share with the metrics (modifier::key_bounds): the kernel's .log2 and
// .buckets semantics checked value by value, the percentile list's errors,
// and the percentiles against hand-computed distributions and their edges.
#include "histd/quantile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "histd/modifier.h"

namespace histd::quantile {
namespace {

using modifier::key_bounds;
using modifier::KeyBounds;
using modifier::KeyTransform;

// The kernel's .log2 of a value: ilog2(roundup_pow_of_two(x)), 0 for 0 and 1.
uint64_t kernel_log2(uint64_t x) {
  if (x <= 1) return 0;
  if (x > (uint64_t{1} << 63)) return 64;
  return static_cast<uint64_t>(std::bit_width(std::bit_ceil(x)) - 1);
}

TEST(KeyBounds, Log2BucketsHoldExactlyTheValuesTheKernelPutsThere) {
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 0), (KeyBounds{0, 1}));
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 1), (KeyBounds{2, 2}));
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 2), (KeyBounds{3, 4}));
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 10), (KeyBounds{513, 1024}));
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 63), (KeyBounds{(uint64_t{1} << 62) + 1, uint64_t{1} << 63}));
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 64), (KeyBounds{(uint64_t{1} << 63) + 1, UINT64_MAX}));
  // Every value up to 2^16, and the edges of every power of two above.
  for (uint64_t x = 0; x <= 65536; ++x) {
    const KeyBounds b = key_bounds(KeyTransform::Log2, 0, kernel_log2(x));
    ASSERT_TRUE(b.lower <= x && x <= b.upper) << x;
  }
  for (int bit = 1; bit < 64; ++bit) {
    const uint64_t p = uint64_t{1} << bit;
    for (uint64_t x : {p - 1, p, p + 1}) {
      const uint64_t v = kernel_log2(x);
      const KeyBounds b = key_bounds(KeyTransform::Log2, 0, v);
      ASSERT_TRUE(b.lower <= x && x <= b.upper) << x;
      // Tight: the values just outside belong to the neighbouring buckets.
      if (b.lower > 0) {
        ASSERT_NE(kernel_log2(b.lower - 1), v) << x;
      }
      if (b.upper < UINT64_MAX) {
        ASSERT_NE(kernel_log2(b.upper + 1), v) << x;
      }
    }
  }
  EXPECT_EQ(kernel_log2(UINT64_MAX), 64u);
  // A stored value past 64 (not one the kernel makes) is the last bucket.
  EXPECT_EQ(key_bounds(KeyTransform::Log2, 0, 99), key_bounds(KeyTransform::Log2, 0, 64));
}

TEST(KeyBounds, BucketsOfNHoldTheNValuesFromTheKey) {
  for (uint64_t n : {1, 3, 10, 100, 1024}) {
    for (uint64_t x = 0; x < 5000; x += 7) {
      const uint64_t v = (x / n) * n;  // as the kernel stores a .buckets=N key
      const KeyBounds b = key_bounds(KeyTransform::Buckets, n, v);
      ASSERT_EQ(b.lower, v);
      ASSERT_EQ(b.upper, v + n - 1);
      ASSERT_TRUE(b.lower <= x && x <= b.upper);
    }
  }
  // The last bucket ends at 2^64-1, not past it.
  const uint64_t last = (UINT64_MAX / 1000) * 1000;
  EXPECT_EQ(key_bounds(KeyTransform::Buckets, 1000, last), (KeyBounds{last, UINT64_MAX}));
}

TEST(KeyBounds, PlainKeysAreTheirValue) {
  EXPECT_EQ(key_bounds(KeyTransform::None, 0, 42), (KeyBounds{42, 42}));
  EXPECT_EQ(key_bounds(KeyTransform::Usecs, 0, 7), (KeyBounds{7, 7}));
  EXPECT_EQ(key_bounds(KeyTransform::None, 0, UINT64_MAX), (KeyBounds{UINT64_MAX, UINT64_MAX}));
}

// ---- the list ---------------------------------------------------------------

std::vector<std::string> texts(const std::vector<Percentile>& ps) {
  std::vector<std::string> out;
  for (const Percentile& p : ps) out.push_back(p.text());
  return out;
}

TEST(PercentileList, ParsesEachItemExactly) {
  auto r = parse_list("50,90,99,99.9");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<Percentile>{{50'000'000}, {90'000'000}, {99'000'000}, {99'900'000}}));
  EXPECT_EQ(texts(*r), (std::vector<std::string>{"50", "90", "99", "99.9"}));
  r = parse_list(" 100 , 0.000001,050.50,99.999999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<Percentile>{{100'000'000}, {1}, {50'500'000}, {99'999'999}}));
  EXPECT_EQ(texts(*r), (std::vector<std::string>{"100", "0.000001", "50.5", "99.999999"}));
  EXPECT_DOUBLE_EQ((*r)[2].value(), 50.5);
  r = parse_list("90,50,90");  // the order given, repeats kept
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(texts(*r), (std::vector<std::string>{"90", "50", "90"}));
}

ListError error_of(std::string_view text) {
  auto r = parse_list(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? ListError{} : r.error();
}

TEST(PercentileList, SaysWhereAndWhy) {
  EXPECT_EQ(error_of("50,99.x"), (ListError{3, "'99.x' is not a number (a percentile such as 99.9)"}));
  EXPECT_EQ(error_of(""), (ListError{0, "no percentile given: expected a list such as 50,90,99"}));
  EXPECT_EQ(error_of("  "), (ListError{0, "no percentile given: expected a list such as 50,90,99"}));
  EXPECT_EQ(error_of("50,,90"), (ListError{3, "an empty item: expected a percentile such as 99.9"}));
  EXPECT_EQ(error_of("50,"), (ListError{3, "an empty item: expected a percentile such as 99.9"}));
  EXPECT_EQ(error_of("0"), (ListError{0, "'0' is not in (0, 100]"}));
  EXPECT_EQ(error_of("0.0"), (ListError{0, "'0.0' is not in (0, 100]"}));
  EXPECT_EQ(error_of("50, 100.000001"), (ListError{4, "'100.000001' is not in (0, 100]"}));
  EXPECT_EQ(error_of("101"), (ListError{0, "'101' is not in (0, 100]"}));
  EXPECT_EQ(error_of("99999999999999999999999"), (ListError{0, "'99999999999999999999999' is not in (0, 100]"}));
  EXPECT_EQ(error_of("-5"), (ListError{0, "'-5' is not in (0, 100]"}));
  EXPECT_EQ(error_of("99.9999999"), (ListError{0, "'99.9999999' has more than 6 decimals"}));
  for (std::string_view bad : {"p99", "99.", ".5", "1e2", "+5", "9 9", "50;90", "0x10", "nan"})
    EXPECT_EQ(error_of(bad).message, fmt::format("'{}' is not a number (a percentile such as 99.9)", bad)) << bad;
}

// ---- the percentiles --------------------------------------------------------

const std::vector<Percentile> kStandard = {{50'000'000}, {90'000'000}, {99'000'000}, {100'000'000}};

std::vector<Row> unlabelled(std::initializer_list<std::pair<uint64_t, uint64_t>> key_hits) {
  std::vector<Row> rows;
  for (auto [k, h] : key_hits) rows.push_back(Row{"", k, h});
  return rows;
}

TEST(Percentiles, Log2HandComputed) {
  // 900 hits in 2^11 [1025, 2048], 90 in 2^12 [2049, 4096], 10 in 2^13 [4097, 8192];
  // rows in any order (a table sorted by hitcount).
  const auto rows = unlabelled({{13, 10}, {12, 90}, {11, 900}});
  const Scale log2{KeyTransform::Log2, 0, false};
  const std::vector<Percentile> ps = {{50'000'000}, {90'000'000}, {95'000'000}, {99'500'000}, {100'000'000}};
  const auto sets = percentiles(rows, log2, ps);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].hits, 1000u);
  ASSERT_EQ(sets[0].estimates.size(), 5u);
  const auto& e = sets[0].estimates;
  // p50: rank 500 of the bucket's 900 from 1025 to 2048.
  EXPECT_EQ(e[0].bucket, (KeyBounds{1025, 2048}));
  EXPECT_FALSE(e[0].exact);
  EXPECT_NEAR(e[0].estimate, 1025 + 500.0 / 900 * 1023, 1e-9);
  // p90: rank 900, exactly the bucket's last hit: its upper bound.
  EXPECT_EQ(e[1].bucket, (KeyBounds{1025, 2048}));
  EXPECT_NEAR(e[1].estimate, 2048, 1e-9);
  // p95: rank 950, 50 of the next bucket's 90.
  EXPECT_EQ(e[2].bucket, (KeyBounds{2049, 4096}));
  EXPECT_NEAR(e[2].estimate, 2049 + 50.0 / 90 * 2047, 1e-9);
  // p99.5: rank 995, 5 of the last bucket's 10; p100 its upper bound.
  EXPECT_EQ(e[3].bucket, (KeyBounds{4097, 8192}));
  EXPECT_NEAR(e[3].estimate, 4097 + 0.5 * 4095, 1e-9);
  EXPECT_EQ(e[4].bucket, (KeyBounds{4097, 8192}));
  EXPECT_NEAR(e[4].estimate, 8192, 1e-9);
  EXPECT_EQ(e[3].percentile, (Percentile{99'500'000}));
}

TEST(Percentiles, RankComparedExactly) {
  // 10 hits: p10 is the first value, p10.000001 the second; 3 hits: p33.333333 is the first, p33.333334 the second.
  const Scale plain{};
  auto sets = percentiles(unlabelled({{1, 1}, {2, 1}, {3, 8}}), plain,
                          std::vector<Percentile>{{10'000'000}, {10'000'001}, {20'000'000}, {20'000'001}});
  ASSERT_EQ(sets[0].estimates.size(), 4u);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 1u);
  EXPECT_EQ(sets[0].estimates[1].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[2].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[3].bucket.lower, 3u);
  sets = percentiles(unlabelled({{1, 1}, {2, 1}, {3, 1}}), plain,
                     std::vector<Percentile>{{33'333'333}, {33'333'334}, {66'666'666}, {66'666'667}});
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 1u);
  EXPECT_EQ(sets[0].estimates[1].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[2].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[3].bucket.lower, 3u);
}

TEST(Percentiles, PlainKeysAreExact) {
  // fds 4097..4106, one hit each: p50 is the 5th (4101), p100 the last.
  std::vector<Row> rows;
  for (uint64_t fd = 4106; fd >= 4097; --fd) rows.push_back(Row{"", fd, 1});
  const auto sets = percentiles(rows, Scale{}, kStandard);
  ASSERT_EQ(sets[0].estimates.size(), 4u);
  for (const Estimate& e : sets[0].estimates) {
    EXPECT_TRUE(e.exact);
    EXPECT_EQ(e.bucket.lower, e.bucket.upper);
    EXPECT_EQ(e.estimate, static_cast<double>(e.bucket.lower));
  }
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 4101u);
  EXPECT_EQ(sets[0].estimates[1].bucket.lower, 4105u);
  EXPECT_EQ(sets[0].estimates[2].bucket.lower, 4106u);
  EXPECT_EQ(sets[0].estimates[3].bucket.lower, 4106u);
}

TEST(Percentiles, SignedPlainKeysOrderAsSigned) {
  const uint64_t minus5 = static_cast<uint64_t>(int64_t{-5});
  const auto rows = unlabelled({{3, 1}, {minus5, 2}, {0, 1}});
  const auto sets = percentiles(rows, Scale{KeyTransform::None, 0, true}, kStandard);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, minus5);  // rank 2 of 4
  EXPECT_EQ(sets[0].estimates[0].estimate, -5.0);
  EXPECT_EQ(sets[0].estimates[1].estimate, 3.0);
  // Unsigned, the same bit pattern is the largest.
  const auto as_unsigned = percentiles(rows, Scale{}, kStandard);
  EXPECT_EQ(as_unsigned[0].estimates[0].bucket.lower, 3u);
  EXPECT_EQ(as_unsigned[0].estimates[3].bucket.lower, minus5);
}

TEST(Percentiles, BucketsOfN) {
  // .buckets=100: 75 in 1000-1099, 100 in each of 1100..1800, 25 in 1900-1999 (fds 1025..1924).
  std::vector<Row> rows{Row{"", 1000, 75}};
  for (uint64_t b = 1100; b <= 1800; b += 100) rows.push_back(Row{"", b, 100});
  rows.push_back(Row{"", 1900, 25});
  const auto sets = percentiles(rows, Scale{KeyTransform::Buckets, 100, false}, kStandard);
  const auto& e = sets[0].estimates;
  EXPECT_EQ(sets[0].hits, 900u);
  EXPECT_EQ(e[0].bucket, (KeyBounds{1400, 1499}));  // rank 450: 375 before it
  EXPECT_NEAR(e[0].estimate, 1400 + 75.0 / 100 * 99, 1e-9);
  EXPECT_EQ(e[1].bucket, (KeyBounds{1800, 1899}));  // rank 810: 775 before it
  EXPECT_NEAR(e[1].estimate, 1800 + 35.0 / 100 * 99, 1e-9);
  EXPECT_EQ(e[2].bucket, (KeyBounds{1900, 1999}));  // rank 891: 875 before it
  EXPECT_NEAR(e[2].estimate, 1900 + 16.0 / 25 * 99, 1e-9);
  EXPECT_NEAR(e[3].estimate, 1999, 1e-9);
  // .buckets=1 holds one value: exact.
  const auto ones = percentiles(unlabelled({{7, 3}}), Scale{KeyTransform::Buckets, 1, false}, kStandard);
  EXPECT_TRUE(ones[0].estimates[0].exact);
  EXPECT_EQ(ones[0].estimates[0].estimate, 7.0);
}

TEST(Percentiles, OneBucketAndOneValueBuckets) {
  // Every percentile in the one bucket; the estimate moves through it.
  const auto sets = percentiles(unlabelled({{10, 4}}), Scale{KeyTransform::Log2, 0, false}, kStandard);
  for (const Estimate& e : sets[0].estimates) EXPECT_EQ(e.bucket, (KeyBounds{513, 1024}));
  EXPECT_NEAR(sets[0].estimates[0].estimate, 513 + 0.5 * 511, 1e-9);
  EXPECT_NEAR(sets[0].estimates[3].estimate, 1024, 1e-9);
  // 2^1 holds 2 alone: exact; 2^0 holds 0 and 1: an estimate.
  const auto small = percentiles(unlabelled({{0, 2}, {1, 2}}), Scale{KeyTransform::Log2, 0, false}, kStandard);
  EXPECT_EQ(small[0].estimates[0].bucket, (KeyBounds{0, 1}));
  EXPECT_FALSE(small[0].estimates[0].exact);
  EXPECT_NEAR(small[0].estimates[0].estimate, 1, 1e-9);
  EXPECT_EQ(small[0].estimates[1].bucket, (KeyBounds{2, 2}));
  EXPECT_TRUE(small[0].estimates[1].exact);
  EXPECT_EQ(small[0].estimates[1].estimate, 2.0);
}

TEST(Percentiles, LabelSetsInTheOrderTheyAppear) {
  const std::vector<Row> rows = {{"b", 5, 3}, {"a", 1, 1}, {"b", 6, 1}, {"zero", 9, 0}, {"a", 2, 3}};
  const auto sets = percentiles(rows, Scale{}, std::vector<Percentile>{{50'000'000}});
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].labels, "b");
  EXPECT_EQ(sets[0].hits, 4u);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 5u);
  EXPECT_EQ(sets[1].labels, "a");
  EXPECT_EQ(sets[1].estimates[0].bucket.lower, 2u);
  // A label set with no hits (an entry whose count did not change): no percentiles.
  EXPECT_EQ(sets[2].labels, "zero");
  EXPECT_EQ(sets[2].hits, 0u);
  EXPECT_TRUE(sets[2].estimates.empty());
}

TEST(Percentiles, ZeroHitBucketsAreSkipped) {
  // A bucket without hits (in an interval's deltas) never holds a percentile.
  const auto sets = percentiles(unlabelled({{1, 0}, {2, 5}, {3, 0}, {4, 5}, {5, 0}}), Scale{}, kStandard);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[1].bucket.lower, 4u);
  EXPECT_EQ(sets[0].estimates[3].bucket.lower, 4u);
}

TEST(Percentiles, RepeatedKeysAddUp) {
  const auto sets = percentiles(unlabelled({{1, 2}, {2, 1}, {1, 2}}), Scale{}, std::vector<Percentile>{{80'000'000}});
  EXPECT_EQ(sets[0].hits, 5u);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 1u);  // 4 of 5 at 1
}

TEST(Percentiles, EmptyTableAndNoPercentiles) {
  EXPECT_TRUE(percentiles({}, Scale{}, kStandard).empty());
  const auto sets = percentiles(unlabelled({{1, 1}}), Scale{}, {});
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_TRUE(sets[0].estimates.empty());
}

TEST(Percentiles, HugeCountsStayExact) {
  // Totals past 2^64 in the comparison: the ranks are compared in 128 bits.
  const uint64_t big = UINT64_MAX / 2;
  // 2^63-1, 2^63-1 and 2: 2^64 hits, shown as 2^64-1; the rank of p50 is 2^63, one past the first bucket.
  const auto sets = percentiles(unlabelled({{1, big}, {2, big}, {3, 2}}), Scale{},
                                std::vector<Percentile>{{49'990'000}, {50'000'000}, {100'000'000}});
  EXPECT_EQ(sets[0].hits, UINT64_MAX);
  EXPECT_EQ(sets[0].estimates[0].bucket.lower, 1u);
  EXPECT_EQ(sets[0].estimates[1].bucket.lower, 2u);
  EXPECT_EQ(sets[0].estimates[2].bucket.lower, 3u);
  const auto top =
      percentiles(unlabelled({{64, 3}}), Scale{KeyTransform::Log2, 0, false}, std::vector<Percentile>{{100'000'000}});
  EXPECT_EQ(top[0].estimates[0].bucket.upper, UINT64_MAX);
  EXPECT_TRUE(std::isfinite(top[0].estimates[0].estimate));
}

}  // namespace
}  // namespace histd::quantile
