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

// --- synth_event_body --------------------------------------------------------

using synth::SynthDefinition;
using synth::SynthField;
using Kind = SynthField::Kind;

SynthField integer(std::string type, std::string name, uint32_t size, bool is_signed, uint32_t offset) {
  return SynthField{std::move(type), std::move(name), Kind::Integer, size, is_signed, 0, offset};
}

SynthField static_string(uint32_t n, std::string name, uint32_t offset) {
  return SynthField{"char[" + std::to_string(n) + "]", std::move(name), Kind::StaticString, n, true, n, offset};
}

SynthField dynamic_string(std::string name, uint32_t offset) {
  return SynthField{"char[]", std::move(name), Kind::DynamicString, 4, true, 0, offset};
}

SynthField stack(std::string name, uint32_t offset) {
  return SynthField{"long[]", std::move(name), Kind::Stack, 4, true, 0, offset};
}

// A record being built by hand: the 8-byte common header is left zero.
struct Record {
  std::vector<uint8_t> bytes;
  explicit Record(size_t size) : bytes(size, 0) {}
  Record& put(size_t off, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) bytes.at(off + i) = static_cast<uint8_t>(v >> (8 * i));
    return *this;
  }
  Record& text(size_t off, std::string_view s) {
    std::memcpy(&bytes.at(off), s.data(), s.size());
    return *this;
  }
  Record& loc(size_t off, uint32_t data_offset, uint32_t len) { return put(off, (len << 16) | data_offset, 4); }
  std::span<const uint8_t> span() const { return bytes; }
};

class FakeResolver : public render::Resolver {
 public:
  std::string symbol(uint64_t) const override { return {}; }
  std::string symbol_offset(uint64_t a) const override {
    if (a == 0xffffffff81000010) return "schedule+0x10/0x80";
    if (a == 0xffffffffc0001234) return "mod_fn+0x4/0x40 [mod]";
    return {};
  }
  std::string syscall_name(uint64_t) const override { return {}; }
};

TEST(TraceBufferSynth, WakeupLatency) {
  const SynthDefinition def{
      "wakeup_latency",
      {integer("u64", "lat", 8, false, 8), integer("pid_t", "pid", 4, true, 16), integer("int", "prio", 4, true, 24)}};
  Record r(32);
  r.put(8, 24, 8).put(16, 123, 4).put(24, 120, 4);
  const std::string body = synth_event_body(def, r.span());
  EXPECT_EQ(body, "lat=24 pid=123 prio=120");
  EXPECT_EQ(format_line(LineHeader{"bash", 1234, 1, 123456789000}, def.name, body),
            "            bash-1234    [001] .....   123.456789: wakeup_latency: lat=24 pid=123 prio=120\n");
}

TEST(TraceBufferSynth, EmptyDefinition) { EXPECT_EQ(synth_event_body(SynthDefinition{"e", {}}, Record(8).span()), ""); }

TEST(TraceBufferSynth, IntegersBySizeAndSignedness) {
  const std::vector<SynthField> fields = {
      integer("u8", "a", 1, false, 8),
      integer("s8", "b", 1, true, 16),
      integer("char", "c", 1, true, 24),
      integer("bool", "d", 1, true, 32),
      integer("u16", "e", 2, false, 40),
      integer("s16", "f", 2, true, 48),
      integer("u32", "g", 4, false, 56),
      integer("s32", "h", 4, true, 64),
      integer("int", "i", 4, true, 72),
      integer("unsigned int", "j", 4, false, 80),
      integer("pid_t", "k", 4, true, 88),
      integer("long", "l", 8, true, 96),
      integer("unsigned long", "m", 8, false, 104),
      integer("s64", "n", 8, true, 112),
      integer("u64", "o", 8, false, 120),
  };
  Record r(128);
  r.put(8, 0xff, 1).put(16, 0xff, 1).put(24, 0xff, 1).put(32, 1, 1);
  r.put(40, 0xffff, 2).put(48, 0xfffe, 2);
  r.put(56, 0xffffffff, 4).put(64, 0xfffffffd, 4).put(72, 0xfffffffc, 4).put(80, 0xfffffffc, 4);
  r.put(88, 0xffffffff, 4);
  r.put(96, uint64_t(-5), 8).put(104, ~uint64_t{0}, 8).put(112, uint64_t{1} << 63, 8).put(120, ~uint64_t{0}, 8);
  // 1- and 2-byte signed values print zero-extended, as the kernel's %d of
  // as_u8/as_u16 does; 4- and 8-byte ones print their sign.
  EXPECT_EQ(synth_event_body(SynthDefinition{"e", fields}, r.span()),
            "a=255 b=255 c=255 d=1 e=65535 f=65534 g=4294967295 h=-3 i=-4 j=4294967292 k=-1 l=-5 "
            "m=18446744073709551615 n=-9223372036854775808 o=18446744073709551615");
}

