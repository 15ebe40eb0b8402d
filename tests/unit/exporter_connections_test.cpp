// SPDX-License-Identifier: GPL-2.0-only
// histd-exporter's connection table: the deadlines of each phase, and at
// the cap the idlest connection making room for a new one.
#include <gtest/gtest.h>

#include <set>

#include "histd-exporter/connections.h"

namespace histd::exporter {
namespace {

using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point{} + 1000s;

// No connection has bytes waiting to be read.
bool no_bytes(int) { return false; }

std::vector<int> fds(const std::vector<ToClose>& close) {
  std::vector<int> out;
  for (const ToClose& c : close) out.push_back(c.fd);
  return out;
}

TEST(ExporterConnections, EachPhaseHasItsDeadline) {
  ConnectionTable t(ConnectionLimits{});
  const uint64_t slow = t.opened(10, "127.0.0.2", t0);    // never sends its request
  const uint64_t scrape = t.opened(11, "127.0.0.1", t0);  // a scrape, answered
  const uint64_t busy = t.opened(12, "127.0.0.1", t0);    // being answered for long
  const uint64_t reader = t.opened(13, "127.0.0.3", t0);  // takes its response slowly
  t.set_phase(scrape, Phase::Handling, t0 + 1ms);
  t.set_phase(scrape, Phase::Responding, t0 + 2ms);
  t.set_phase(scrape, Phase::KeepAlive, t0 + 3ms);
  t.set_phase(busy, Phase::Handling, t0 + 1ms);
  t.set_phase(reader, Phase::Responding, t0 + 1s);
  EXPECT_EQ(t.next_deadline(), t0 + 5s) << "the first request's";
  EXPECT_TRUE(t.expired(t0 + 4999ms).empty());
  const auto first = t.expired(t0 + 5s);
  ASSERT_EQ(fds(first), std::vector<int>{10});
  EXPECT_EQ(first[0].reason, CloseReason::NoRequest);
  EXPECT_EQ(first[0].peer, "127.0.0.2");
  EXPECT_EQ(t.open(), 3u) << "a connection being closed is not counted";
  EXPECT_TRUE(t.expired(t0 + 6s).empty()) << "told once";
  auto later = t.expired(t0 + 61s);
  EXPECT_EQ(fds(later), (std::vector<int>{11, 13}));
  EXPECT_EQ(later[0].reason, CloseReason::IdleKeepAlive);
  EXPECT_EQ(later[1].reason, CloseReason::ResponseNotTaken);
  EXPECT_TRUE(t.expired(t0 + 3600s).empty()) << "histd's answer is never cut short";
  EXPECT_EQ(t.next_deadline(), std::nullopt) << "nothing to wake for";
  t.closed(slow);
  t.closed(scrape);
  t.closed(reader);
  EXPECT_EQ(t.open(), 1u);
  t.closed(busy);
  EXPECT_EQ(t.open(), 0u);
  t.closed(busy);  // twice: nothing
  EXPECT_EQ(t.open(), 0u);
}

TEST(ExporterConnections, AtTheCapTheIdlestMakesRoom) {
  ConnectionTable t(ConnectionLimits{4});
  std::vector<ToClose> close;
  const uint64_t a = t.opened(1, "a", t0);
  const uint64_t b = t.opened(2, "b", t0 + 1s);
  const uint64_t c = t.opened(3, "c", t0 + 2s);
  t.opened(4, "d", t0 + 3s);
  t.set_phase(a, Phase::Responding, t0 + 4s);
  t.set_phase(b, Phase::KeepAlive, t0 + 4s);
  t.set_phase(c, Phase::Handling, t0 + 4s);
  // d waits for its request. Kept alive goes first, then waiting, then a
  // response; one being answered never.
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{2});
  EXPECT_EQ(close[0].reason, CloseReason::MadeRoom);
  t.opened(5, "e", t0 + 5s);
  close.clear();
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{4});
  t.opened(6, "f", t0 + 6s);
  close.clear();
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{5}) << "the one waiting longest for its request";
  t.opened(7, "g", t0 + 7s);
  close.clear();
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{6});
  t.set_phase(t.opened(8, "h", t0 + 8s), Phase::Handling, t0 + 8s);
  close.clear();
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{7});
  t.set_phase(t.opened(9, "i", t0 + 9s), Phase::Handling, t0 + 9s);
  close.clear();
  EXPECT_TRUE(t.admit(close, no_bytes));
  EXPECT_EQ(fds(close), std::vector<int>{1}) << "last, a response being taken";
  t.set_phase(t.opened(10, "j", t0 + 10s), Phase::Handling, t0 + 10s);
  close.clear();
  EXPECT_FALSE(t.admit(close, no_bytes)) << "every connection being answered: refused";
  EXPECT_TRUE(close.empty());
}

TEST(ExporterConnections, AConnectionWithBytesWaitingIsNotIdle) {
  ConnectionTable t(ConnectionLimits{20});
  for (int fd = 1; fd <= 20; ++fd) t.opened(fd, "a", t0 + std::chrono::seconds(fd));
  std::set<int> unread = {1, 2, 3};  // a burst's first three, not read yet
  auto waiting = [&unread](int fd) { return unread.contains(fd); };
  std::vector<ToClose> close;
  EXPECT_TRUE(t.admit(close, waiting));
  EXPECT_EQ(fds(close), std::vector<int>{4}) << "the idlest of those without bytes waiting";
  t.opened(21, "b", t0 + 21s);
  for (int fd = 5; fd <= 21; ++fd) unread.insert(fd);
  close.clear();
  EXPECT_TRUE(t.admit(close, waiting));
  EXPECT_EQ(fds(close), std::vector<int>{1}) << "bytes wait on all it looks at: the idlest all the same";
  unread = {2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};  // 19 has none, but lies past the few looked at
  t.opened(22, "c", t0 + 22s);
  close.clear();
  EXPECT_TRUE(t.admit(close, waiting));
  EXPECT_EQ(fds(close), std::vector<int>{2}) << "only the first few are asked";
}

}  // namespace
}  // namespace histd::exporter
