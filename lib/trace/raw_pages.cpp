// SPDX-License-Identifier: GPL-2.0-only
// Recorded events as the kernel's ring buffer keeps them, for
// per_cpu/cpuN/trace_pipe_raw: the layout events/header_page and
// header_event describe (seeds/002 tells what each type means), which
// libtraceevent's kbuffer, trace-cmd and libtracefs parse.
#include <algorithm>
#include <cstring>

#include "histd/trace_buffer.h"

namespace histd::trace {

namespace {

// header_event: type_len in the low 5 bits, time_delta in the high 27.
constexpr uint32_t kTypeLenMax = 28;  // data up to 28 words: its length in words
constexpr size_t kMaxSmallData = 4 * kTypeLenMax;
constexpr uint32_t kTypePadding = 29;
constexpr uint32_t kTypeTimeExtend = 30;
constexpr unsigned kDeltaBits = 27;
constexpr uint64_t kDeltaMask = (uint64_t{1} << kDeltaBits) - 1;
constexpr size_t kWord = 4;
constexpr size_t kTimeExtendSize = 8;

uint32_t event_header(uint32_t type_len, uint64_t delta) {
  return type_len | static_cast<uint32_t>((delta & kDeltaMask) << 5);
}

size_t align4(size_t n) { return (n + kWord - 1) & ~(kWord - 1); }

// The bytes an event of `len` bytes of data takes, header included, as the
// kernel's rb_calculate_event_length(): a length word past 112 bytes, and
// never 12 bytes (a discarded time extend's room must hold a padding event).
size_t event_size(size_t len) {
  if (len == 0) len = 1;
  size_t n = len > kMaxSmallData ? len + kWord : len;
  n = align4(n + kWord);
  if (n == kTimeExtendSize + kWord) n += kWord;
  return n;
}

void put_u64(std::string& out, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) out[at + i] = static_cast<char>(v >> (8 * i));
}

}  // namespace

RawPageWriter::RawPageWriter() : data_(kRawPageData, '\0') {}

void RawPageWriter::put_word(uint32_t w) {
  std::memcpy(data_.data() + used_, &w, kWord);
  used_ += kWord;
}

bool RawPageWriter::add(uint64_t ts, std::span<const uint8_t> data) {
  if (commit_ > used_) return false;  // closed
  // The first event sets the page's time; a clock that went back (an
  // event that interrupted another between its time and its reservation)
  // is read as no time passing.
  const uint64_t delta = events_ == 0 || ts < last_ts_ ? 0 : ts - last_ts_;
  const size_t size = event_size(data.size());
  const size_t extend = delta > kDeltaMask ? kTimeExtendSize : 0;
  if (used_ + extend + size > kRawPageData) return false;
  if (events_ == 0) first_ts_ = ts;
  if (extend) {
    put_word(event_header(kTypeTimeExtend, delta));
    put_word(static_cast<uint32_t>(delta >> kDeltaBits));
  }
  const size_t start = used_;
  const uint32_t len = static_cast<uint32_t>(size - kWord);  // after the header
  if (data.size() > kMaxSmallData) {
    put_word(event_header(0, extend ? 0 : delta));
    put_word(len);
  } else {
    put_word(event_header(len / kWord, extend ? 0 : delta));
  }
  if (!data.empty()) std::memcpy(data_.data() + used_, data.data(), data.size());
  used_ = start + size;
  commit_ = used_;
  last_ts_ = std::max(last_ts_, ts);
  ++events_;
  return true;
}

void RawPageWriter::close() {
  const size_t left = kRawPageData - used_;
  // Under 8 bytes there is no room for the padding's length: the commit
  // ends at the events, as a reader stops there.
  if (left < 2 * kWord) return;
  // A padding event's time_delta is not 0 (a null event has no length).
  const uint32_t header = event_header(kTypePadding, 1);
  const auto len = static_cast<uint32_t>(left - kWord);
  std::memcpy(data_.data() + used_, &header, kWord);
  std::memcpy(data_.data() + used_ + kWord, &len, kWord);
  commit_ = kRawPageData;
}

std::string RawPageWriter::page(uint64_t missed) const {
  std::string out(kRawPageHeader, '\0');
  out += data_;
  uint64_t commit = commit_;
  if (missed) {
    // The count goes where the padding was, as ring_buffer_read_page()
    // stores it at the end of the events when the page has room.
    commit = used_ | kRawMissedEvents;
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(kRawPageHeader + used_), out.end(), '\0');
    if (kRawPageData - used_ >= 8) {
      put_u64(out, kRawPageHeader + used_, missed);
      commit |= kRawMissedStored;
    }
  }
  put_u64(out, 0, first_ts_);
  put_u64(out, 8, commit);
  return out;
}

RawBuffer::RawBuffer(size_t capacity_bytes) : capacity_pages_(std::max<size_t>(2, capacity_bytes / kRawPageSize)) {}

void RawBuffer::append(uint64_t ts, std::span<const uint8_t> record) {
  std::lock_guard lock(mu_);
  if (event_size(record.size()) + kTimeExtendSize > kRawPageData) {
    ++stats_.dropped;  // no page holds it
    ++missed_;
    return;
  }
  if (pages_.empty() || !pages_.back().add(ts, record)) {
    if (!pages_.empty()) pages_.back().close();
    pages_.emplace_back();
    pages_.back().add(ts, record);
  }
  ++stats_.entries;
  if (pages_.size() <= capacity_pages_) return;
  const RawPageWriter& old = pages_.front();
  stats_.overrun += old.events();
  stats_.entries -= old.events();
  missed_ += old.events();
  pages_.pop_front();
}

void RawBuffer::note_dropped(uint64_t count) {
  std::lock_guard lock(mu_);
  stats_.dropped += count;
  missed_ += count;
}

std::optional<std::string> RawBuffer::take_page(bool full_only) {
  std::lock_guard lock(mu_);
  if (pages_.empty() || pages_.front().empty()) return std::nullopt;
  if (full_only && pages_.size() < 2) return std::nullopt;  // the last page is being written
  std::string page = pages_.front().page(missed_);
  missed_ = 0;
  stats_.entries -= pages_.front().events();
  stats_.read += pages_.front().events();
  pages_.pop_front();
  return page;
}

bool RawBuffer::empty() const {
  std::lock_guard lock(mu_);
  return pages_.empty() || pages_.front().empty();
}

bool RawBuffer::has_full_page() const {
  std::lock_guard lock(mu_);
  return pages_.size() >= 2;
}

RawStats RawBuffer::stats() const {
  std::lock_guard lock(mu_);
  RawStats s = stats_;
  s.oldest_ts = pages_.empty() ? 0 : pages_.front().first_ts();
  s.bytes = 0;
  for (const RawPageWriter& p : pages_) s.bytes += p.used();
  return s;
}

void RawBuffer::resize(size_t capacity_bytes) {
  std::lock_guard lock(mu_);
  capacity_pages_ = std::max<size_t>(2, capacity_bytes / kRawPageSize);
  while (pages_.size() > capacity_pages_) {
    const RawPageWriter& old = pages_.front();
    stats_.overrun += old.events();
    stats_.entries -= old.events();
    missed_ += old.events();
    pages_.pop_front();
  }
}

size_t RawBuffer::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_pages_ * kRawPageSize;
}

void RawBuffer::clear() {
  std::lock_guard lock(mu_);
  pages_.clear();
  missed_ = 0;
  stats_ = RawStats{};
}

}  // namespace histd::trace
