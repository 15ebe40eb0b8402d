#include "histd/metrics_listener.h"

#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace histd::daemon {

namespace {

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
  if (rc != 0) return fail(ErrorKind::Invalid, EINVAL, fmt::format("--metrics-listen {}: {}", listen, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  int err = 0;
  for (addrinfo* a = found; a; a = a->ai_next) {
    Fd s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (!s) continue;
    const int one = 1;
    setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.get(), 128) == 0) return s;
    err = errno;
  }
  return fail(ErrorKind::System, err ? err : EADDRNOTAVAIL,
              fmt::format("--metrics-listen {}: {}", listen, std::strerror(err ? err : EADDRNOTAVAIL)));
}

}  // namespace

Expected<std::unique_ptr<MetricsListener>> MetricsListener::open(const std::string& listen, const std::string& user,
                                                                 std::filesystem::path metrics_socket) {
  std::unique_ptr<MetricsListener> m(new MetricsListener());
  const passwd* pw = getpwnam(user.c_str());
  if (!pw) return fail(ErrorKind::Invalid, EINVAL, "--metrics-user " + user + ": no such user");
  if (pw->pw_uid == 0) return fail(ErrorKind::Invalid, EINVAL, "--metrics-user must not be root: it serves the network");
  m->uid_ = pw->pw_uid;
  m->gid_ = pw->pw_gid;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  m->exporter_ = (self.parent_path() / "histd-exporter").string();
  if (access(m->exporter_.c_str(), X_OK) != 0)
    return fail(ErrorKind::NotFound, ENOENT, "--metrics-listen: no histd-exporter next to histd at " + m->exporter_);
  m->socket_ = std::move(metrics_socket);
  m->listen_ = HISTD_TRY(bind_listen(listen));
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return fail_errno("pipe2");
  m->stop_read_ = Fd(ends[0]);
  m->stop_write_ = Fd(ends[1]);
  return m;
}

void MetricsListener::start() { thread_ = std::thread([this] { supervise(); }); }

pid_t MetricsListener::spawn() const {
  std::string program = exporter_, fd_flag = "--listen-fd", fd_num = "3", stop_flag = "--stop-fd", stop_num = "4",
              sock_flag = "--socket", sock = socket_.string();
  std::vector<char*> argv{program.data(), fd_flag.data(),  fd_num.data(), stop_flag.data(),
                          stop_num.data(), sock_flag.data(), sock.data(),   nullptr};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // The child of a process with threads: async-signal-safe calls only.
  if (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0) _exit(126);
  // Cleared by the change of user: set after it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(0);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) signal(s, SIG_DFL);
  // Without close-on-exec (dup2 clears it): the port, and the stop pipe.
  if (dup2(listen_.get(), 3) < 0 || dup2(stop_read_.get(), 4) < 0) _exit(126);
  close_range(5, ~0U, 0);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  if (chdir("/") != 0) _exit(126);
  execv(program.c_str(), argv.data());
  _exit(127);
}

void MetricsListener::supervise() {
  auto backoff = std::chrono::seconds(1);
  for (;;) {
    const pid_t pid = spawn();
    {
      std::lock_guard lock(mu_);
      child_ = pid > 0 ? pid : 0;
      if (stopping_ && pid > 0) kill(pid, SIGTERM);  // stopped while it was being started
    }
    int status = 0;
    if (pid > 0)
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    std::unique_lock lock(mu_);
    child_ = 0;
    if (stopping_) return;
    fmt::print(stderr, "histd: the metrics exporter {} ({}); starting it again in {} s\n",
               pid > 0 ? fmt::format("(pid {}) ended", pid) : "could not start",
               WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                   : fmt::format("status {}", WEXITSTATUS(status)),
               backoff.count());
    if (cv_.wait_for(lock, backoff, [this] { return stopping_; })) return;
    backoff = std::min(backoff * 2, std::chrono::seconds(30));
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
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The exporter ends when the stop pipe closes; one that does not is killed.
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
