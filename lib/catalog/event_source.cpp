// SPDX-License-Identifier: GPL-2.0-only
// What kind of event a format describes (EventSource): decided here, once,
// as the catalog reads or adds a format.
#include "histd/catalog.h"

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

EventSource Catalog::source(std::string_view system, std::string_view name) const {
  auto format = event(system, name);
  return format ? (*format)->source : event_source(system);
}

}  // namespace histd::catalog
