// SPDX-License-Identifier: GPL-2.0-only
// Raw pages as the kernel's trace_pipe_raw hands them out: the page header
// events/header_page describes, events behind header_event's 32-bit word
// (type_len 5 bits, time_delta 27), time extends, padding, the length word
// of a long record, missed events in the commit word. Read back here as
// libtraceevent's kbuffer reads a page.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "histd/trace_buffer.h"

namespace histd::trace {
namespace {

uint32_t word(const std::string& page, size_t at) {
  uint32_t w = 0;
  std::memcpy(&w, page.data() + at, 4);
  return w;
}
uint64_t u64(const std::string& page, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, page.data() + at, 8);
  return v;
}
uint32_t type_len(uint32_t header) { return header & 31; }
uint32_t delta(uint32_t header) { return header >> 5; }

// One event as a reader meets it: its time and its data.
struct Read {
  uint64_t ts = 0;
  std::vector<uint8_t> data;
  bool operator==(const Read&) const = default;
};

// Walks a page as kbuffer does: the time stamp, then each event's delta
// added (a time extend's 59 bits), padding and extends skipped.
std::vector<Read> decode(const std::string& page) {
  std::vector<Read> out;
  uint64_t ts = u64(page, 0);
  const size_t size = u64(page, 8) & ((1u << 27) - 1);
  for (size_t at = 0; at < size;) {
    const uint32_t h = word(page, kRawPageHeader + at);
    const size_t body = kRawPageHeader + at + 4;
    const uint32_t t = type_len(h);
    if (t == 29) {
      ts += delta(h);
      at += 4 + word(page, body);
    } else if (t == 30) {
      ts += (uint64_t{word(page, body)} << 27) + delta(h);
      at += 8;
    } else {
      ts += delta(h);
      const size_t len = t ? t * 4 : word(page, body) - 4;
      const size_t start = t ? body : body + 4;
      out.push_back(Read{ts, std::vector<uint8_t>(page.begin() + start, page.begin() + start + len)});
      at = start + len - kRawPageHeader;
    }
  }
  return out;
}

std::vector<uint8_t> bytes(size_t n, uint8_t first = 1) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(RawPages, PageHeaderHoldsTheFirstTimeAndTheCommit) {
  RawPageWriter w;
  ASSERT_TRUE(w.add(5000, bytes(12)));
  const std::string page = w.page(0);
  ASSERT_EQ(page.size(), kRawPageSize);
  EXPECT_EQ(u64(page, 0), 5000u);
  EXPECT_EQ(u64(page, 8), 16u);  // one header word and 12 bytes
  // Nothing after the events.
  EXPECT_EQ(page.find_first_not_of('\0', kRawPageHeader + 16), std::string::npos);
}

TEST(RawPages, SmallRecordsTakeTheirLengthInWordsAndTheirDelta) {
  RawPageWriter w;
  ASSERT_TRUE(w.add(1000, bytes(12)));
  ASSERT_TRUE(w.add(1750, bytes(10)));  // 10 bytes: 3 words, 2 bytes unused
  const std::string page = w.page(0);
  EXPECT_EQ(type_len(word(page, 16)), 3u);
  EXPECT_EQ(delta(word(page, 16)), 0u);  // the first is at the page's time
  EXPECT_EQ(type_len(word(page, 32)), 3u);
  EXPECT_EQ(delta(word(page, 32)), 750u);
  const auto events = decode(page);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].ts, 1750u);
  EXPECT_EQ(std::vector<uint8_t>(events[1].data.begin(), events[1].data.begin() + 10), bytes(10));
}

TEST(RawPages, EightBytesTakeSixteenAsTheKernelsDo) {
  RawPageWriter w;
  ASSERT_TRUE(w.add(1, bytes(8)));
  EXPECT_EQ(w.used(), 16u);
  EXPECT_EQ(type_len(word(w.page(0), 16)), 3u);
}