TEST(TraceBufferSynth, IntegersReadOnlyTheirOwnBytes) {
  const SynthDefinition def{
      "e", {integer("u8", "a", 1, false, 8), integer("u16", "b", 2, false, 16), integer("s32", "c", 4, true, 24)}};
  Record r(32);
  r.put(8, 0xdeadbeef'00000007, 8).put(16, 0xdeadbeef'00010002, 8).put(24, 0xdeadbeef'00000009, 8);
  EXPECT_EQ(synth_event_body(def, r.span()), "a=7 b=2 c=9");
}

TEST(TraceBufferSynth, GfpFlagsInHexWithTheKernelsSpacing) {
  Record r(24);
  r.put(8, 0xcc0, 4).put(16, 1, 8);
  // Last field: "%x" then " (flags)".
  EXPECT_EQ(synth_event_body(SynthDefinition{"e", {integer("gfp_t", "gfp", 4, false, 8)}}, r.span()),
            "gfp=cc0 (0xcc0)");
  // Not last: the separator is printed before " (flags)" and none after it.
  EXPECT_EQ(
      synth_event_body(
          SynthDefinition{"e", {integer("gfp_t", "gfp", 4, false, 8), integer("u64", "next", 8, false, 16)}}, r.span()),
      "gfp=cc0  (0xcc0)next=1");
  Record zero(16);
  EXPECT_EQ(synth_event_body(SynthDefinition{"e", {integer("gfp_t", "gfp", 4, false, 8)}}, zero.span()), "gfp=0 ()");
}

TEST(TraceBufferSynth, StaticStrings) {
  const SynthDefinition def{"e", {static_string(16, "comm", 8), integer("u64", "n", 8, false, 8 + 256)}};
  Record r(8 + 256 + 8);
  r.text(8, "bash").put(8 + 256, 3, 8);
  EXPECT_EQ(synth_event_body(def, r.span()), "comm=bash n=3");
  // Empty text.
  Record e(8 + 256 + 8);
  EXPECT_EQ(synth_event_body(def, e.span()), "comm= n=0");
  // A full slot without a NUL prints all 256 bytes and stops there.
  Record full(8 + 256 + 8);
  full.text(8, std::string(256, 'x')).put(8 + 256, 5, 8);
  EXPECT_EQ(synth_event_body(def, full.span()), "comm=" + std::string(256, 'x') + " n=5");
}

TEST(TraceBufferSynth, DynamicStrings) {
  const SynthDefinition def{"e", {dynamic_string("file", 8), integer("u64", "n", 8, false, 16)}};
  const std::string text = "/bin/sh";
  Record r(24 + text.size() + 1);
  r.loc(8, 24, text.size() + 1).put(16, 9, 8).text(24, text);
  EXPECT_EQ(synth_event_body(def, r.span()), "file=/bin/sh n=9");
  // The length bounds the text.
  r.loc(8, 24, 4);
  EXPECT_EQ(synth_event_body(def, r.span()), "file=/bin n=9");
  // A zero length: nothing.
  r.loc(8, 24, 0);
  EXPECT_EQ(synth_event_body(def, r.span()), "file= n=9");
}

TEST(TraceBufferSynth, DynamicStringsNeverReadPastTheRecord) {
  const SynthDefinition def{"e", {dynamic_string("file", 8), integer("u64", "n", 8, false, 16)}};
  Record r(28);
  r.text(24, "abcd").put(16, 1, 8);
  r.loc(8, 24, 200);  // the length runs past the end: cut there
  EXPECT_EQ(synth_event_body(def, r.span()), "file=abcd n=1");
  r.loc(8, 28, 4);  // starts exactly at the end
  EXPECT_EQ(synth_event_body(def, r.span()), "file= n=1");
  r.loc(8, 0xffff, 0xffff);  // far outside
  EXPECT_EQ(synth_event_body(def, r.span()), "file= n=1");
  // The loc itself outside the record: the field prints empty.
  const SynthDefinition late{"e", {dynamic_string("file", 26)}};
  EXPECT_EQ(synth_event_body(late, r.span()), "file=");
  const SynthDefinition beyond{"e", {dynamic_string("file", 1000)}};
  EXPECT_EQ(synth_event_body(beyond, r.span()), "file=");
}

TEST(TraceBufferSynth, StacksSkipTheCountAndPrintEachFrame) {
  const SynthDefinition def{"e", {stack("st", 8), integer("u64", "lat", 8, false, 16)}};
  Record r(24 + 4 * 8);
  r.loc(8, 24, 4 * 8).put(16, 7, 8);
  r.put(24, 3, 8).put(32, 0xffffffff81000010, 8).put(40, 0xffffffffc0001234, 8).put(48, 0xffffffff81999999, 8);
  // No separator after the stack: the next field starts its own line.
  EXPECT_EQ(synth_event_body(def, r.span()),
            "st=STACK:\n=> 0xffffffff81000010\n=> 0xffffffffc0001234\n=> 0xffffffff81999999\nlat=7");
  const FakeResolver resolver;
  EXPECT_EQ(synth_event_body(def, r.span(), &resolver),
            "st=STACK:\n=> schedule+0x10/0x80\n=> mod_fn+0x4/0x40 [mod]\n=> 0xffffffff81999999\nlat=7");
}

TEST(TraceBufferSynth, StackAsLastFieldEndsWithABlankLine) {
  const SynthDefinition def{"e", {integer("u64", "lat", 8, false, 8), stack("st", 16)}};
  Record r(24 + 2 * 8);
  r.put(8, 5, 8).loc(16, 24, 2 * 8).put(24, 1, 8).put(32, 0xffffffff81000010, 8);
  const FakeResolver resolver;
  // The kernel ends the stack's last frame with '\n' and then the line with
  // another: the trace shows an empty line after the frames.
  EXPECT_EQ(format_line(LineHeader{"t", 1, 0, 0}, "e", synth_event_body(def, r.span(), &resolver)),
            "               t-1       [000] .....     0.000000: e: lat=5 st=STACK:\n=> schedule+0x10/0x80\n\n");
}

TEST(TraceBufferSynth, StacksNeverReadPastTheRecord) {
  const SynthDefinition def{"e", {stack("st", 8)}};
  Record r(16 + 3 * 8 + 4);  // a count, two whole frames and half a third
  r.put(16, 3, 8).put(24, 0xa, 8).put(32, 0xb, 8).put(40, 0xc, 4);
  r.loc(8, 16, 4 * 8);
  EXPECT_EQ(synth_event_body(def, r.span()), "st=STACK:\n=> 0xa\n=> 0xb\n");
  r.loc(8, 0xfff0, 0xffff);
  EXPECT_EQ(synth_event_body(def, r.span()), "st=STACK:\n");
  // Only the count: no frames. A length that is not a whole element rounds down.
  r.loc(8, 16, 8);
  EXPECT_EQ(synth_event_body(def, r.span()), "st=STACK:\n");
  r.loc(8, 16, 2 * 8 + 7);
  EXPECT_EQ(synth_event_body(def, r.span()), "st=STACK:\n=> 0xa\n");
  // Zero frames inside the length print, as in the kernel.
  r.put(24, 0, 8);
  EXPECT_EQ(synth_event_body(def, r.span()), "st=STACK:\n=> 0x0\n");
  const SynthDefinition beyond{"e", {stack("st", 500)}};
  EXPECT_EQ(synth_event_body(beyond, r.span()), "st=STACK:\n");
}

TEST(TraceBufferSynth, ShortRecordsReadMissingBytesAsZero) {
  const SynthDefinition def{"e",
                            {integer("u64", "a", 8, false, 8), static_string(8, "s", 16), dynamic_string("d", 16 + 256),
                             stack("k", 16 + 256 + 8)}};
  EXPECT_EQ(synth_event_body(def, {}), "a=0 s= d= k=STACK:\n");
  Record r(12);
  r.put(8, 0x01020304, 4);  // half of a's slot
  EXPECT_EQ(synth_event_body(def, r.span()), "a=16909060 s= d= k=STACK:\n");
  Record s(20);
  s.text(16, "abcd");  // a static string cut by the record's end
  EXPECT_EQ(synth_event_body(def, s.span()), "a=0 s=abcd d= k=STACK:\n");
}

TEST(TraceBufferSynth, RandomRecordsStayInBounds) {
  // Every kind over random bytes and sizes: under ASan this proves no read
  // leaves the record; here it proves nothing throws.
  const SynthDefinition def{"e",
                            {integer("s32", "a", 4, true, 8), static_string(16, "s", 16), dynamic_string("d", 16 + 256),
                             stack("k", 16 + 256 + 8), integer("gfp_t", "g", 4, false, 16 + 256 + 16)}};
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> bytes(rng() % 400);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    EXPECT_NO_THROW(synth_event_body(def, bytes));
  }
}

}  // namespace
}  // namespace histd::trace
