// SPDX-License-Identifier: GPL-2.0-only
// engine::ActivationTimes: which bucket a trigger change's time falls in.
#include <gtest/gtest.h>

#include <chrono>

#include "histd/engine.h"

namespace histd {
namespace {

using engine::ActivationTimes;
using std::chrono::duration;

TEST(ActivationTimes, EachTimeInTheFirstBucketWhoseBoundHoldsIt) {
  ActivationTimes t;
  t.add(duration<double>(0.001));  // up to 5 ms
  t.add(duration<double>(0.005));  // a bound holds its own value
  t.add(duration<double>(0.0051));
  t.add(duration<double>(0.3));
  t.add(duration<double>(60));  // past every bound
  EXPECT_EQ(t.counts[0], 2u);
  EXPECT_EQ(t.counts[1], 1u);
  EXPECT_EQ(t.counts[6], 1u);  // (0.25, 0.5]
  EXPECT_EQ(t.counts.back(), 1u);
  uint64_t all = 0;
  for (uint64_t c : t.counts) all += c;
  EXPECT_EQ(all, 5u);
  EXPECT_NEAR(t.sum_seconds, 60.3111, 1e-9);
}

TEST(ActivationTimes, NoneAtFirst) {
  const ActivationTimes t;
  for (uint64_t c : t.counts) EXPECT_EQ(c, 0u);
  EXPECT_EQ(t.sum_seconds, 0);
}

}  // namespace
}  // namespace histd
