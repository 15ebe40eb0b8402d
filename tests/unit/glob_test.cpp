// SPDX-License-Identifier: GPL-2.0-only
#include <gtest/gtest.h>

#include "histd/plan.h"

namespace histd::plan {
namespace {

using Kind = GlobAtom::Kind;

TEST(Glob, SplitsAtStars) {
  StringMatch m = compile_glob("bash*");
  EXPECT_FALSE(m.leading_star);
  EXPECT_TRUE(m.trailing_star);
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_EQ(m.segments[0].size(), 4u);

  m = compile_glob("**a**b*");
  EXPECT_TRUE(m.leading_star);
  EXPECT_TRUE(m.trailing_star);
  ASSERT_EQ(m.segments.size(), 2u);
  EXPECT_EQ(m.segments[0][0].byte, 'a');
  EXPECT_EQ(m.segments[1][0].byte, 'b');

  m = compile_glob("*");
  EXPECT_TRUE(m.leading_star);
  EXPECT_TRUE(m.segments.empty());
}

TEST(Glob, ClassesAndAny) {
  StringMatch m = compile_glob("?[!]a-c][");
  ASSERT_EQ(m.segments.size(), 1u);
  const auto& seg = m.segments[0];
  ASSERT_EQ(seg.size(), 3u);
  EXPECT_EQ(seg[0].kind, Kind::Any);
  EXPECT_EQ(seg[1].kind, Kind::Class);
  EXPECT_TRUE(seg[1].negated);
  ASSERT_EQ(seg[1].ranges.size(), 2u);
  EXPECT_EQ(seg[1].ranges[0], (std::pair<uint8_t, uint8_t>{']', ']'}));
  EXPECT_EQ(seg[1].ranges[1], (std::pair<uint8_t, uint8_t>{'a', 'c'}));
  EXPECT_EQ(seg[2].kind, Kind::Literal);  // an unterminated '[' is literal
  EXPECT_EQ(seg[2].byte, '[');
}

TEST(Glob, ExactMatchIsOneLiteralSegment) {
  StringMatch m = exact_match("a*b");
  EXPECT_FALSE(m.leading_star || m.trailing_star);
  ASSERT_EQ(m.segments.size(), 1u);
  EXPECT_EQ(m.segments[0].size(), 3u);
  EXPECT_EQ(m.segments[0][1].byte, '*');
}

}  // namespace
}  // namespace histd::plan
