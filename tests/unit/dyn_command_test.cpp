// SPDX-License-Identifier: GPL-2.0-only
// dynamic_events lines for synthetic events (synth::parse_dyn_command), as
// the kernel's create_synth_event() and dyn_event_release() take them.
#include <gtest/gtest.h>

#include "histd/synth.h"

namespace histd {
namespace {

using synth::DynCommand;
using Kind = DynCommand::Kind;

DynCommand ok(std::string_view line) {
  auto r = synth::parse_dyn_command(line);
  EXPECT_TRUE(r.ok()) << line;
  return r.ok() ? *r : DynCommand{};
}

TEST(DynCommand, CreatesWithOrWithoutTheGroup) {
  EXPECT_EQ(ok("s:synthetic/lat u64 lat; pid_t pid").line, "lat u64 lat; pid_t pid");
  EXPECT_EQ(ok("  s:lat\tu64 lat \n").line, "lat u64 lat");
  EXPECT_EQ(ok("s:lat u64 lat").kind, Kind::Create);
}

TEST(DynCommand, RemovesWithDashOrBang) {
  const DynCommand a = ok("-:synthetic/lat");
  EXPECT_EQ(a.kind, Kind::Remove);
  EXPECT_EQ(a.line, "!lat");
  EXPECT_FALSE(a.other_group);
  EXPECT_EQ(ok("-:lat u64 lat").line, "!lat");
  EXPECT_EQ(ok("!s:synthetic/lat").line, "!lat");
  EXPECT_TRUE(ok("-:junk/lat").other_group);
}

TEST(DynCommand, OtherKindsAndNothing) {
  EXPECT_EQ(ok("").kind, Kind::Empty);
  EXPECT_EQ(ok("  \t").kind, Kind::Empty);
  EXPECT_EQ(ok("p:myprobe do_sys_open").kind, Kind::Other);
  EXPECT_EQ(ok("e:ep sched.sched_switch").kind, Kind::Other);
  EXPECT_EQ(ok("-lat").kind, Kind::Other);  // '-' without ':'
  EXPECT_EQ(ok("-:").kind, Kind::Other);
  EXPECT_EQ(ok("!lat").kind, Kind::Other);  // '!' needs a ':'
}

TEST(DynCommand, TheKernelsErrors) {
  auto no_fields = synth::parse_dyn_command("s:lat");
  ASSERT_FALSE(no_fields.ok());
  EXPECT_EQ(no_fields.error().code, ErrorCode::SynthInvalidCmd);
  EXPECT_EQ(no_fields.error().span.begin, 0u);
  auto group = synth::parse_dyn_command("s:junk/myevent char str[");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().code, ErrorCode::SynthInvalidDynCmd);
  EXPECT_EQ(group.error().command, "s:junk/myevent char str[");
  // The kernel looks for '/' anywhere after "s:", fields included.
  EXPECT_EQ(synth::parse_dyn_command("s:lat char a/b").error().code, ErrorCode::SynthInvalidDynCmd);
}

}  // namespace
}  // namespace histd
