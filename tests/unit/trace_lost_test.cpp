// SPDX-License-Identifier: GPL-2.0-only
// Events that never reached the trace buffer (histd's ring from BPF was
// full): reported as tracefs reports lost events, a "CPU:N [LOST M EVENTS]"
// line where the gap is, and counted in the header's entries-written.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "histd/trace_buffer.h"

namespace histd::trace {
namespace {

using namespace std::chrono_literals;

std::string line(char tag) { return format_line(LineHeader{std::string(1, tag), 1, 0, 1000}, "ev", "x=1"); }

TEST(TraceBufferLost, ALostLineWhereTheGapIs) {
  TraceBuffer b(4096, true);
  b.append(line('a'));
  b.note_lost(1, 37);
  b.append(line('b'));
  EXPECT_EQ(b.lines(), line('a') + "CPU:1 [LOST 37 EVENTS]\n" + line('b'));
  // The note is no entry; the lost events were written.
  EXPECT_EQ(b.entries(), 2u);
  EXPECT_EQ(b.written(), 39u);
  EXPECT_NE(b.contents(2).find("# entries-in-buffer/entries-written: 2/39   #P:2\n"), std::string::npos);
}

TEST(TraceBufferLost, HiddenReadersSeeItToo) {
  TraceBuffer b(4096, true);
  b.note_lost(0, 1);
  EXPECT_EQ(b.lines(true), "CPU:0 [LOST 1 EVENTS]\n");
}

TEST(TraceBufferLost, TracePipeConsumesIt) {
  TraceBuffer b(4096, false);
  b.note_lost(3, 5);
  b.append(line('a'));
  EXPECT_EQ(b.consume(0ms, 4096), "CPU:3 [LOST 5 EVENTS]\n" + line('a'));
  EXPECT_EQ(b.entries(), 0u);
  EXPECT_EQ(b.lines(), "");
}

TEST(TraceBufferLost, EvictingTheNoteIsNoOverrun) {
  const std::string note = "CPU:0 [LOST 2 EVENTS]\n";
  TraceBuffer b(line('a').size() + note.size(), true);
  b.note_lost(0, 2);
  b.append(line('a'));
  b.append(line('b'));  // evicts the note and a
  EXPECT_EQ(b.lines(), line('b'));
  EXPECT_EQ(b.entries(), 1u);
  EXPECT_EQ(b.overruns(), 1u);
  EXPECT_EQ(b.written(), 4u);
}

TEST(TraceBufferLost, ClearForgetsThem) {
  TraceBuffer b(4096, true);
  b.note_lost(0, 9);
  b.clear();
  EXPECT_EQ(b.lines(), "");
  EXPECT_EQ(b.written(), 0u);
  EXPECT_EQ(b.entries(), 0u);
}

}  // namespace
}  // namespace histd::trace
