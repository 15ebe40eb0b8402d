// SPDX-License-Identifier: GPL-2.0-only
// Probe events: the kernel's kprobe_events / uprobe_events writes go to
// the kernel's file, which checks them, makes the events and lists them;
// histd attaches a kprobe-type program to such an event like to any
// tracepoint (pipeline::probe_entry computes its record).
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "histd/probe_files.h"

namespace histd::deploy {

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The reason of the kernel's newest error_log entry from a probe parser
// ("trace_kprobe: error: Invalid fetch argument"), if it has one.
std::string kernel_reason(const std::filesystem::path& root) {
  const std::string log = read_text(root / "error_log");
  const size_t at = log.rfind("probe: error: ");
  if (at == std::string::npos) return {};
  const size_t begin = at + std::strlen("probe: error: ");
  return log.substr(begin, log.find('\n', begin) - begin);
}

}  // namespace

std::string ProbeFiles::probe_events(const std::string& file) const { return read_text(catalog_.root() / file); }

Status ProbeFiles::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
  if (file != "kprobe_events" && file != "uprobe_events" && file != "dynamic_events")
    return fail(ErrorKind::NotFound, ENOENT, fmt::format("{}: not a probe events file", file));
  const std::filesystem::path path = catalog_.root() / file;
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND));
  if (fd < 0) return fail(ErrorKind::System, errno, fmt::format("opening {}: {}", path.string(), std::strerror(errno)));
  const std::string before = read_text(catalog_.root() / "error_log");
  int err = 0;
  if (!text.empty() && write(fd, text.data(), text.size()) < 0) err = errno;
  close(fd);
  // Whatever the kernel made or removed, an event of a name may be another now.
  catalog_.forget_probes();
  if (err == 0) return ok_status();
  std::string why = read_text(catalog_.root() / "error_log") != before ? kernel_reason(catalog_.root()) : "";
  if (why.empty()) why = std::strerror(err);
  return fail(err == EBUSY ? ErrorKind::Busy : ErrorKind::Invalid, err, fmt::format("the kernel refused it: {}", why));
}

}  // namespace histd::deploy
