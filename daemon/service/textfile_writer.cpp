// SPDX-License-Identifier: GPL-2.0-only
#include "service/textfile_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "histd/fd.h"

namespace histd::daemon {

Expected<std::unique_ptr<TextfileWriter>> TextfileWriter::open(std::filesystem::path dir,
                                                               std::chrono::seconds interval) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    return fail(ErrorKind::NotFound, errno, fmt::format("--textfile-dir {}: {}", dir.string(), std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    return fail(ErrorKind::Invalid, ENOTDIR, fmt::format("--textfile-dir {}: not a directory", dir.string()));
  if (access(dir.c_str(), W_OK) != 0)
    return fail(ErrorKind::Invalid, errno, fmt::format("--textfile-dir {}: {}", dir.string(), std::strerror(errno)));
  std::unique_ptr<TextfileWriter> w(new TextfileWriter());
  w->path_ = dir / "histd.prom";
  w->dir_ = std::move(dir);
  w->interval_ = interval;
  return w;
}

Status TextfileWriter::write(const std::string& text) const {
  // Not *.prom until renamed: the collector reads *.prom files only.
  std::string tmp = (dir_ / ".histd.prom.XXXXXX").string();
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  Fd fd(mkostemp(name.data(), O_CLOEXEC));
  if (!fd) return fail_errno("create a file in " + dir_.string());
  // Named after the file it was to become: the same cause reads the same.
  auto undo = [&](const char* what) {
    const int err = errno;
    unlink(name.data());
    errno = err;
    return fail_errno(fmt::format("{} {}", what, path_.string()));
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return undo("write");
    done += static_cast<size_t>(n);
  }
  // Readable by the collector, which need not run as root.
  if (fchmod(fd.get(), 0644) != 0) return undo("chmod");
  if (rename(name.data(), path_.c_str()) != 0) return undo("rename");
  return ok_status();
}

void TextfileWriter::start(std::function<std::string()> render) {
  render_ = std::move(render);
  thread_ = std::thread([this] { loop(); });
}

void TextfileWriter::loop() {
  std::string last_error;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const Status s = write(render_());
    const std::string error = s ? std::string() : s.error().context;
    // Once per cause, not every interval; and once when it is mended.
    if (error != last_error)
      fmt::print(stderr, "histd: --textfile-dir: {}\n",
                 error.empty() ? "writing " + path_.string() + " again" : error + " (the last whole file stays)");
    last_error = error;
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

TextfileWriter::~TextfileWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace histd::daemon