TEST(RawPages, ADeltaPast27BitsTakesATimeExtend) {
  RawPageWriter w;
  const uint64_t t0 = 1000, t1 = t0 + (uint64_t{1} << 27) + 12345, t2 = t1 + 10;
  ASSERT_TRUE(w.add(t0, bytes(16)));
  ASSERT_TRUE(w.add(t1, bytes(16)));
  ASSERT_TRUE(w.add(t2, bytes(16)));
  const std::string page = w.page(0);
  const uint32_t extend = word(page, 16 + 20);
  EXPECT_EQ(type_len(extend), 30u);
  EXPECT_EQ(delta(extend), 12345u);
  EXPECT_EQ(word(page, 16 + 24), 1u);          // the delta's bits above 27
  EXPECT_EQ(delta(word(page, 16 + 28)), 0u);   // the event after it adds nothing
  EXPECT_EQ(delta(word(page, 16 + 48)), 10u);  // the next counts from it
  const auto events = decode(page);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].ts, t1);
  EXPECT_EQ(events[2].ts, t2);
}

TEST(RawPages, AClockGoingBackIsNoTimePassing) {
  RawPageWriter w;
  ASSERT_TRUE(w.add(1000, bytes(8)));
  ASSERT_TRUE(w.add(900, bytes(8)));
  ASSERT_TRUE(w.add(1100, bytes(8)));
  const auto events = decode(w.page(0));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].ts, 1000u);
  EXPECT_EQ(events[2].ts, 1100u);
}

TEST(RawPages, ALongRecordTakesTheLengthWord) {
  RawPageWriter w;
  const auto data = bytes(200);
  ASSERT_TRUE(w.add(7, data));
  const std::string page = w.page(0);
  EXPECT_EQ(type_len(word(page, 16)), 0u);
  EXPECT_EQ(word(page, 20), 204u);  // the data and the length word, as the kernel's array[0]
  EXPECT_EQ(w.used(), 208u);
  const auto events = decode(page);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, data);
  // 112 bytes still fit type_len (28 words); 113 do not.
  RawPageWriter small;
  ASSERT_TRUE(small.add(1, bytes(112)));
  ASSERT_TRUE(small.add(2, bytes(113)));
  EXPECT_EQ(type_len(word(small.page(0), 16)), 28u);
  EXPECT_EQ(type_len(word(small.page(0), 16 + 116)), 0u);
}

TEST(RawPages, APageEndsWithPadding) {
  RawPageWriter w;
  size_t n = 0;
  while (w.add(n, bytes(96))) ++n;  // 100 bytes each: 40 fit in 4080
  EXPECT_EQ(n, 40u);
  EXPECT_EQ(w.used(), 4000u);
  w.close();
  const std::string page = w.page(0);
  EXPECT_EQ(u64(page, 8), kRawPageData);  // the commit covers the padding
  const uint32_t pad = word(page, 16 + 4000);
  EXPECT_EQ(type_len(pad), 29u);
  EXPECT_NE(delta(pad), 0u);  // a null padding event has no length
  EXPECT_EQ(word(page, 16 + 4004), 76u);
  EXPECT_EQ(decode(page).size(), 40u);
  EXPECT_FALSE(w.add(1, bytes(4)));  // closed
}

TEST(RawPages, MissedEventsAreFlaggedAndStoredAfterTheEvents) {
  RawPageWriter w;
  while (w.add(1, bytes(96))) {
  }
  w.close();
  const std::string page = w.page(37);
  const uint64_t commit = u64(page, 8);
  EXPECT_EQ(commit & kRawMissedEvents, kRawMissedEvents);
  EXPECT_EQ(commit & kRawMissedStored, kRawMissedStored);
  EXPECT_EQ(commit & 0xfffff, 4000u);  // the padding gives way to the count
  EXPECT_EQ(u64(page, 16 + 4000), 37u);
}

