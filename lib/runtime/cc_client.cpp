// SPDX-License-Identifier: GPL-2.0-only
#include "runtime/cc_client.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <string>
#include <vector>

extern char** environ;

// The pidfd calls go through syscall(): glibc 2.36's <sys/pidfd.h> declares
// them without C linkage, so C++ cannot link them.

namespace histd::runtime {

namespace {

// The server's end becomes its fd 3 (dup2 clears close-on-exec); stdin is
// /dev/null; stderr stays histd's, for the server's own complaints.
void init_spawn_actions(posix_spawn_file_actions_t& actions, int server_fd) {
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, server_fd, 3);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Not histd's working directory, which may be deleted under it (histd-cc
  // also moves to / itself).
  posix_spawn_file_actions_addchdir_np(&actions, "/");
}

// Its own process group: a Ctrl-C meant for a foreground histd is histd's
// to handle. Default signals and an empty mask, whatever the spawning
// thread had blocked.
void init_spawn_attributes(posix_spawnattr_t& attr) {
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
}

// A hung server costs one compile this long, then clang is asked.
void set_timeouts(int sock, std::chrono::milliseconds timeout) {
  struct timeval tv {};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace

CcClient::~CcClient() { stop(); }

bool CcClient::start(std::chrono::milliseconds timeout, std::chrono::milliseconds shed_after,
                     const cc::CcRequest* primer) {
  stop();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  Fd mine(sv[0]);
  Fd theirs(sv[1]);
  posix_spawn_file_actions_t actions;
  init_spawn_actions(actions, theirs.get());
  posix_spawnattr_t attr;
  init_spawn_attributes(attr);

  std::string program = program_.string();
  std::string fd_flag = "--fd";
  std::string fd_num = "3";
  std::string shed_flag = "--shed-after";
  std::string shed_ms = std::to_string(shed_after.count());
  std::vector<char*> argv{program.data(), fd_flag.data(), fd_num.data()};
  if (shed_after.count() > 0) argv.insert(argv.end(), {shed_flag.data(), shed_ms.data()});
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return false;
  pid_ = pid;
  pidfd_ = Fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  set_timeouts(mine.get(), timeout);
  sock_ = std::move(mine);
  if (primer) {
    // A few hundred bytes: the socket's buffer takes them while the server
    // loads its libraries. If it does not, the next request finds out.
    const std::string frame = cc::encode(*primer);
    owes_answer_ = cc::write_all(sock_.get(), frame.data(), frame.size());
  }
  return true;
}

std::optional<CcClient::Reply> CcClient::request(const cc::CcRequest& req) {
  if (!sock_) return std::nullopt;
  const std::string frame = cc::encode(req);
  Reply reply{cc::CcStatus::Failed, {}};
  errno = 0;
  // The primer's answer comes first, and is nobody's.
  const bool primer_read = !owes_answer_ || cc::read_response(sock_.get(), reply.status, reply.payload);
  owes_answer_ = false;
  if (!primer_read || !cc::write_all(sock_.get(), frame.data(), frame.size()) ||
      !cc::read_response(sock_.get(), reply.status, reply.payload)) {
    const bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
    const std::string how = stop();
    failure_ = timed_out     ? "did not answer in time"
               : how.empty() ? "stopped answering"
                             : "stopped answering (" + how + ")";
    return std::nullopt;
  }
  return reply;
}

std::string CcClient::stop() {
  sock_ = Fd();  // EOF: an idle server ends by itself
  owes_answer_ = false;
  if (pid_ <= 0) return {};
  // Through the pidfd: if histd daemonized after starting the server, init
  // reaps it, and a bare pid could by now name another process.
  if (pidfd_) syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  // ECHILD when histd daemonized after starting it: not ours to reap.
  int status = 0;
  pid_t got = -1;
  while ((got = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  pidfd_ = Fd();
  pid_ = 0;
  if (got <= 0) return {};
  return WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                             : fmt::format("exit status {}", WEXITSTATUS(status));
}

}  // namespace histd::runtime
