// SPDX-License-Identifier: GPL-2.0-only
// Stage 4, codegen: the plans of one event -> one BPF C unit. Pure.
//
// The unit has two entry points running the same inlined handler: the
// tracepoint program the dispatcher tail-calls, and a raw_tp test entry that
// copies an injected record from user memory (ARCHITECTURE decision 8).
// Generated code never contains user text: identifiers are synthesized
// (tbl0, st0, trigger_0), numbers are re-printed from parsed integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "histd/plan.h"

namespace histd::codegen {

// One argument of a probe event's record, computed at the probe (kprobe
// programs see the registers, not a record): a base value, memory reads,
// stored at its field as the kernel's kprobe event would.
struct ProbeValue {
  enum class Base {
    Register,   // a u64 of x86_64 struct pt_regs at `reg_offset`
    Immediate,  // `immediate` (symbols resolved to addresses before codegen)
    Comm,       // the current task's comm, as a string
    // An eprobe's $FIELD: the attached event's record (the program's ctx)
    // at `reg_offset`, `record_size` bytes (signed: `record_signed`); a
    // string field's value is its text's address (`record_string`).
    Field,
  };
  enum class RecordString { None, Static, Dynamic };
  Base base = Base::Register;
  uint32_t reg_offset = 0;
  uint32_t record_size = 0;
  bool record_signed = false;
  RecordString record_string = RecordString::None;
  uint64_t immediate = 0;
  // +OFFS(...): innermost first; all but the last read 8 bytes; the last
  // reads the field (or its string) at the value plus its offset.
  struct Deref {
    int64_t offset = 0;
    bool user = false;  // user memory
  };
  std::vector<Deref> derefs;
  uint32_t field_offset = 0;  // in the record
  uint32_t field_size = 0;    // 1, 2, 4 or 8 (a string: its 4-byte __data_loc word)
  bool string = false;        // __data_loc char[]: the data follows the fixed part
  bool user_string = false;   // ustring: the last read is of user memory
};

// A kprobe event's entry: the kprobe program rebuilds the record the
// kernel's kprobe event would have written.
struct ProbeEntry {
  bool is_return = false;  // kretprobe: __probe_func, __probe_ret_ip; else __probe_ip
  // A uprobe: the registers are the task's user registers. A uretprobe's
  // __probe_func is 0: its program learns only where the call returns to.
  bool uprobe = false;
  // An eprobe: a tracepoint program on the attached event, whose record it
  // reads; the record has no probe address.
  bool eprobe = false;
  // An eprobe's `if FILTER`, on the attached event's record: the eprobe
  // sees only the records it matches (none: every record).
  const plan::TypedFilter* filter = nullptr;
  uint32_t fixed_size = 0;  // where string data begins
  std::vector<ProbeValue> values;
};

// An eprobe on a synthetic event, recorded (its `enable` is 1): the
// program that generates the synthetic event computes the eprobe's record
// from it (`entry`, its fields read from the synthetic record) and sends
// it to the ring while `slot` is not paused.
struct EprobeOutput {
  ProbeEntry entry;
  uint32_t id = 0;
  uint32_t slot = 0;
};

// Where a synthetic event an action generates goes: its event id (the
// record's common_type), the control slot that says whether anything wants
// it (a paused slot: nobody), the one that says whether it is traced, its
// record's size with room for strings, and the unit's inlined event that
// runs its triggers (-1: it has none).
struct SynthTarget {
  uint32_t id = 0;
  uint32_t control_slot = 0;
  uint32_t trace_slot = 0;
  uint32_t fixed_size = 0;  // header and slots; dynamic strings follow, 256 bytes each
  uint32_t record_size = 0;
  int inlined = -1;
  std::vector<EprobeOutput> eprobes;  // recorded eprobes on it
};

struct TriggerInput {
  const plan::HistPlan* plan = nullptr;
  uint32_t control_slot = 0;        // index into the engine's control array
  std::vector<SynthTarget> synths;  // one per plan->actions entry (used by Trace actions)
  // How many synthetic events deep it runs: 0 for the event's own triggers,
  // 1 for the triggers of a synthetic event they generate, ...
  uint32_t depth = 0;
};

// Names of the objects in the generated unit, for the loader.
inline constexpr const char* kEventProgram = "event_prog";
inline constexpr const char* kTestProgram = "test_entry";
inline constexpr const char* kControlMap = "histd_ctl";
std::string table_map_name(size_t trigger_index);  // "tbl<i>"
std::string stats_map_name(size_t trigger_index);  // "st<i>"
std::string hot_map_name(size_t trigger_index);    // "hot<i>": plan::HistPlan::hot_slots
// The trigger's variable record map ("var<i>"), and the owner's variable
// map a $reference reads ("xv<i>_<ref>").
std::string var_map_name(size_t trigger_index);
std::string ref_map_name(size_t trigger_index, size_t ref_index);
// The ring buffer generated synthetic events travel through to histd.
inline constexpr const char* kRingMap = "histd_ring";
// A chained unit's (EventEntry::chained): the dispatcher's program array,
// and the read-only section holding the slot its entry tail-calls next.
inline constexpr const char* kChainMap = "histd_chain";
inline constexpr const char* kChainNextSlot = ".rodata.chain";
// The include lines every unit opens with, before anything of its own:
// histd-cc precompiles them once (daemon/histd-cc/prelude.h).
inline constexpr const char* kUnitPrelude = "#include <linux/bpf.h>\n#include \"hist_helpers.bpf.h\"\n";
// What the ring had no room for, per CPU (HISTD_LOST_*).
inline constexpr const char* kLostMap = "histd_lost";
// set_event_pid's pids (HISTD_MAX_EVENT_PIDS), shared like the control array.
inline constexpr const char* kPidsMap = "histd_pids";

// A control trigger (parse::ControlCommand): when it fires (filter, count)
// it pauses or continues `target_slots` (enable_hist/disable_hist: the
// target's hist triggers; enable_event/disable_event: the target's record
// slot), turns tracing on or off, asks histd for a snapshot, or sends the
// kernel stack.
struct ControlInput {
  parse::ControlCommand::Kind kind = parse::ControlCommand::Kind::EnableHist;
  const plan::TypedFilter* filter = nullptr;  // none: always
  uint32_t control_slot = 0;                  // holds its remaining count
  std::vector<uint32_t> target_slots;
};

// A synthetic event the unit's triggers generate: its own triggers run in
// the generating program, on the record just built (ARCHITECTURE decision 6).
// Its triggers' depth is one more than the deepest trigger generating it.
struct InlinedEvent {
  std::vector<TriggerInput> triggers;
  std::vector<ControlInput> controls;
};

// set_event_pid: which tasks decide whether the unit's event is seen while
// a pid list is in force (the kernel's ignore_pid, set at each sched_switch
// and around each wakeup): the task it runs in, and tasks its record names
// (sched_switch: prev or next; a wakeup: the task woken), each a 4-byte pid
// field at its offset. Every entry but the test entry asks; with none
// listed the event is ignored, triggers and record alike.
struct PidCheck {
  bool current = true;
  std::vector<uint32_t> pid_fields;  // offsets in the record (the entry's ctx)
  friend bool operator==(const PidCheck&, const PidCheck&) = default;
};

// A kernel tracepoint entered BTF-typed (tp_btf/<target>): its program is
// handed the tracepoint's arguments, typed task pointers among them, and
// builds the record the classic tracepoint would have written from them
// (bpf/btf_entry.bpf.h). Its texts are histd's own, from the table of such
// events (pipeline::btf_entry), never the user's.
struct BtfEntry {
  std::string target;  // the tracepoint's name: btf_trace_<target> in the kernel's BTF
  struct Store {
    uint32_t offset = 0;  // the field's, in the record
    uint32_t size = 0;    // 1, 2, 4 or 8; a comm: 16
    bool comm = false;    // `value` is a task pointer whose comm the field holds
    std::string value;    // BPF C of the arguments (`ctx`)
  };
  std::vector<Store> stores;
};

// How the dispatcher enters the unit's event program: from the classic
// tracepoint, whose record it is handed, from the raw sys_enter / sys_exit
// tracepoint, where it rebuilds the classic record of a syscall event from
// the registers (catalog::SyscallEvent; the dispatcher checked the number),
// or from the tracepoint BTF-typed, where it builds the record (BtfEntry).
struct EventEntry {
  enum class Kind { Tracepoint, SyscallEnter, SyscallExit, Probe, Btf };
  Kind kind = Kind::Tracepoint;
  uint32_t syscall_args = 0;  // SyscallEnter: argument registers in the record
  ProbeEntry probe;           // Probe
  BtfEntry btf;               // Btf
  // Part of the event's chain of programs: the entry ends by tail-calling
  // the next slot of kChainMap (the dispatcher's program array), set before
  // load (kChainNextSlot). Not Probe.
  bool chained = false;
  // The unit also has `test_entry` (HISTD_TEST_ENTRY: a raw_tp program run
  // with BPF_PROG_TEST_RUN on a record histd hands it): for events whose
  // records only histd delivers (pipeline::injected_only), and tests that
  // inject into an attached event. Otherwise it would be compiled and
  // verified for nothing: about a sixth of a new trigger's compile.
  bool test_entry = false;
  PidCheck pids;
};

// An event whose records go to the trace buffer (its `enable` file is 1):
// before its triggers run, the program copies each record to the ring
// (HISTD_NOTICE_RECORD), as long as the fixed part and the data of its
// __data_loc / __rel_loc fields, which follow it.
struct RecordInput {
  uint32_t id = 0;          // the event's common_type
  uint32_t slot = 0;        // control slot: paused while not enabled (enable_event/disable_event flip it)
  uint32_t fixed_size = 0;  // up to the end of its last field
  struct Dynamic {
    uint32_t offset = 0;    // of the u32 location word
    bool relative = false;  // __rel_loc: from the end of the word, not the record
  };
  std::vector<Dynamic> dynamic;
  // The event's `filter` file: only the records it matches are recorded
  // (none: every record). The triggers see every record, as the kernel's.
  std::optional<plan::TypedFilter> filter;
};

// The per-CPU buffers a recording unit copies its records through, and a
// unit sending kernel stacks its stacks.
inline constexpr const char* kRecordBufferMap = "histd_recbuf";
inline constexpr const char* kStackBufferMap = "histd_stkbuf";

// The read-only section holding a unit's filter constants (histd_k[]).
inline constexpr const char* kConstantsSection = ".rodata.consts";

// A generated unit: its C text, and the numbers its filters compare with
// and each hist trigger's control slot, in the order the text reads them
// from kConstantsSection (histd_k[i]). The text never spells them, so
// triggers that differ only in those numbers (`if common_pid == 1234`,
// then 5678) are the same text: one compiled object (the cache's) serves
// them all, each program loaded with its own values. The verifier sees
// them as the constants they are (the section is frozen read-only).
//
// Likewise the offsets of the numeric record fields it reads: the text
// reads member f<n> of its struct histd_rec (preserve_access_index), and
// `fields` says where each is. The loader hands libbpf a BTF with these
// offsets, whose CO-RE relocation writes them into each load: triggers that
// differ only in which fields of a size they read (`keys=fd`, then
// `keys=count`) are one text as well. Not for a unit entered BTF-typed
// (EventEntry::Kind::Btf), whose relocations are the kernel's types'.
//
// And a table's size=: its hash, and its variables' of a named table, are
// declared with one entry, since the engine's maps (made with the size)
// replace them at load. And the bytes a string filter compares at the
// start or the end, in a segment with no `?` or class: the text matches
// such a segment a word at a time against histd_k[] (its bytes, a mask, its
// length), so `comm == "bash"` and `comm == "zsh"` are one text too.
struct RecordField {
  uint32_t offset = 0;
  uint32_t size = 0;  // 1, 2, 4 or 8 bytes
  bool is_signed = false;
  bool operator==(const RecordField&) const = default;
};

struct GeneratedUnit {
  std::string source;
  std::vector<uint64_t> constants;
  std::vector<RecordField> fields;
};

// The values of histd_k[] as a comment to show after the unit
// (`/* histd: histd_k[] = 0x4d2 0x0 */`, its own line), "" when there are
// none: what the control socket's `source` and `histctl explain` print,
// since the text alone does not say them.
std::string constants_comment(const std::vector<uint64_t>& constants);
// The fields' offsets likewise (`/* histd: struct histd_rec: f0 at 16 */`).
std::string record_fields_comment(const std::vector<RecordField>& fields);
// Both: what a unit's text does not say.
std::string values_comment(const GeneratedUnit& unit);

// All triggers of one event, in order, then those of the synthetic events
// inlined into it: hist trigger n (counting the inlined ones after the
// event's own) has table map tbl<n> and stats map st<n>. `record`: the
// event's records are traced too.
GeneratedUnit generate_event_unit(const std::vector<TriggerInput>& triggers,
                                  const std::vector<ControlInput>& enables = {},
                                  const std::vector<InlinedEvent>& inlined = {}, EventEntry entry = {},
                                  const RecordInput* record = nullptr);

}  // namespace histd::codegen
