// SPDX-License-Identifier: GPL-2.0-only
#include "histd-exporter/connections.h"

#include <algorithm>
#include <array>

namespace histd::exporter {

std::string_view describe(CloseReason reason) {
  switch (reason) {
    case CloseReason::NoRequest:
      return "closed: no whole request in time";
    case CloseReason::ResponseNotTaken:
      return "closed: the response was not taken in time";
    case CloseReason::IdleKeepAlive:
      return "closed: kept alive without a next request in time";
    case CloseReason::MadeRoom:
      return "closed to make room for a new connection";
  }
  return "closed";
}

namespace {

// What each phase's time limit is, and why a connection past it is closed;
// the phases in the order a connection is chosen to make room (the idlest
// first: kept alive, then not yet sent its request, then taking a response).
// A connection being answered has no limit and is never chosen.
struct PhaseRule {
  Phase phase;
  Clock::duration ConnectionLimits::*limit;
  CloseReason expired;
};
constexpr std::array<PhaseRule, 3> kRules = {{
    {Phase::KeepAlive, &ConnectionLimits::keep_alive, CloseReason::IdleKeepAlive},
    {Phase::Request, &ConnectionLimits::request_deadline, CloseReason::NoRequest},
    {Phase::Responding, &ConnectionLimits::response_deadline, CloseReason::ResponseNotTaken},
}};

// How many connections of a phase, from its front, are asked whether bytes
// wait on them: enough to pass over a burst's few, few enough that a flood
// of connections that each sent a byte costs little.
constexpr size_t kLookedAt = 16;

}  // namespace

void ConnectionTable::close_one(Phase phase, Queue::iterator at, CloseReason reason, std::vector<ToClose>& close) {
  Entry& e = entries_.at(at->second);
  queue(phase).erase(at);
  e.closing = true;
  --open_;
  close.push_back(ToClose{e.fd, e.peer, reason});
}

bool ConnectionTable::admit(std::vector<ToClose>& close, const std::function<bool(int fd)>& waiting) {
  if (open_ < limits_.max_connections) return true;
  for (const PhaseRule& rule : kRules) {
    Queue& q = queue(rule.phase);
    size_t looked = 0;
    for (auto it = q.begin(); it != q.end() && looked < kLookedAt; ++it, ++looked) {
      if (waiting(entries_.at(it->second).fd)) continue;
      close_one(rule.phase, it, CloseReason::MadeRoom, close);
      return true;
    }
  }
  // Bytes wait on each one looked at: the idlest all the same.
  for (const PhaseRule& rule : kRules) {
    if (queue(rule.phase).empty()) continue;
    close_one(rule.phase, queue(rule.phase).begin(), CloseReason::MadeRoom, close);
    return true;
  }
  return false;
}

uint64_t ConnectionTable::opened(int fd, std::string peer, Clock::time_point now) {
  const uint64_t id = next_++;
  entries_.emplace(id, Entry{fd, std::move(peer), Phase::Request, now});
  queue(Phase::Request).emplace(now, id);
  ++open_;
  return id;
}

void ConnectionTable::set_phase(uint64_t id, Phase phase, Clock::time_point now) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (!e.closing) {
    queue(e.phase).erase({e.since, id});
    queue(phase).emplace(now, id);
  }
  e.phase = phase;
  e.since = now;
}

void ConnectionTable::closed(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  if (!e.closing) {
    queue(e.phase).erase({e.since, id});
    --open_;
  }
  entries_.erase(it);
}

std::optional<Clock::time_point> ConnectionTable::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const PhaseRule& rule : kRules) {
    const Queue& q = queue(rule.phase);
    if (q.empty()) continue;
    const Clock::time_point due = q.begin()->first + limits_.*rule.limit;
    if (!next || due < *next) next = due;
  }
  return next;
}

std::vector<ToClose> ConnectionTable::expired(Clock::time_point now) {
  std::vector<ToClose> out;
  for (const PhaseRule& rule : kRules) {
    Queue& q = queue(rule.phase);
    while (!q.empty() && now - q.begin()->first >= limits_.*rule.limit)
      close_one(rule.phase, q.begin(), rule.expired, out);
  }
  return out;
}

}  // namespace histd::exporter
