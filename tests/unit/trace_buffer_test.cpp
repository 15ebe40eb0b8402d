// SPDX-License-Identifier: GPL-2.0-only
// The trace buffer: the kernel's trace line and `trace` header byte for byte,
// overwrite vs drop when full, overrun counts, clear, and trace_pipe-style
// consumption (timeouts, byte limits, wakeups from a producer thread).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "histd/render.h"
#include "histd/trace_buffer.h"

namespace histd::trace {
namespace {

using namespace std::chrono_literals;

std::string line(const std::string& comm, uint32_t pid, uint32_t cpu, uint64_t ts_ns) {
  return format_line(LineHeader{comm, pid, cpu, ts_ns}, "ev", "x=1");
}

// A line of exactly n bytes, '\n' included, distinguishable by its first char.
std::string sized(char tag, size_t n) { return std::string(1, tag) + std::string(n - 2, '.') + "\n"; }

TEST(TraceBufferLine, KernelDefaultLine) {
  EXPECT_EQ(format_line(LineHeader{"bash", 1234, 1, 123456789000}, "wakeup_latency", "lat=24 pid=123 prio=120"),
            "            bash-1234    [001] .....   123.456789: wakeup_latency: lat=24 pid=123 prio=120\n");
}

TEST(TraceBufferLine, CommIsRightAlignedInSixteen) {
  EXPECT_EQ(line("<idle>", 0, 0, 0), "          <idle>-0       [000] .....     0.000000: ev: x=1\n");
  EXPECT_EQ(line("exactly16charsxx", 7, 0, 0), "exactly16charsxx-7       [000] .....     0.000000: ev: x=1\n");
  // Longer names are printed whole, pushing the rest of the line right.
  EXPECT_EQ(line("a_name_longer_than_16", 7, 0, 0),
            "a_name_longer_than_16-7       [000] .....     0.000000: ev: x=1\n");
  // An unknown comm prints as the kernel's placeholder.
  EXPECT_EQ(line("", 42, 0, 0), "           <...>-42      [000] .....     0.000000: ev: x=1\n");
}

TEST(TraceBufferLine, CommPaddingCountsBytes) {
  // "\xc3\xa9" is one character but two bytes; %16s pads by bytes.
  const std::string out = line("caf\xc3\xa9", 1, 0, 0);
  EXPECT_EQ(out.substr(0, 17), std::string(11, ' ') + "caf\xc3\xa9-");
}

TEST(TraceBufferLine, PidIsLeftAlignedInSeven) {
  EXPECT_EQ(line("t", 1, 0, 0).substr(16), "-1       [000] .....     0.000000: ev: x=1\n");
  EXPECT_EQ(line("t", 1234567, 0, 0).substr(16), "-1234567 [000] .....     0.000000: ev: x=1\n");
  EXPECT_EQ(line("t", 12345678, 0, 0).substr(16), "-12345678 [000] .....     0.000000: ev: x=1\n");
}

TEST(TraceBufferLine, CpuInThreeDigits) {
  EXPECT_EQ(line("t", 1, 7, 0).substr(25, 5), "[007]");
  EXPECT_EQ(line("t", 1, 123, 0).substr(25, 5), "[123]");
  EXPECT_EQ(line("t", 1, 1234, 0).substr(25, 6), "[1234]");
}

TEST(TraceBufferLine, TimestampRoundsToTheNearestMicrosecond) {
  auto ts = [](uint64_t ns) {
    const std::string l = line("t", 1, 0, ns);
    const size_t start = l.find("] ..... ") + 8;
    return l.substr(start, l.find(": ev") - start);
  };
  EXPECT_EQ(ts(0), "    0.000000");
  EXPECT_EQ(ts(499), "    0.000000");
  EXPECT_EQ(ts(500), "    0.000001");
  EXPECT_EQ(ts(1'234'567'890), "    1.234568");
  EXPECT_EQ(ts(1'999'999'499), "    1.999999");
  EXPECT_EQ(ts(1'999'999'500), "    2.000000");  // the rounding carries into the seconds
  EXPECT_EQ(ts(31769'606929'000), "31769.606929");
  EXPECT_EQ(ts(123456'000001'000), "123456.000001");  // wider than %5lu: not cut
}

TEST(TraceBufferLine, EmptyBody) {
  EXPECT_EQ(format_line(LineHeader{"t", 1, 0, 0}, "ev", ""),
            "               t-1       [000] .....     0.000000: ev: \n");
}

TEST(TraceBufferHeader, EmptyBufferIsTheNopHeader) {
  TraceBuffer b(4096, true);
  EXPECT_EQ(b.contents(4),
            "# tracer: nop\n"
            "#\n"
            "# entries-in-buffer/entries-written: 0/0   #P:4\n"
            "#\n"
            "#                                _-----=> irqs-off/BH-disabled\n"
            "#                               / _----=> need-resched\n"
            "#                              | / _---=> hardirq/softirq\n"
            "#                              || / _--=> preempt-depth\n"
            "#                              ||| / _-=> migrate-disable\n"
            "#                              |||| /     delay\n"
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
            "#              | |         |   |||||     |         |\n");
  EXPECT_EQ(b.lines(), "");
}

TEST(TraceBufferHeader, CountsAndLinesFollow) {
  TraceBuffer b(4096, true);
  const std::string l1 = line("a", 1, 0, 1000);
  const std::string l2 = line("b", 2, 1, 2000);
  b.append(l1);
  b.append(l2);
  const std::string c = b.contents(8);
  EXPECT_NE(c.find("# entries-in-buffer/entries-written: 2/2   #P:8\n"), std::string::npos) << c;
  EXPECT_TRUE(c.ends_with("#              | |         |   |||||     |         |\n" + l1 + l2)) << c;
  EXPECT_EQ(b.lines(), l1 + l2);
  EXPECT_EQ(b.entries(), 2u);
  EXPECT_EQ(b.written(), 2u);
  EXPECT_EQ(b.overruns(), 0u);
}

TEST(TraceBufferHeader, OverwrittenLinesCountAsWritten) {
  TraceBuffer b(20, true);
  for (char c : std::string("abcde")) b.append(sized(c, 10));
  EXPECT_NE(b.contents(1).find("entries-in-buffer/entries-written: 2/5   #P:1\n"), std::string::npos);
}

TEST(TraceBufferOverwrite, OldestLinesMakeRoom) {
  TraceBuffer b(30, true);
  EXPECT_EQ(b.capacity(), 30u);
  for (char c : std::string("abcd")) b.append(sized(c, 10));
  EXPECT_EQ(b.lines(), sized('b', 10) + sized('c', 10) + sized('d', 10));
  EXPECT_EQ(b.entries(), 3u);
  EXPECT_EQ(b.written(), 4u);
  EXPECT_EQ(b.overruns(), 1u);
}

TEST(TraceBufferOverwrite, ABigLineEvictsSeveralSmallOnes) {
  TraceBuffer b(30, true);
  for (char c : std::string("abc")) b.append(sized(c, 10));
  b.append(sized('X', 25));  // needs 25 bytes: all three lines go
  EXPECT_EQ(b.lines(), sized('X', 25));
  EXPECT_EQ(b.overruns(), 3u);
  b.append(sized('y', 5));  // fits beside it: 30 bytes exactly
  EXPECT_EQ(b.lines(), sized('X', 25) + sized('y', 5));
  EXPECT_EQ(b.overruns(), 3u);
}

TEST(TraceBufferDrop, NewLinesAreDroppedWhenFull) {
  TraceBuffer b(30, false);
  for (char c : std::string("abcd")) b.append(sized(c, 10));
  EXPECT_EQ(b.lines(), sized('a', 10) + sized('b', 10) + sized('c', 10));
  EXPECT_EQ(b.entries(), 3u);
  EXPECT_EQ(b.written(), 4u);
  EXPECT_EQ(b.overruns(), 1u);
  // A smaller line that still fits is kept.
  TraceBuffer s(25, false);
  s.append(sized('a', 10));
  s.append(sized('b', 10));
  s.append(sized('c', 10));  // 30 > 25: dropped
  s.append(sized('d', 5));   // 25: fits
  EXPECT_EQ(s.lines(), sized('a', 10) + sized('b', 10) + sized('d', 5));
  EXPECT_EQ(s.overruns(), 1u);
}

TEST(TraceBufferDrop, ALineLargerThanTheBufferIsDroppedInBothModes) {
  for (bool overwrite : {true, false}) {
    TraceBuffer b(30, overwrite);
    b.append(sized('a', 10));
    b.append(sized('X', 31));
    EXPECT_EQ(b.lines(), sized('a', 10)) << overwrite;
    EXPECT_EQ(b.overruns(), 1u) << overwrite;
    EXPECT_EQ(b.written(), 2u) << overwrite;
  }
  TraceBuffer zero(0, true);
  zero.append("x\n");
  EXPECT_EQ(zero.entries(), 0u);
  EXPECT_EQ(zero.overruns(), 1u);
}

TEST(TraceBufferClear, EmptiesAndRestartsCounters) {
  for (bool overwrite : {true, false}) {
    TraceBuffer b(20, overwrite);
    for (char c : std::string("abc")) b.append(sized(c, 10));
    ASSERT_EQ(b.overruns(), 1u);
    b.clear();
    EXPECT_EQ(b.lines(), "");
    EXPECT_EQ(b.entries(), 0u);
    EXPECT_EQ(b.written(), 0u);
    EXPECT_EQ(b.overruns(), 0u);
    EXPECT_NE(b.contents(2).find("entries-written: 0/0   #P:2\n"), std::string::npos);
    // The whole capacity is available again.
    b.append(sized('d', 10));
    b.append(sized('e', 10));
    EXPECT_EQ(b.lines(), sized('d', 10) + sized('e', 10));
    EXPECT_EQ(b.overruns(), 0u);
  }
}

TEST(TraceBufferConsume, TimesOutWhenEmpty) {
  TraceBuffer b(100, true);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(b.consume(50ms, 100), std::nullopt);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(b.consume(0ms, 100), std::nullopt);
}

TEST(TraceBufferConsume, ReturnsWholeLinesUpToMaxBytes) {
  TraceBuffer b(100, true);
  for (char c : std::string("abcd")) b.append(sized(c, 10));
  EXPECT_EQ(b.consume(0ms, 25), sized('a', 10) + sized('b', 10));  // the third would make 30
  EXPECT_EQ(b.entries(), 2u);
  EXPECT_EQ(b.written(), 4u);                                      // consuming is not un-writing
  EXPECT_EQ(b.consume(0ms, 20), sized('c', 10) + sized('d', 10));  // exactly max_bytes
  EXPECT_EQ(b.entries(), 0u);
  EXPECT_EQ(b.consume(0ms, 100), std::nullopt);
  EXPECT_EQ(b.lines(), "");
}

TEST(TraceBufferConsume, AtLeastOneLineEvenIfLonger) {
  TraceBuffer b(100, true);
  b.append(sized('a', 40));
  b.append(sized('b', 10));
  EXPECT_EQ(b.consume(0ms, 16), sized('a', 40));
  EXPECT_EQ(b.consume(0ms, 0), sized('b', 10));
}

TEST(TraceBufferConsume, ConsumedBytesMakeRoomInDropMode) {
  TraceBuffer b(20, false);
  b.append(sized('a', 10));
  b.append(sized('b', 10));
  b.append(sized('c', 10));  // dropped
  EXPECT_EQ(b.consume(0ms, 10), sized('a', 10));
  b.append(sized('d', 10));  // fits now
  EXPECT_EQ(b.lines(), sized('b', 10) + sized('d', 10));
  EXPECT_EQ(b.overruns(), 1u);
}

TEST(TraceBufferConsume, WokenByAProducerThread) {
  TraceBuffer b(100, true);
  const auto start = std::chrono::steady_clock::now();
  std::thread producer([&] {
    std::this_thread::sleep_for(50ms);
    b.append(sized('a', 10));
  });
  const auto got = b.consume(10s, 100);
  const auto waited = std::chrono::steady_clock::now() - start;
  producer.join();
  EXPECT_EQ(got, sized('a', 10));
  EXPECT_GE(waited, 40ms);
  EXPECT_LT(waited, 5s);  // woken by the append, not by the timeout
}

TEST(TraceBufferConsume, ConcurrentProducersLoseNothingWhenNotFull) {
  constexpr int kThreads = 4;
  constexpr int kLines = 500;
  TraceBuffer b(1 << 20, false);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&b, t] {
      for (int i = 0; i < kLines; ++i) b.append(format_line(LineHeader{"p", uint32_t(t), 0, uint64_t(i)}, "e", "x"));
    });
  }
  std::atomic<bool> done = false;
  std::string received;
  std::thread consumer([&] {
    while (true) {
      // Read the flag first: once it is set every append has happened, so an
      // empty answer after it means the buffer is drained.
      const bool finished = done;
      auto chunk = b.consume(20ms, 4096);
      if (chunk) {
        received += *chunk;
      } else if (finished) {
        break;
      }
    }
  });
  for (auto& p : producers) p.join();
  done = true;
  consumer.join();
  EXPECT_EQ(std::count(received.begin(), received.end(), '\n'), kThreads * kLines);
  EXPECT_EQ(b.written(), uint64_t(kThreads * kLines));
  EXPECT_EQ(b.overruns(), 0u);
  EXPECT_EQ(b.entries(), 0u);
}

// per_cpu/cpuN/trace and trace_pipe: one CPU's lines and counts, taken out
// from among the others' in their order.
TEST(TraceBufferPerCpu, ACpusLinesAndCounts) {
  TraceBuffer b(4096, true);
  b.append(sized('a', 10), {}, 0);
  b.append(sized('b', 10), {}, 1);
  b.append(sized('c', 10), {}, 0);
  b.note_lost(1, 4);
  const std::string c1 = b.contents(2, false, 1);
  EXPECT_NE(c1.find("# entries-in-buffer/entries-written: 1/5   #P:2\n"), std::string::npos);
  EXPECT_EQ(c1.substr(c1.size() - 10 - 22), sized('b', 10) + "CPU:1 [LOST 4 EVENTS]\n");
  const std::string c0 = b.contents(2, false, 0);
  EXPECT_EQ(c0.substr(c0.size() - 20), sized('a', 10) + sized('c', 10));
}

TEST(TraceBufferPerCpu, ACpusPipeTakesOnlyItsLines) {
  TraceBuffer b(4096, true);
  b.append(sized('a', 10), {}, 0);
  b.append(sized('b', 10), {}, 1);
  b.append(sized('c', 10), {}, 0);
  b.append(sized('d', 10), {}, 0);
  EXPECT_EQ(b.consume(0ms, 20, false, 0), sized('a', 10) + sized('c', 10));  // two fit
  EXPECT_EQ(b.entries(), 2u);
  EXPECT_EQ(b.consume(0ms, 4096, false, 2), std::nullopt);  // none of CPU 2, no wait
  EXPECT_EQ(b.lines(), sized('b', 10) + sized('d', 10));
}

TEST(TraceBufferSize, ASmallerSizeKeepsTheNewestLinesAndCountsTheRestAsOverruns) {
  TraceBuffer b(100, true);
  b.append(sized('a', 30));
  b.append(sized('b', 30));
  b.append(sized('c', 30));
  b.resize(60);
  EXPECT_EQ(b.capacity(), 60u);
  EXPECT_EQ(b.lines(), sized('b', 30) + sized('c', 30));
  EXPECT_EQ(b.overruns(), 1u);
  EXPECT_EQ(b.written(), 3u);
  b.resize(200);
  b.append(sized('d', 30));
  EXPECT_EQ(b.entries(), 3u);
}

}  // namespace
}  // namespace histd::trace
