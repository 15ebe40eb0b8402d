// SPDX-License-Identifier: GPL-2.0-only
#include "histd-exporter/guard.h"

#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "control/protocol.h"
#include "histd/fd.h"

namespace histd::exporter {

namespace {

constexpr int kHistdTimeoutSeconds = 10;
// How late a deadline may be acted on: the reaper wakes for the next
// deadline or a change, and at most this often.
constexpr auto kReapSlack = std::chrono::milliseconds(100);
constexpr auto kSummaryEvery = std::chrono::seconds(60);

// The earlier of two times, either of which may be none.
std::optional<Clock::time_point> sooner(std::optional<Clock::time_point> a, std::optional<Clock::time_point> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// The connection's id in the table, kept as its socket context.
uint64_t id_of(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? reinterpret_cast<uintptr_t>(info->socket_context) : 0;
}

std::string peer_of(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "?";
  char text[INET6_ADDRSTRLEN] = "?";
  const sockaddr* a = info->client_addr;
  if (a->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, text, sizeof text);
  else if (a->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, text, sizeof text);
  return text;
}

}  // namespace

Guard::Guard(std::string metrics_socket, ConnectionLimits limits)
    : socket_(std::move(metrics_socket)),
      limits_(limits),
      log_(kSummaryEvery, [](std::string_view line) { fmt::print(stderr, "{}\n", line); }),
      table_(limits) {}

Guard::~Guard() { stop(); }

void Guard::start() {
  reaper_ = std::thread([this] { reap(); });
}

void Guard::stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  log_.flush_all();
}

// Called with mu_ held: each fd is still open (libmicrohttpd tells closed()
// before it closes one, and closed() takes mu_). shutdown() makes
// libmicrohttpd's own poll see the end and close it.
void Guard::close_all(const std::vector<ToClose>& close) {
  for (const ToClose& t : close) {
    shutdown(t.fd, SHUT_RDWR);
    const std::string kind = fmt::format("histd-exporter: connection {}", describe(t.reason));
    log_.note(kind, fmt::format("{} ({})", kind, t.peer));
  }
}

bool Guard::admit() {
  std::lock_guard lock(mu_);
  std::vector<ToClose> close;
  const bool ok = table_.admit(close, [](int fd) {
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) == 0 && unread > 0;
  });
  close_all(close);
  if (!ok) {
    const std::string kind = "histd-exporter: connection refused: every connection is being answered";
    log_.note(kind, kind);
  }
  wake_for(soonest_locked());  // a count to write
  return ok;
}

void Guard::opened(MHD_Connection* c, void** socket_context) {
  const MHD_ConnectionInfo* fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  std::lock_guard lock(mu_);
  const uint64_t id = table_.opened(fd ? fd->connect_fd : -1, peer_of(c), Clock::now());
  *socket_context = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
  wake_for(soonest_locked());  // its deadline may be the next
}

void Guard::closed(void* socket_context) {
  std::lock_guard lock(mu_);
  table_.closed(reinterpret_cast<uintptr_t>(socket_context));
}

void Guard::handling(MHD_Connection* c) {
  const uint64_t id = id_of(c);
  std::lock_guard lock(mu_);
  table_.set_phase(id, Phase::Handling, Clock::now());
}

void Guard::responding(MHD_Connection* c) {
  const uint64_t id = id_of(c);
  std::lock_guard lock(mu_);
  table_.set_phase(id, Phase::Responding, Clock::now());
  wake_for(soonest_locked());
}

void Guard::completed(MHD_Connection* c) {
  const uint64_t id = id_of(c);
  std::lock_guard lock(mu_);
  table_.set_phase(id, Phase::KeepAlive, Clock::now());
  wake_for(soonest_locked());
}

void Guard::library_message(const char* format, const char* line) {
  std::string kind = std::string("histd-exporter: ") + format;
  std::string text = std::string("histd-exporter: ") + line;
  while (!kind.empty() && kind.back() == '\n') kind.pop_back();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  log_.note(kind, text);
}

// Asleep until the next deadline or the log's next count is due (none: until
// a connection comes, which wake_for() tells): an idle exporter wakes for
// nothing. stop_mu_ is never held while mu_ is taken (wake_for() takes it
// under mu_).
void Guard::reap() {
  for (;;) {
    std::optional<Clock::time_point> due;
    {
      std::lock_guard lock(mu_);
      close_all(table_.expired(Clock::now()));
      due = table_.next_deadline();
    }
    log_.flush();
    due = sooner(due, log_.next_due());
    std::unique_lock stop_lock(stop_mu_);
    if (changed_ && !stopping_) {  // told of something while it was awake: look again
      changed_ = false;
      continue;
    }
    asleep_ = true;
    asleep_until_ = due;
    auto woken = [this] { return stopping_ || changed_; };
    if (due)
      stop_cv_.wait_until(stop_lock, std::max(*due, Clock::now() + kReapSlack), woken);
    else
      stop_cv_.wait(stop_lock, woken);
    asleep_ = false;
    if (stopping_) return;
    changed_ = false;
  }
}

std::optional<Clock::time_point> Guard::soonest_locked() { return sooner(table_.next_deadline(), log_.next_due()); }

void Guard::wake_for(std::optional<Clock::time_point> due) {
  std::lock_guard lock(stop_mu_);
  if (!asleep_) {
    changed_ = true;  // it is awake: it looks again before it sleeps
    return;
  }
  if (!due || (asleep_until_ && *asleep_until_ <= *due)) return;
  changed_ = true;
  stop_cv_.notify_all();
}

Guard::Answer Guard::ask_histd(const char* format, std::string& error) const {
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (!fd || socket_.size() >= sizeof(addr.sun_path)) {
    error = "no socket";
    return {};
  }
  std::memcpy(addr.sun_path, socket_.c_str(), socket_.size() + 1);
  timeval tv{kHistdTimeoutSeconds, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = fmt::format("histd's metrics socket: {}", std::strerror(errno));
    return {};
  }
  auto sent = control::write_frame(
      fd.get(), {{"op", "metrics"}, {"event", ""}, {"command", format}, {"raw", true}, {"fd", true}});
  if (!sent) {
    error = sent.error().context;
    return {};
  }
  Answer answer;
  auto reply = control::read_frame_with_fd(fd.get(), answer.body);
  if (!reply) {
    error = reply.error().context;
    return {};
  }
  if (!reply->value("ok", false)) {
    error = reply->value("error", std::string("histd refused"));
    return {};
  }
  const auto size = reply->find("raw");
  if (reply->value("fd", false) && answer.body && size != reply->end() && size->is_number_unsigned()) {
    answer.size = size->get<size_t>();
    return answer;
  }
  answer.body = Fd();
  auto output = control::read_output(fd.get(), *reply);
  if (!output) {
    error = output.error().context;
    return {};
  }
  answer.text = std::move(*output);
  return answer;
}

}  // namespace histd::exporter
