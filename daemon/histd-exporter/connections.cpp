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

void ConnectionTable::close_locked(Entry& e, CloseReason reason, std::vector<ToClose>& close) {
  e.closing = true;
  --open_;
  close.push_back(ToClose{e.fd, e.peer, reason});
}

bool ConnectionTable::admit(std::vector<ToClose>& close) {
  if (open_ < limits_.max_connections) return true;
  // The idlest first: a kept-alive connection, then one that has not sent
  // its request, then a response being taken; each the longest in its phase.
  constexpr std::array<Phase, 3> kOrder = {Phase::KeepAlive, Phase::Request, Phase::Responding};
  for (const Phase phase : kOrder) {
    Entry* idlest = nullptr;
    for (auto& [id, e] : entries_)
      if (!e.closing && e.phase == phase && (!idlest || e.since < idlest->since)) idlest = &e;
    if (idlest) {
      close_locked(*idlest, CloseReason::MadeRoom, close);
      return true;
    }
  }
  return false;
}

uint64_t ConnectionTable::opened(int fd, std::string peer, Clock::time_point now) {
  const uint64_t id = next_++;
  entries_.emplace(id, Entry{fd, std::move(peer), Phase::Request, now});
  ++open_;
  return id;
}

void ConnectionTable::set_phase(uint64_t id, Phase phase, Clock::time_point now) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.phase = phase;
  it->second.since = now;
}

void ConnectionTable::closed(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.closing) --open_;
  entries_.erase(it);
}

std::optional<Clock::time_point> ConnectionTable::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& [id, e] : entries_) {
    if (e.closing || e.phase == Phase::Handling) continue;
    const Clock::duration limit = e.phase == Phase::Request      ? limits_.request_deadline
                                  : e.phase == Phase::Responding ? limits_.response_deadline
                                                                 : limits_.keep_alive;
    if (!next || e.since + limit < *next) next = e.since + limit;
  }
  return next;
}

std::vector<ToClose> ConnectionTable::expired(Clock::time_point now) {
  std::vector<ToClose> out;
  for (auto& [id, e] : entries_) {
    if (e.closing) continue;
    const Clock::duration in_phase = now - e.since;
    switch (e.phase) {
      case Phase::Request:
        if (in_phase >= limits_.request_deadline) close_locked(e, CloseReason::NoRequest, out);
        break;
      case Phase::Responding:
        if (in_phase >= limits_.response_deadline) close_locked(e, CloseReason::ResponseNotTaken, out);
        break;
      case Phase::KeepAlive:
        if (in_phase >= limits_.keep_alive) close_locked(e, CloseReason::IdleKeepAlive, out);
        break;
      case Phase::Handling:
        break;
    }
  }
  return out;
}

}  // namespace histd::exporter
