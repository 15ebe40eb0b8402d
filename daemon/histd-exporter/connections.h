// SPDX-License-Identifier: GPL-2.0-only
// The exporter's connections, by what each is doing and since when, so
// that no client can starve a scrape: a request must come whole within a
// deadline (slowloris), a response must be taken within one (a reader that
// stalls), and at the cap a new connection takes the place of the idlest
// one instead of being refused (thousands of idle connections). Pure: the
// caller holds the lock, and closes what it is told to close.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace histd::exporter {

using Clock = std::chrono::steady_clock;

struct ConnectionLimits {
  size_t max_connections = 256;
  // From its start, a connection's first request must have come whole.
  Clock::duration request_deadline = std::chrono::seconds(5);
  // After a response, the next request on the kept-alive connection.
  Clock::duration keep_alive = std::chrono::seconds(60);
  // A response must have been taken by the client.
  Clock::duration response_deadline = std::chrono::seconds(60);
};

enum class Phase {
  Request,     // waiting for its first request to come whole
  Handling,    // the request is being answered (histd asked): never closed
  Responding,  // the response is being sent
  KeepAlive,   // waiting for its next request
};
constexpr size_t kPhases = 4;

// Why a connection is to be closed.
enum class CloseReason { NoRequest, ResponseNotTaken, IdleKeepAlive, MadeRoom };
std::string_view describe(CloseReason reason);

struct ToClose {
  int fd;
  std::string peer;
  CloseReason reason;
};

class ConnectionTable {
 public:
  explicit ConnectionTable(ConnectionLimits limits) : limits_(limits) {}

  // Whether a new connection may come in: at the cap, the idlest open one
  // (kept alive longest, else waiting longest for its request, else the
  // oldest response) is added to `close`; none of those, it may not.
  // `waiting(fd)`: whether the connection's client has sent bytes not yet
  // read. Such a connection is not idle (a scraper whose request came in a
  // flood of connections is read after them) and is passed over while one
  // of the first few of its phase has none.
  // Every call here is O(log n) or the connections it closes: a flood of
  // connections costs each its own work, not a walk of all the others.
  bool admit(std::vector<ToClose>& close, const std::function<bool(int fd)>& waiting);
  // A connection came in: its id.
  uint64_t opened(int fd, std::string peer, Clock::time_point now);
  void set_phase(uint64_t id, Phase phase, Clock::time_point now);
  void closed(uint64_t id);
  // The connections past their phase's deadline, marked closing.
  std::vector<ToClose> expired(Clock::time_point now);
  // When the next deadline comes; none when no connection has one (an idle
  // exporter need not wake).
  std::optional<Clock::time_point> next_deadline() const;
  // Open and not being closed.
  size_t open() const { return open_; }
  const ConnectionLimits& limits() const { return limits_; }

 private:
  struct Entry {
    int fd;
    std::string peer;
    Phase phase;
    Clock::time_point since;
    bool closing = false;
  };
  // A phase's connections by how long they have been in it.
  using Queue = std::set<std::pair<Clock::time_point, uint64_t>>;
  Queue& queue(Phase phase) { return by_phase_[static_cast<size_t>(phase)]; }
  const Queue& queue(Phase phase) const { return by_phase_[static_cast<size_t>(phase)]; }
  // The connection at `at` in `phase`'s queue, out of the queue and handed to
  // `close` with `reason`.
  void close_one(Phase phase, Queue::iterator at, CloseReason reason, std::vector<ToClose>& close);
  ConnectionLimits limits_;
  std::unordered_map<uint64_t, Entry> entries_;
  // Open connections only: one being closed is in none.
  std::array<Queue, kPhases> by_phase_;
  uint64_t next_ = 1;
  size_t open_ = 0;
};

}  // namespace histd::exporter
