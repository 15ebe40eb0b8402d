// SPDX-License-Identifier: GPL-2.0-only
// Stage 2, catalog: a tracefs root -> the format of every event.
//
// Pure given a directory: tests point it at fixture trees under
// tests/unit/fixtures. Formats are parsed on first use and cached.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "histd/result.h"

namespace histd::catalog {

enum class FieldKind {
  Integer,        // 1/2/4/8-byte integer (pointers included, as numbers)
  CharArray,      // char name[N]: a fixed-size string
  DynamicString,  // __data_loc char[] name: u32 (len << 16 | offset)
  RelString,      // __rel_loc char[] name: u32 (len << 16 | offset from after the field)
  Array,          // any other array (e.g. unsigned long args[6]); not a key or value
  Other,          // anything else of odd size (structs)
};

struct Field {
  std::string name;     // "bytes_req", "comm", "name" (without [N] or __data_loc)
  std::string type;     // the C type as written: "size_t", "char[16]", "__data_loc char[]"
  uint32_t offset = 0;  // in the record
  uint32_t size = 0;    // in the record
  bool is_signed = false;
  bool is_common = false;  // common_* fields of the record header
  FieldKind kind = FieldKind::Integer;
  // N for arrays, 0 otherwise. Also 0 for a flexible `[]` array (size 0,
  // e.g. ftrace/print's `char buf[]`): its data runs to the end of the record.
  uint32_t array_len = 0;
  // The kernel prints it as a kernel address (mark_kernel_addresses): a
  // pointer outside a syscall's arguments, or a field its print fmt prints
  // with %p (call_site's %pS). Writers who may not see kernel addresses may
  // not compare, compute with or copy it.
  bool kernel_address = false;
  friend bool operator==(const Field&, const Field&) = default;
};

// A syscalls:sys_enter_<name> or sys_exit_<name> event whose record can be
// rebuilt exactly from the registers at the raw sys_enter / sys_exit
// tracepoint: the classic layout (__syscall_nr at 8, then 8-byte arguments
// from 16, or `long ret` at 16) and a name libseccomp knows as a native
// system call under the same number both ways. Only on x86_64, whose
// pt_regs layout the generated entry reads (docs/design/bpf.md, "Syscall events").
struct SyscallEvent {
  bool exit = false;
  int nr = 0;
  uint32_t args = 0;  // sys_enter: how many argument registers the record holds
  friend bool operator==(const SyscallEvent&, const SyscallEvent&) = default;
};

// What kind of event a format describes, which decides how histd runs its
// programs. Decided once, by event_source(), when the catalog reads or adds
// the format; everything after reads it instead of comparing names.
enum class EventSource {
  Tracepoint,  // a kernel tracepoint: its dispatcher attaches there
  // A syscalls:sys_enter_* / sys_exit_* event whose record can be rebuilt at
  // the raw sys_enter / sys_exit tracepoints (EventFormat::syscall): attached
  // there with --raw-syscalls, else as a tracepoint.
  RawSyscall,
  Synthetic,  // defined in histd (synthetic_events): its records come from histd's programs
  Marker,     // ftrace's own events (ftrace:print is trace_marker): histd injects their records
  // A kprobe or uprobe event (its record starts with __probe_ip, or
  // __probe_func for a return probe): a tracepoint created at run time
  // (EventFormat::probe), which runs only kprobe-type programs.
  Probe,
};

// One argument of a probe event as the kernel lists it in kprobe_events
// (NAME=FETCHARG[:TYPE], Documentation/trace/kprobetrace.rst), parsed into
// what computes its value: a base, then memory reads.
struct ProbeFetch {
  enum class Base {
    Register,      // %REG (reg)
    Argument,      // $argN (index, from 1)
    ReturnValue,   // $retval
    StackPointer,  // $stack; $stackN is +8N($stack)
    Comm,          // $comm: the current task's comm, a string
    Immediate,     // \IMM (immediate); @ADDR is +0(\ADDR)
    Symbol,        // the address of `symbol` plus `immediate`; @SYM+OFFS is +0 of it
    EventField,    // $FIELD of an eprobe: the attached event's field `symbol`
  };
  Base base = Base::Register;
  std::string reg;
  uint32_t index = 0;
  int64_t immediate = 0;
  std::string symbol;
  // +|-[u]OFFS(...): read memory at the value plus offset (user memory with
  // 'u'), innermost first.
  struct Deref {
    int64_t offset = 0;
    bool user = false;
    friend bool operator==(const Deref&, const Deref&) = default;
  };
  std::vector<Deref> derefs;
  std::string type;  // as written after the last ':' ("u32", "string"); empty: the default
  friend bool operator==(const ProbeFetch&, const ProbeFetch&) = default;
};

struct ProbeArg {
  std::string name;
  ProbeFetch fetch;
  friend bool operator==(const ProbeArg&, const ProbeArg&) = default;
};

// A probe event's definition, from its kprobe_events or uprobe_events line.
struct ProbeDefinition {
  bool is_return = false;  // r: or SYM%return
  bool uprobe = false;     // in a program's file: `path` at file offset `offset`
  std::string group;
  std::string event;
  std::string symbol;  // kprobe; empty: the probe is at `address`
  std::string path;    // uprobe
  uint64_t offset = 0;
  uint64_t address = 0;
  // An eprobe (histd's own, dynamic_events' e:): its record is computed from
  // each record of the attached event, a kernel tracepoint.
  bool eprobe = false;
  std::string attached_system;
  std::string attached_event;
  std::vector<ProbeArg> args;
  friend bool operator==(const ProbeDefinition&, const ProbeDefinition&) = default;
};

// Parses one line as kprobe_events or uprobe_events lists it
// ("p:GRP/EVENT SYM+OFFS ARGS", "r4:GRP/EVENT SYM ARGS",
// "p:GRP/EVENT /PATH:0xOFFS ARGS"). Invalid, naming the part, for what histd
// cannot compute: BTF names as arguments ("file->f_pos"), types other than
// the integers, char, string, ustring and symbol.
Expected<ProbeDefinition> parse_probe_definition(std::string_view line);
// One NAME=FETCHARG[:TYPE] of such a line (Invalid, saying why, as above).
Expected<ProbeArg> parse_probe_arg(std::string_view arg);

// The system of histd's synthetic events, and of the trace marker's event.
inline constexpr const char* kSynthSystem = "synthetic";
inline constexpr const char* kMarkerSystem = "ftrace";
inline constexpr const char* kMarkerEvent = "print";

struct EventFormat {
  std::string system;
  std::string name;
  uint32_t id = 0;
  std::vector<Field> fields;                     // common fields first, then the event's, as in the file
  std::string print_fmt;                         // after "print fmt: ", quotes and all; may hold newlines
  std::string text;                              // the format file verbatim (served by histd's tree)
  EventSource source = EventSource::Tracepoint;  // event_source(*this), set by the catalog
  std::optional<SyscallEvent> syscall;           // syscall_event(*this), set by the catalog
  // Probe events: the definition the kernel lists for it, or why histd
  // cannot run it (set by the catalog from kprobe_events / uprobe_events).
  std::optional<ProbeDefinition> probe;
  std::string probe_error;

