// SPDX-License-Identifier: GPL-2.0-only
// Probe events: the kernel's kprobe_events / uprobe_events writes go to
// the kernel's file, which checks them, makes the events and lists them;
// histd attaches a kprobe-type program to such an event like to any
// tracepoint (pipeline::probe_entry computes its record). histd's own
// eprobes run a tracepoint program at the event they are attached to.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deploy/state.h"
#include "histd/deploy.h"

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

std::string Deployer::probe_events(const std::string& file) const { return read_text(catalog_.root() / file); }

Status Deployer::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
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

std::optional<catalog::EventId> Deployer::eprobe_attached(const EventState& ev) const {
  if (catalog_.source(ev.system, ev.event) != catalog::EventSource::Probe) return std::nullopt;
  auto format = catalog_.event(ev.system, ev.event);
  if (!format || !(*format)->probe || !(*format)->probe->eprobe) return std::nullopt;
  const catalog::ProbeDefinition& d = *(*format)->probe;
  return catalog::EventId{d.attached_system, d.attached_event};
}

std::vector<std::pair<std::string, const EventState*>> Deployer::synth_eprobes() const {
  std::vector<std::pair<std::string, const EventState*>> out;
  for (const auto& [id, ev] : events_) {
    if (!ev->recorded() || !ev->record_slot) continue;
    std::optional<catalog::EventId> on = eprobe_attached(*ev);
    if (on && on->system == catalog::kSynthSystem) out.emplace_back(std::move(on->name), ev.get());
  }
  return out;
}

std::optional<codegen::EprobeOutput> Deployer::eprobe_output(const EventState& ev, const std::string& synth) const {
  auto attached = catalog_.event(catalog::kSynthSystem, synth);
  auto format = catalog_.event(ev.system, ev.event);
  if (!attached || !format) return std::nullopt;
  auto entry = pipeline::probe_entry(**format, attached->get());
  if (!entry) return std::nullopt;  // checked when it was defined
  return codegen::EprobeOutput{std::move(*entry), (*format)->id, *ev.record_slot};
}

Status Deployer::refresh_eprobe_generators(const EventState& ev) {
  const std::optional<catalog::EventId> on = eprobe_attached(ev);
  if (!on || on->system != catalog::kSynthSystem) return ok_status();
  auto st = refresh_synth(on->name);
  if (!st) return st;
  return rebuild_generators(on->name);
}

}  // namespace histd::deploy
