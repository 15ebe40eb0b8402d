// SPDX-License-Identifier: GPL-2.0-only
// Synthetic event definitions: what is written to the `synthetic_events`
// file, and the event format histd gives each definition. Pure.
//
// Grammar (the kernel's trace_events_synth.c):
//   <name> <type> <field>[; <type> <field>]...     define (legacy: no ';')
//   !<name> [fields...]                            remove
// Types: u64 s64 u32 s32 u16 s16 u8 s8 char "unsigned char" int "unsigned int"
// long "unsigned long" bool pid_t gfp_t, char[N] (N <= 256), char[] (dynamic
// string), long[] / "unsigned long[]" (a stack).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/result.h"

namespace histd::synth {

// SYNTH_FIELDS_MAX: a 65th field is refused with SynthTooManyFields.
inline constexpr uint32_t kMaxFields = 64;
// STR_VAR_LEN_MAX: the bytes a static string (char[N]) takes in the record,
// whatever N is, and the largest N.
inline constexpr uint32_t kStaticStringSlot = 256;

struct SynthField {
  enum class Kind {
    Integer,        // 1/2/4/8 bytes, in an 8-byte slot of the record
    StaticString,   // char[N]: 256 bytes in the record (STR_VAR_LEN_MAX)
    DynamicString,  // char[]: a u32 __data_loc in an 8-byte slot, text after the fixed part
    Stack,          // long[]: a __data_loc array of kernel addresses
  };
  std::string type;  // normalized as the kernel prints it: "u64", "unsigned int", "char[16]", "char[]", "long[]"
  std::string name;
  Kind kind = Kind::Integer;
  uint32_t size = 8;       // the type's size: 8 for u64, 4 for pid_t, N for char[N], 4 (the loc) for char[]/long[]
  bool is_signed = false;  // signed unless the type starts with 'u' or is gfp_t (char is signed)
  uint32_t array_len = 0;  // N for char[N], 0 otherwise
  uint32_t offset = 0;     // in the record: 8 (after the common header), +8 per slot, +256 per static string
  friend bool operator==(const SynthField&, const SynthField&) = default;
};

struct SynthDefinition {
  std::string name;
  std::vector<SynthField> fields;  // offsets filled in
  // Bytes of the record's fixed part (header + slots); dynamic data follows.
  uint32_t fixed_size() const;
  friend bool operator==(const SynthDefinition&, const SynthDefinition&) = default;
};

struct SynthCommand {
  bool remove = false;         // "!name ..."
  std::string command;         // the logged command: the line without surrounding white space
  SynthDefinition definition;  // remove: the name, and fields if given
};

// Parses one line written to `synthetic_events`. Errors carry the kernel's
// synthetic-event codes (ErrorCode::SynthBadName, ...), with the span of the
// offending token in `command`, as the kernel's errpos() would place it.
// A '#' starts a comment that runs to the end of the line. A line that is
// empty once the comment and white space are gone fails with
// ErrorCode::EmptyCommand: the kernel does nothing for it, and neither
// should the caller (no error_log entry). Lines of 4096 bytes or more fail
// with ErrorCode::CommandTooLong, as trigger commands do.
Result<SynthCommand, Diagnostic> parse_synth_command(std::string_view line);

// One line written to dynamic_events, as far as synthetic events go: the
// kernel's create_synth_event() for "s:[synthetic/]<name> <fields>" and
// dyn_event_release() for "-:[synthetic/]<name>" (or "!...:<name>").
struct DynCommand {
  enum class Kind {
    Empty,   // only white space: nothing to do
    Create,  // `line` is the definition as synthetic_events takes it
    Remove,  // `line` is "!<name>"; `other_group`: a group other than synthetic was named
    Other,   // another kind of dynamic event (kprobe, uprobe, eprobe), or no kind: EINVAL
  };
  Kind kind = Kind::Empty;
  std::string line;
  bool other_group = false;
};
// Errors as the kernel logs them for "synthetic_events": a create without
// fields (INVALID_CMD) or naming a group other than synthetic
// (INVALID_DYN_CMD), both at 0 in the command.
Result<DynCommand, Diagnostic> parse_dyn_command(std::string_view line);

// One line of the `synthetic_events` listing, without the newline:
//   "wakeup_latency\tu64 lat; pid_t pid; int prio"
std::string list_line(const SynthDefinition& def);

// The event format of a synthetic event, as tracefs shows it under
// events/synthetic/<name>/format (system "synthetic", the given id):
// the four common fields, then one field per definition field at its
// offset ("__data_loc char[] name" for dynamic strings), and a print fmt.
// `text` holds the file verbatim.
catalog::EventFormat format_of(const SynthDefinition& def, uint32_t id);

}  // namespace histd::synth
