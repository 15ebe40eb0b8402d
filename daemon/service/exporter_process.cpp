// SPDX-License-Identifier: GPL-2.0-only
#include "service/exporter_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

extern char** environ;

namespace histd::daemon {

namespace {

constexpr uid_t kNobody = 65534;
constexpr const char* kMakeOne =
    "the Debian package makes histd-exporter; else: adduser --system --group "
    "--no-create-home --home /nonexistent histd-exporter";

// A process other than an exporter that runs as `uid` (its pid and name), if any.
std::optional<std::pair<pid_t, std::string>> other_process_of(uid_t uid) {
  DIR* proc = opendir("/proc");
  if (!proc) return std::nullopt;
  std::optional<std::pair<pid_t, std::string>> found;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream status(fmt::format("/proc/{}/status", pid));
    std::string line, name;
    uid_t real = 0;
    bool have_uid = false;
    while (std::getline(status, line)) {
      if (line.starts_with("Name:")) name = line.substr(line.find_first_not_of(" \t", 5));
      if (line.starts_with("Uid:")) have_uid = std::sscanf(line.c_str(), "Uid: %u", &real) == 1;
    }
    if (have_uid && real == uid && name != "histd-exporter") {
      found = std::make_pair(pid, name);
      break;
    }
  }
  closedir(proc);
  return found;
}

// The child's errno to the parent, and its end.
[[noreturn]] void child_failed(int report, int err) {
  (void)!write(report, &err, sizeof err);
  _exit(127);
}

// In the child, before exec: async-signal-safe calls only. Moves each fd
// (and the report pipe's) out of the way (to 64 and up, close-on-exec),
// then onto 3, 4 and 5.
[[noreturn]] void exec_child(int exe, const ExporterUser& user, const ExporterFds& fds, int report_fd, pid_t parent) {
  const int report = fcntl(report_fd, F_DUPFD_CLOEXEC, 64);
  auto fail = [report](int err) { child_failed(report, err); };
  if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0) fail(errno);
  // Cleared by the change of user: set after it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(0);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) signal(s, SIG_DFL);
  const int moved_exe = fcntl(exe, F_DUPFD_CLOEXEC, 64);
  const int from[3] = {fds.listen, fds.stop, fds.metrics_socket};
  int moved[3];
  for (int i = 0; i < 3; ++i)
    if ((moved[i] = fcntl(from[i], F_DUPFD_CLOEXEC, 64)) < 0) fail(errno);
  for (int i = 0; i < 3; ++i)
    if (dup2(moved[i], 3 + i) < 0) fail(errno);  // without close-on-exec
  if (moved_exe < 0) fail(EBADF);
  close_range(6, 63, 0);
  const int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  if (chdir("/") != 0) fail(errno);
  char program[] = "histd-exporter", listen[] = "--listen-fd", three[] = "3", stop[] = "--stop-fd", four[] = "4",
       sock[] = "--socket-fd", five[] = "5";
  char* argv[] = {program, listen, three, stop, four, sock, five, nullptr};
  syscall(SYS_execveat, moved_exe, "", argv, environ, AT_EMPTY_PATH);
  child_failed(report, errno);
}

}  // namespace

Expected<ExporterUser> exporter_user(const std::string& name) {
  const passwd* pw = getpwnam(name.c_str());
  if (!pw) return fail(ErrorKind::Invalid, EINVAL, fmt::format("--metrics-user {}: no such user ({})", name, kMakeOne));
  if (pw->pw_uid == 0)
    return fail(ErrorKind::Invalid, EINVAL, "--metrics-user must not be root: it serves the network");
  if (pw->pw_uid == kNobody)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("--metrics-user {}: other daemons run as it, and could take the exporter's socket or "
                            "signal it; it needs a user of its own ({})",
                            name, kMakeOne));
  if (const auto other = other_process_of(pw->pw_uid))
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("--metrics-user {}: pid {} ({}) runs as it, and could take the exporter's socket or "
                            "signal it; the exporter needs a user of its own",
                            name, other->first, other->second));
  return ExporterUser{name, pw->pw_uid, pw->pw_gid};
}

Expected<pid_t> spawn_exporter(int exe, const ExporterUser& user, const ExporterFds& fds) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return fail_errno("pipe2");
  Fd read_end(report[0]), write_end(report[1]);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return fail_errno("fork");
  if (pid == 0) exec_child(exe, user, fds, write_end.get(), parent);
  write_end = Fd();
  // The pipe closes at the exec (close-on-exec): nothing read means it ran.
  int err = 0;
  ssize_t n;
  while ((n = read(read_end.get(), &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof err)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail(ErrorKind::System, err,
                fmt::format("cannot run histd-exporter as {}: {}", user.name, std::strerror(err)));
  }
  return pid;
}

bool answer_unavailable(int listen_fd, std::string_view why) {
  Fd c(accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!c) return false;
  // What the client sent is read (not parsed), so that closing with it
  // unread does not reset the connection before the answer is read; a
  // client that sends nothing is not waited for long.
  pollfd request{c.get(), POLLIN, 0};
  poll(&request, 1, 200);
  char scratch[4096];
  while (recv(c.get(), scratch, sizeof scratch, MSG_DONTWAIT) > 0) {
  }
  const std::string body = fmt::format("histd-exporter is not running: {}\n", why);
  const std::string answer = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
      "Retry-After: 5\r\nConnection: close\r\n\r\n{}",
      body.size(), body);
  (void)!send(c.get(), answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  shutdown(c.get(), SHUT_WR);
  return true;
}

}  // namespace histd::daemon
