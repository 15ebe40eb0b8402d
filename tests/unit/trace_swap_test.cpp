// SPDX-License-Identifier: GPL-2.0-only
// The snapshot swap (TraceBuffer::swap): the kernel's update_max_tr() trades
// the live buffer and the snapshot buffer, so `trace` goes on in what was the
// snapshot (its old lines kept) and `snapshot` holds what was traced. O(1):
// a full buffer swaps as fast as an empty one.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "histd/trace_buffer.h"

namespace histd::trace {
namespace {

using namespace std::chrono_literals;

std::string sized(char tag, size_t n) { return std::string(1, tag) + std::string(n - 2, '.') + "\n"; }

TEST(TraceBufferSwap, TradesLinesAndCountersNothingCleared) {
  TraceBuffer trace(100, true), snapshot(100, true);
  trace.append(sized('a', 10));
  trace.append(sized('b', 10));
  snapshot.append(sized('s', 10));
  trace.swap(snapshot);
  // The snapshot holds what was traced; tracing goes on in the old spare.
  EXPECT_EQ(snapshot.lines(), sized('a', 10) + sized('b', 10));
  EXPECT_EQ(snapshot.written(), 2u);
  EXPECT_EQ(trace.lines(), sized('s', 10));
  EXPECT_EQ(trace.written(), 1u);
  trace.append(sized('c', 10));
  EXPECT_EQ(trace.lines(), sized('s', 10) + sized('c', 10));
  EXPECT_NE(trace.contents(2).find("entries-written: 2/2   #P:2\n"), std::string::npos);
  // A second swap trades them back.
  trace.swap(snapshot);
  EXPECT_EQ(trace.lines(), sized('a', 10) + sized('b', 10));
  EXPECT_EQ(snapshot.lines(), sized('s', 10) + sized('c', 10));
}

TEST(TraceBufferSwap, BytesFollowTheLines) {
  TraceBuffer trace(30, true), snapshot(30, true);
  for (char c : std::string("abc")) trace.append(sized(c, 10));  // full
  trace.swap(snapshot);
  // The swapped-in buffer is empty: three lines fit before anything goes.
  for (char c : std::string("def")) trace.append(sized(c, 10));
  EXPECT_EQ(trace.overruns(), 0u);
  trace.append(sized('g', 10));
  EXPECT_EQ(trace.overruns(), 1u);
  EXPECT_EQ(trace.lines(), sized('e', 10) + sized('f', 10) + sized('g', 10));
  EXPECT_EQ(snapshot.lines(), sized('a', 10) + sized('b', 10) + sized('c', 10));
  EXPECT_EQ(snapshot.overruns(), 0u);
}

TEST(TraceBufferSwap, WakesATracePipeReader) {
  TraceBuffer trace(100, true), snapshot(100, true);
  snapshot.append(sized('s', 10));
  std::thread swapper([&] {
    std::this_thread::sleep_for(50ms);
    trace.swap(snapshot);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto got = trace.consume(10s, 100);
  const auto waited = std::chrono::steady_clock::now() - start;
  swapper.join();
  EXPECT_EQ(got, sized('s', 10));
  EXPECT_LT(waited, 5s);
}

// The engine swaps on every snapshot() action, under load as often as
// events come: a full 4 MiB buffer must cost what an empty one does. The
// bound is generous (copying 4 MiB ten thousand times takes seconds).
TEST(TraceBufferSwap, AFullBufferSwapsInConstantTime) {
  constexpr size_t kCapacity = size_t{4} << 20;
  TraceBuffer trace(kCapacity, true), snapshot(kCapacity, true);
  const std::string line = sized('x', 100);
  for (size_t i = 0; i < kCapacity / line.size(); ++i) trace.append(line);
  ASSERT_EQ(trace.overruns(), 0u);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) trace.swap(snapshot);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(trace.entries(), kCapacity / line.size());  // an even number of swaps
  EXPECT_EQ(snapshot.entries(), 0u);
}

}  // namespace
}  // namespace histd::trace
