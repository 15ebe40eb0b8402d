// SPDX-License-Identifier: GPL-2.0-only
// Probe events histd defines itself: eprobes (dynamic_events' `e:`), an
// event whose record is computed from each record of another event, read
// as the kernel's trace_eprobe.c reads them, and the event format histd
// gives each. Pure. (This kernel family has no eprobe events unless built
// with CONFIG_EPROBE_EVENTS; histd's run on any BPF kernel.)
//
// Grammar (Documentation/trace/eprobetrace.rst):
//   e[:[GRP/][EVENT]] SYSTEM.EVENT [FETCHARGS] [if FILTER]   define
//   -:[GRP/][EVENT]                                remove
// FETCHARGS as catalog::parse_probe_arg reads them ([NAME=]FETCHARG[:TYPE]),
// where $FIELD is a field of the attached event.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/result.h"

namespace histd::probe {

inline constexpr std::string_view kEprobeGroup = "eprobes";  // EPROBE_EVENT_SYSTEM
inline constexpr size_t kMaxNameLength = 63;                 // MAX_EVENT_NAME_LEN - 1
inline constexpr size_t kMaxArgNameLength = 32;              // MAX_ARG_NAME_LEN
inline constexpr size_t kMaxArgs = 128;                      // MAX_TRACE_ARGS

struct Define {
  catalog::ProbeDefinition def;        // eprobe: attached_system.attached_event, args typed
  std::vector<std::string> arg_texts;  // each argument's FETCHARG[:TYPE] as written (listed so)
  std::vector<uint32_t> arg_at;        // where each FETCHARG starts in the logged command
  // `if FILTER`: on the attached event's record, which the eprobe sees only
  // when it matches ("": none); `filter_at`: where it starts in the command.
  std::string filter;
  uint32_t filter_at = 0;
  friend bool operator==(const Define&, const Define&) = default;
};
struct Remove {
  std::string group;  // empty: any group
  std::string event;
};
struct ProbeCommand {
  std::variant<Define, Remove> what;
  // The logged command: the words joined by one blank, as the kernel's
  // error_log shows it; a Diagnostic's span indexes into it.
  std::string command;
};

// Parses one dynamic_events line of an eprobe, or a removal. Errors carry
// the kernel's probe codes (ErrorCode::ProbeBadFetchArg, ...) at the
// kernel's position. A line that is empty once a '#' comment and white
// space are gone fails with ErrorCode::EmptyCommand (nothing to do); a line
// of another kind (p:, r:, s:) with ErrorCode::UnknownCommand.
Result<ProbeCommand, Diagnostic> parse_probe_command(std::string_view line);

// The type an argument is recorded as: the one written, else "string" for
// $comm and "x64" for the rest (the kernel's DEFAULT_FETCH_TYPE).
std::string arg_type(const catalog::ProbeArg& arg);

// The line dynamic_events lists for a definition
// ("e:eprobes/open syscalls.sys_enter_openat file=+0($filename):ustring").
std::string list_line(const Define& d);
// The line that defines it again (its state-file form): the listing, and
// its filter, which the kernel's listing does not show.
std::string defining_line(const Define& d);

// The event format of an eprobe, as the kernel's tracefs shows it
// (events/GRP/EVENT/format): the common fields, then each argument packed
// after the other, and the kernel's print fmt. `probe` and `source`
// (EventSource::Probe) are set.
catalog::EventFormat format_of(const catalog::ProbeDefinition& def, uint32_t id);

// What the kernel's trace shows between the event's name and its
// arguments: "(SYSTEM.EVENT)" (print_eprobe_event()).
std::string trace_prefix(const catalog::ProbeDefinition& def);

}  // namespace histd::probe