  const Field* find(std::string_view field_name) const;
  // Record size: the end of the last field.
  uint32_t record_size() const;
};

// The SyscallEvent `format` is, if any (see SyscallEvent).
std::optional<SyscallEvent> syscall_event(const EventFormat& format);
// The kind of event `format` describes, from its system, name and fields.
EventSource event_source(const EventFormat& format);
// The kind of an event known only by name (its format unread or gone):
// Synthetic, Marker or Tracepoint.
EventSource event_source(std::string_view system);

// What histd does with each kind of event, one row each
// (lib/catalog/event_source.cpp): code asks these, not which kind it is.
// A new kind is a row, its entry code and its attach path.
struct EventSourceTraits {
  EventSource source = EventSource::Tracepoint;
  // The kernel fires it at a tracepoint of its own and the program reads its
  // record there: programs of it are chained, deferred in a batch, and
  // enable_event may record it.
  bool kernel_tracepoint = false;
  // Its records reach its programs only as histd hands them over (a
  // synthetic event's generation, trace_marker's writes): nothing is
  // attached to the kernel for it.
  bool injected = false;
  // Its program computes the record from the registers where it fires, as
  // its definition says (a kprobe-type program).
  bool record_from_registers = false;
  // Its format may change while histd runs (deleted and made again behind
  // histd's back): read again, never kept.
  bool format_may_change = false;
  // tracefs gives it an enable file (ftrace's own events have none).
  bool has_enable_file = true;
  // An eprobe may attach to it.
  bool eprobe_target = false;
};
const EventSourceTraits& source_traits(EventSource source);

// A print fmt read as the kernel's printf reads it (pure): `text` as after
// "print fmt: ", from its opening quote.
struct PrintConversion {
  size_t begin = 0;     // the '%' in PrintFmt::format
  size_t end = 0;       // past the conversion (and a %p's extension letter)
  char conversion = 0;  // 'd', 's', 'p', ...
  char extension = 0;   // after %p: 'S', 's', 'x', 'I', ... (0: none)
  size_t arg = 0;       // the argument it prints, in PrintFmt::args
};
struct PrintFmt {
  std::string_view format;        // between the quotes, escapes as written
  std::vector<std::string> args;  // split at top-level commas, blanks kept
  std::vector<PrintConversion> conversions;
  size_t args_end = 0;  // in `text`: where the arguments end (the line's end)
};
std::optional<PrintFmt> parse_print_fmt(std::string_view text);
// Whether the conversion prints the address itself (%p, %pS, %px, ...),
// not what it points to (%pI4, %pM).
bool prints_address(const PrintConversion& c);

// The one synthetic field type that carries kernel addresses (an action
// passes one into no other), as the kernel's events keep code addresses:
// its readers who may not see them see them hidden.
inline bool synthetic_address_type(std::string_view type) { return type == "unsigned long"; }

// Sets Field::kernel_address of each field (parse_format does).
void mark_kernel_addresses(EventFormat& format);

// Parses the text of one `format` file. `system` is not in the file; it
// comes from the directory name. Sets `source`, `syscall` and each field's
// `kernel_address`.
Expected<EventFormat> parse_format(std::string_view text, std::string_view system);

struct EventId {
  std::string system;
  std::string name;
  friend auto operator<=>(const EventId&, const EventId&) = default;
};

class Catalog {
 public:
  // `root` is a tracefs root (the directory holding events/).
  static Expected<Catalog> open(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  // Every system:event with a format file, sorted.
  const std::vector<EventId>& events() const { return events_; }
  // True for an event listed at open(), a dynamic one, or one created in
  // tracefs since (a kprobe or uprobe event): an unknown name is looked up
  // in the tree, and found ones are remembered until they vanish from it.
  bool contains(std::string_view system, std::string_view event) const;
  // Events found after open() by contains(), still present when last asked.
  std::vector<EventId> discovered_events() const;
  // The system directories and one system's events in the tree as it is now
  // (one readdir each): what the events/ listing adds to events() for
  // events created after open(). Empty when the tree is gone.
  std::vector<std::string> live_systems() const;
  std::vector<std::string> live_events(std::string_view system) const;
  // Events that exist only in histd (synthetic events): added and removed
  // while histd runs, listed by dynamic_events(). Thread-safe.
  void add_dynamic(EventFormat format);
  void remove_dynamic(std::string_view system, std::string_view event);
  std::vector<EventId> dynamic_events() const;
  // The parsed format; NotFound if no such event, Invalid if its file does
  // not parse. Thread-safe: the cache fills on first use, under a lock.
  Expected<std::shared_ptr<const EventFormat>> event(std::string_view system, std::string_view event) const;
  // The event's EventSource: its format's, or by its system's name when the
  // format cannot be read.
  EventSource source(std::string_view system, std::string_view event) const;
  // Drops the cached formats of probe events: kprobe_events was written, and
  // an event of the same name may now be another probe.
  void forget_probes();

 private:
  // Sets a probe event's definition (or why histd cannot compute it) from
  // the kernel's kprobe_events / uprobe_events listing.
  void attach_probe_definition(EventFormat& format) const;
  std::filesystem::path root_;
  std::vector<EventId> events_;
  // Cache: parsed on first use. mutable because parsing is a pure function
  // of the directory, which is taken to be fixed while histd runs.
  mutable std::map<EventId, std::shared_ptr<const EventFormat>> cache_;
  std::map<EventId, std::shared_ptr<const EventFormat>> dynamic_;  // under cache_mu_
  // Found in the tree after open() (under cache_mu_); checked again on each
  // contains(), so that a removed probe event stops being served.
  mutable std::set<EventId> discovered_;
  bool discover(const EventId& id) const;
  // FUSE threads read formats concurrently; held by pointer so the catalog stays movable.
  std::shared_ptr<std::mutex> cache_mu_ = std::make_shared<std::mutex>();
};

// The tracefs root on this machine: /sys/kernel/tracing, mounting tracefs
// there if nothing is mounted; falls back to /sys/kernel/debug/tracing.
Expected<std::filesystem::path> find_tracefs();

}  // namespace histd::catalog
