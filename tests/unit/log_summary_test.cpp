// SPDX-License-Identifier: GPL-2.0-only
// LogSummary: the first line of a kind at once, the rest counted, one line
// per kind per interval; quiet kinds forgotten.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/log_summary.h"

namespace histd {
namespace {

using namespace std::chrono_literals;

TEST(LogSummary, FirstAtOnceTheRestCountedPerInterval) {
  std::vector<std::string> out;
  LogSummary log(60s, [&](std::string_view l) { out.emplace_back(l); });
  const auto t0 = LogSummary::Clock::time_point{} + 1000s;
  for (int i = 0; i < 988; ++i) log.note("refused", "refused: 127.0.0." + std::to_string(i % 250), t0 + i * 10ms);
  log.note("other", "other: once", t0 + 1s);
  EXPECT_EQ(log.next_due(), t0 + 60s) << "the counted kind's interval ends then";
  log.flush(t0 + 59s);
  EXPECT_EQ(out, (std::vector<std::string>{"refused: 127.0.0.0", "other: once"}));
  log.flush(t0 + 60s);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(out.back(), "refused: 987 more in the last 60 s");
  // Still coming: counted into the next interval, from the last summary.
  log.note("refused", "x", t0 + 61s);
  log.flush(t0 + 100s);
  EXPECT_EQ(out.size(), 3u);
  log.flush(t0 + 120s);
  EXPECT_EQ(out.back(), "refused: 1 more in the last 60 s");
  EXPECT_EQ(log.next_due(), std::nullopt) << "nothing counted: nothing need wake";
  // Quiet for a whole interval: forgotten, so the next is written at once.
  log.flush(t0 + 200s);
  log.note("refused", "refused: again", t0 + 201s);
  EXPECT_EQ(out.back(), "refused: again");
  log.note("refused", "and again", t0 + 202s);
  log.flush_all();
  EXPECT_EQ(out.back(), "refused: 1 more in the last 60 s");
  const size_t n = out.size();
  log.flush_all();
  EXPECT_EQ(out.size(), n);
}

}  // namespace
}  // namespace histd
