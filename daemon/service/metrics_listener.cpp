// SPDX-License-Identifier: GPL-2.0-only
#include "service/metrics_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace histd::daemon {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFirstDelay = std::chrono::seconds(1);
constexpr auto kLongestDelay = std::chrono::seconds(30);
// An exporter that ran this long was healthy: the next delay is the first.
constexpr auto kHealthyRun = std::chrono::seconds(60);
// Connections the kernel keeps for the exporter (the least of this and
// net.core.somaxconn, 4096 by default). The one number bounds both those
// still silent (below; past it the kernel answers with SYN cookies, and
// those are handed over at once) and those waiting to be accepted. A short
// queue that a flood of connections fills makes a scraper's connection wait
// for its SYN to be sent again: a second, then three.
constexpr int kBacklog = 4096;
// A connection is handed to the exporter once its client has sent
// something, or after this long (the kernel waits for its SYN-ACKs' resends
// at 1, 2 and 4 s: 7 s), when the exporter's own deadline for a whole
// request begins: connections opened and left silent wait in the kernel
// instead of taking the exporter's time and places.
constexpr int kDeferAcceptSeconds = 5;

// "HOST:PORT", "[V6]:PORT" or ":PORT" (every address).
Expected<std::pair<std::string, std::string>> split_listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size())
    return fail(ErrorKind::Invalid, EINVAL, "--metrics-listen " + listen + ": expected ADDRESS:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::make_pair(host, listen.substr(colon + 1));
}

Expected<Fd> bind_listen(const std::string& listen) {
  auto parts = HISTD_TRY(split_listen(listen));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(parts.first.empty() ? nullptr : parts.first.c_str(), parts.second.c_str(), &hints, &found);
  if (rc != 0)
    return fail(ErrorKind::Invalid, EINVAL, fmt::format("--metrics-listen {}: {}", listen, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  int err = 0;
  for (addrinfo* a = found; a; a = a->ai_next) {
    Fd s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (!s) continue;
    const int one = 1;
    setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(s.get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &kDeferAcceptSeconds, sizeof kDeferAcceptSeconds);
    if (bind(s.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.get(), kBacklog) == 0) return s;
    err = errno;
  }
  return fail(ErrorKind::System, err ? err : EADDRNOTAVAIL,
              fmt::format("--metrics-listen {}: {}", listen, std::strerror(err ? err : EADDRNOTAVAIL)));
}

}  // namespace

Expected<std::unique_ptr<MetricsListener>> MetricsListener::open(const std::string& listen, const std::string& user,
                                                                 std::filesystem::path metrics_socket) {
  std::unique_ptr<MetricsListener> m(new MetricsListener());
  HISTD_TRY(split_listen(listen));  // the command line's own mistakes first
  m->user_ = HISTD_TRY(exporter_user(user));
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string exporter = (self.parent_path() / "histd-exporter").string();
  m->exporter_ = Fd(::open(exporter.c_str(), O_PATH | O_CLOEXEC));
  if (!m->exporter_ || access(exporter.c_str(), X_OK) != 0)
    return fail(ErrorKind::NotFound, ENOENT, "--metrics-listen: no histd-exporter next to histd at " + exporter);
  m->socket_ = std::move(metrics_socket);
  m->listen_ = HISTD_TRY(bind_listen(listen));
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return fail_errno("pipe2");
  m->stop_read_ = Fd(ends[0]);
  m->stop_write_ = Fd(ends[1]);
  return m;
}

void MetricsListener::start() {
  thread_ = std::thread([this] { supervise(); });
}

Expected<pid_t> MetricsListener::spawn() {
  // Opened here, as histd's user, whatever the directories' modes: the
  // exporter connects through it (/proc/self/fd/5).
  Fd socket(::open(socket_.c_str(), O_PATH | O_CLOEXEC));
  if (!socket) return fail_errno("histd's metrics socket " + socket_.string());
  return spawn_exporter(exporter_.get(), user_, ExporterFds{listen_.get(), stop_read_.get(), socket.get()});
}

bool MetricsListener::unavailable_until(Clock::time_point until, const std::string& why) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    // The stop pipe's read end sees its writer closed when histd stops.
    pollfd fds[2] = {{stop_read_.get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) return false;
    if (fds[0].revents) return true;
    if (fds[1].revents & POLLIN) answer_unavailable(listen_.get(), why);
  }
}

void MetricsListener::supervise() {
  auto delay = std::chrono::duration_cast<Clock::duration>(kFirstDelay);
  for (;;) {
    const Clock::time_point started = Clock::now();
    auto pid = spawn();
    std::string why;
    if (pid) {
      {
        std::lock_guard lock(mu_);
        child_ = *pid;
      }
      int status = 0;
      while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
      }
      std::lock_guard lock(mu_);
      child_ = 0;
      why = fmt::format("it (pid {}) ended ({})", *pid,
                        WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                            : fmt::format("status {}", WEXITSTATUS(status)));
    } else {
      why = pid.error().context;
    }
    pollfd stopped{stop_read_.get(), POLLIN, 0};
    if (poll(&stopped, 1, 0) > 0) return;
    if (Clock::now() - started >= kHealthyRun) delay = kFirstDelay;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(delay).count();
    fmt::print(stderr, "histd: the metrics exporter: {}; starting it again in {} s\n", why, seconds);
    if (unavailable_until(Clock::now() + delay, fmt::format("{}; histd starts it again in {} s", why, seconds))) return;
    delay = std::min<Clock::duration>(delay * 2, kLongestDelay);
  }
}

bool MetricsListener::wait_child(std::chrono::milliseconds limit) {
  for (auto waited = std::chrono::milliseconds(0); waited < limit; waited += std::chrono::milliseconds(50)) {
    {
      std::lock_guard lock(mu_);
      if (child_ == 0) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::lock_guard lock(mu_);
  return child_ == 0;
}

MetricsListener::~MetricsListener() {
  if (!thread_.joinable()) return;
  // The exporter ends when the stop pipe closes, and supervise() sees it
  // closed; an exporter that does not end is killed.
  stop_write_ = Fd();
  if (!wait_child(std::chrono::seconds(2))) {
    std::lock_guard lock(mu_);
    if (child_ > 0) kill(child_, SIGKILL);
  }
  if (wait_child(std::chrono::seconds(2))) {
    thread_.join();
    return;
  }
  // Not even killed (no CAP_KILL): histd must still end. The thread ends
  // with the process, and the exporter then gets its PR_SET_PDEATHSIG.
  fmt::print(stderr, "histd: the metrics exporter did not end\n");
  thread_.detach();
}

}  // namespace histd::daemon
