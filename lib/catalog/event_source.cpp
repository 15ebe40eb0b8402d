// SPDX-License-Identifier: GPL-2.0-only
// What kind of event a format describes (EventSource): decided here, once,
// as the catalog reads or adds a format.
#include "histd/catalog.h"
#include "histd/enum_rows.h"

namespace histd::catalog {

EventSource event_source(std::string_view system) {
  if (system == kSynthSystem) return EventSource::Synthetic;
  if (system == kMarkerSystem) return EventSource::Marker;
  return EventSource::Tracepoint;
}

EventSource event_source(const EventFormat& format) {
  if (const EventSource by_name = event_source(format.system); by_name != EventSource::Tracepoint) return by_name;
  // kprobe and uprobe events live in systems their creator names; what
  // marks them is the probe address the kernel puts first in the record
  // (a return probe's: the function's).
  if (format.find("__probe_ip") || format.find("__probe_func")) return EventSource::Probe;
  // histd's eprobes have no probe address: their definition says it.
  if (format.probe && format.probe->eprobe) return EventSource::Probe;
  if (syscall_event(format)) return EventSource::RawSyscall;
  return EventSource::Tracepoint;
}

namespace {

using enum EventSource;
// clang-format off
constexpr EventSourceTraits kTraits[] = {
  // source     kernel_tracepoint injected registers may_change enable_file eprobe_target
  {Tracepoint,  true,             false,   false,    false,     true,       true},
  {RawSyscall,  true,             false,   false,    false,     true,       true},
  {Synthetic,   false,            true,    false,    false,     true,       true},
  {Marker,      false,            true,    false,    false,     false,      false},
  {Probe,       false,            false,   true,     true,      true,       false},
};
// clang-format on

// Probe is the last kind.
static_assert(rows_follow_enum(kTraits, &EventSourceTraits::source, static_cast<size_t>(Probe) + 1),
              "a row per value, in the enum's order");

}  // namespace

const EventSourceTraits& source_traits(EventSource source) { return kTraits[static_cast<size_t>(source)]; }

EventSource Catalog::source(std::string_view system, std::string_view name) const {
  auto format = event(system, name);
  return format ? (*format)->source : event_source(system);
}

}  // namespace histd::catalog