TEST(RawBuffer, ReadersTakePagesOldestFirstThePartOneToo) {
  RawBuffer b(64 * kRawPageSize);
  for (uint64_t i = 0; i < 100; ++i) b.append(i, bytes(96));
  auto first = b.take_page();
  ASSERT_TRUE(first);
  EXPECT_EQ(decode(*first).size(), 40u);
  EXPECT_EQ(u64(*first, 0), 0u);
  EXPECT_EQ(b.stats().entries, 60u);
  EXPECT_EQ(b.stats().read, 40u);
  ASSERT_TRUE(b.take_page());
  auto last = b.take_page();  // the page being written: 20 events
  ASSERT_TRUE(last);
  EXPECT_EQ(decode(*last).size(), 20u);
  EXPECT_EQ(u64(*last, 0), 80u);
  EXPECT_FALSE(b.take_page());
  EXPECT_TRUE(b.empty());
}

TEST(RawBuffer, ASpliceTakesFullPagesOnly) {
  RawBuffer b(64 * kRawPageSize);
  for (uint64_t i = 0; i < 30; ++i) b.append(i, bytes(96));
  EXPECT_FALSE(b.has_full_page());
  EXPECT_FALSE(b.take_page(true));  // the page being written stays
  for (uint64_t i = 30; i < 50; ++i) b.append(i, bytes(96));
  EXPECT_TRUE(b.has_full_page());
  auto full = b.take_page(true);
  ASSERT_TRUE(full);
  EXPECT_EQ(decode(*full).size(), 40u);
  EXPECT_FALSE(b.has_full_page());
  EXPECT_FALSE(b.take_page(true));
  auto rest = b.take_page();  // a read takes it
  ASSERT_TRUE(rest);
  EXPECT_EQ(decode(*rest).size(), 10u);
}

TEST(RawBuffer, AFullBufferOverwritesItsOldestPage) {
  RawBuffer b(2 * kRawPageSize);                             // two pages
  for (uint64_t i = 0; i < 90; ++i) b.append(i, bytes(96));  // three pages' worth
  const RawStats s = b.stats();
  EXPECT_EQ(s.overrun, 40u);
  EXPECT_EQ(s.entries, 50u);
  EXPECT_EQ(s.oldest_ts, 40u);
  EXPECT_EQ(s.bytes, 5000u);
  auto page = b.take_page();
  ASSERT_TRUE(page);
  EXPECT_EQ(u64(*page, 8) & kRawMissedEvents, kRawMissedEvents);
  EXPECT_EQ(u64(*page, 16 + 4000), 40u);
  auto next = b.take_page();
  ASSERT_TRUE(next);
  EXPECT_EQ(u64(*next, 8) & kRawMissedEvents, 0u);
}

TEST(RawBuffer, ASmallerSizeKeepsTheNewestPagesAndCountsTheRestOverrun) {
  RawBuffer b(8 * kRawPageSize);
  for (uint64_t i = 0; i < 150; ++i) b.append(i, bytes(96));  // 40 a page: four pages
  EXPECT_EQ(b.stats().overrun, 0u);
  b.resize(2 * kRawPageSize);
  EXPECT_EQ(b.capacity(), 2 * kRawPageSize);
  EXPECT_EQ(b.stats().overrun, 80u);
  EXPECT_EQ(b.stats().entries, 70u);
  auto page = b.take_page();
  ASSERT_TRUE(page);
  EXPECT_EQ(u64(*page, 8) & kRawMissedEvents, kRawMissedEvents);
  b.resize(100);  // less than a page: two pages still
  EXPECT_EQ(b.capacity(), 2 * kRawPageSize);
}

TEST(RawBuffer, DroppedEventsAreCountedAndFlagged) {
  RawBuffer b(8 * kRawPageSize);
  b.note_dropped(5);
  b.append(1, bytes(8));
  EXPECT_EQ(b.stats().dropped, 5u);
  auto page = b.take_page();
  ASSERT_TRUE(page);
  EXPECT_EQ(u64(*page, 16 + 16), 5u);
  b.clear();
  EXPECT_EQ(b.stats().dropped, 0u);
}

}  // namespace
}  // namespace histd::trace
