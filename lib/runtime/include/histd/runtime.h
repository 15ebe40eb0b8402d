// SPDX-License-Identifier: GPL-2.0-only
// Stage 5, runtime: BPF C source -> object (clang, content-addressed cache)
// -> loaded programs using the engine's maps -> installed behind an event's
// dispatcher. The only stage besides the table reader that talks to the
// kernel; libbpf's negative-errno convention is converted to Error here.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "histd/catalog.h"
#include "histd/fd.h"
#include "histd/result.h"

struct bpf_object;
struct bpf_link;

namespace histd::runtime {

// Where the BPF helper header and the prebuilt dispatcher object are.
struct BpfPaths {
  std::filesystem::path include_dir;                // holds hist_helpers.bpf.h, hist_shared.h
  std::filesystem::path dispatcher_object;          // dispatcher.bpf.o
  std::filesystem::path syscall_dispatcher_object;  // syscall_dispatcher.bpf.o (raw sys_enter/sys_exit)
  std::filesystem::path system_include;             // multiarch dir with asm/ headers
  // The compiler for generated units: the clang found at build time, or
  // histd's --clang (a name is looked up in PATH).
  std::string clang = "clang";
  // histd-cc, the resident compiler; empty: every compile spawns clang.
  std::filesystem::path cc_server;
};

// A program named without a slash, as the PATH search of posix_spawnp
// finds it; a path as it is.
std::filesystem::path resolve_program(const std::string& name);

// HISTD_BPF_DIR if set, else the build tree (when run from it), else the
// install prefix. histd-cc: HISTD_CC if set (empty: none), else the one next
// to the running binary, else the installed one, else the build tree's.
Expected<BpfPaths> find_bpf_paths();

class CcClient;

// Compiles generated units. Objects are cached by content: the source, the
// helper headers, the compilers (clang and histd-cc with the libraries it
// runs, by path, size and modification time) and the kernel's release. A
// cached object is loaded only if it is histd's own and its SHA-256 is the
// one recorded when it was written (runtime::ObjectCache, in lib/runtime).
//
// A cache miss is compiled by histd-cc once start_server() has started it
// (the engine does, when it starts), else by spawning clang: same flags, same
// object, same diagnostics. A server that dies, does not answer within
// kServerTimeout or fails on its own (anything but the unit's diagnostics)
// is replaced for the next compile, and the compile it failed spawns clang;
// after kMaxServerFailures failures in a row, clang it is. With
// watch_server(), a server that dies between compiles is reaped and
// replaced at once.
// How the resident compiler behaves once it has compiled nothing for a while.
struct IdleOptions {
  // Stops histd-cc after this long (Compiler::set_idle_stop); zero: it stays.
  std::chrono::milliseconds stop{0};
  // Gives back histd-cc's memory after this long, and it stays
  // (Compiler::set_idle_shed); zero: it keeps it.
  std::chrono::milliseconds shed{0};
};

class Compiler {
 public:
  static constexpr int kMaxServerFailures = 3;
  // Generous: a generated unit takes histd-cc tens of ms, the largest about
  // a second on a loaded machine; a write to a trigger file waits this long
  // for a hung server before clang is asked.
  static constexpr std::chrono::milliseconds kServerTimeout{20000};
  // The resident compiler's state, for `histctl status` (and tests).
  struct Stats {
    uint64_t by_server = 0;  // compiles histd-cc answered
    uint64_t by_clang = 0;   // compiles that spawned clang (a fallback, or no histd-cc)
    uint64_t server_starts = 0;
    uint64_t idle_stops = 0;  // servers stopped after set_idle_stop()'s time without a compile
    bool resident = false;    // a histd-cc to run (paths().cc_server)
    pid_t server_pid = 0;     // the server running now (0: none)
    int failures_in_row = 0;  // of the server, since its last answer
    bool given_up = false;    // kMaxServerFailures in a row: clang compiles every unit
  };

  Compiler(BpfPaths paths, std::filesystem::path cache_dir);
  Compiler(Compiler&&) noexcept;
  Compiler& operator=(Compiler&&) noexcept;
  ~Compiler();

  // Starts histd-cc, if paths().cc_server names one, without waiting for it.
  void start_server();
  // The include lines every unit opens with (codegen::kUnitPrelude). Each
  // histd-cc started after this is sent, at once, a unit of nothing else:
  // it compiles it once started and then precompiles those lines, so the
  // first trigger's compile already reads them; nobody waits for that
  // unit's answer (the next compile reads and drops it). Set before
  // start_server().
  void set_prelude(const std::string& lines);
  // Starts a thread that reaps a server that exits between compiles (a
  // kill, a crash: no zombie is left) and starts the next one. Threads do
  // not survive fork(): call it after daemonizing (the engine's
  // start_consumer() does).
  void watch_server();
  // How long a compile waits for histd-cc's answer (tests shorten it).
  void set_server_timeout(std::chrono::milliseconds timeout);
  // Stops histd-cc once it has compiled nothing for `after`: its libraries
  // (most of histd's memory) go back to the machine while no trigger
  // changes. The
  // next compile, or warm(), starts it again. Zero: it stays. Needs
  // watch_server()'s thread.
  void set_idle_stop(std::chrono::milliseconds after);
  // histd-cc stays, but once it has compiled nothing for `after` it gives
  // back what the kernel can take at no cost: its allocator's free pages
  // and the resident pages of its libraries' code and read-only data (they
  // stay in the page cache). What is left is the libraries' relocated data.
  // The next compile faults the pages it needs back in, far less than the
  // libraries' load after a stop (docs/design/compiler.md, "Idle shed").
  // Zero: it keeps them. Set before start_server() (a running server is
  // replaced to be told).
  void set_idle_shed(std::chrono::milliseconds after);
  // Starts histd-cc if idleness stopped it: a trigger change is on its way
  // (a trigger file opened for writing), and the server loads its libraries
  // meanwhile rather than when the compile asks.
  void warm() const;
  Expected<std::string> compile(const std::string& source) const;
  // The cached object of `source`, without compiling it on a miss.
  std::optional<std::string> cached(const std::string& source) const;
  // Drops the cached object of `source`: the kernel refused it, and the
  // next compile (perhaps by a repaired compiler) must not find it again.
  void evict(const std::string& source) const;
  const BpfPaths& paths() const { return paths_; }
  // The server's pid (0: none running); for tests.
  pid_t server_pid() const;
  Stats stats() const;

 private:
  class Resident;
  Expected<std::string> compile_uncached(const std::string& source) const;
  Expected<std::string> run_clang(const std::string& source) const;
  std::string cache_name(const std::string& source, const std::string& helpers) const;
  BpfPaths paths_;
  std::filesystem::path cache_dir_;  // runtime::ObjectCache
  std::string compiler_identity_;
  std::unique_ptr<Resident> resident_;  // its own lock; compile() stays const
};

// What the programs of a compiled object use, read from its relocations
// without loading anything.
struct ObjectMaps {
  // The most maps any program uses (its own section's and those of the
  // subprograms in .text): the kernel refuses a program using more than 64.
  size_t most_per_program = 0;
  // The names of the maps in .maps that some program uses.
  std::set<std::string> referenced;
};
Expected<ObjectMaps> object_maps(std::string_view object);

// `flags`: bpf_map_create's map_flags (BPF_F_NO_PREALLOC, ...).
Expected<Fd> create_map(int type, const char* name, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
                        uint32_t flags = 0);

// One loaded event unit: its programs' descriptors, nothing more. Its
// libbpf object is closed once loaded: each object held a descriptor of
// every map it uses (a duplicate of each engine map, and its own scratch
// maps), several a trigger, which the loaded programs do not need (the kernel
// keeps the maps they use alive). Every program array the units use is the
// engine's, so closing them empties none. Destroying it releases the
// programs (the kernel keeps an installed program alive through the
// program array).
// Where member f<n> of a unit's struct histd_rec is in the records it
// reads (codegen::RecordField n): libbpf's CO-RE relocation writes these
// offsets into the unit's loads, from a BTF made for the load.
struct RecordFieldPlace {
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
};

// What histd says when the kernel refuses a generated program whose
// verifier log is `log` (errno `err`): the log's end, which holds the
// reason, after a first line saying what it means when the verifier gave
// up on the program as too complex rather than finding it wrong, or that
// the kernel (`release`, uname's) is older than a helper it calls.
std::string verifier_refusal(std::string_view log, int err, std::string_view release);

// --- The kernel histd needs (kernel_helpers.cpp) --------------------------
// A BPF helper histd's programs call: its id (BPF_FUNC_*), the Linux
// release it came in, and what calls it ("" for every start: histd's own
// programs, or any trigger's).
struct KernelHelper {
  int id;
  std::string_view name;
  std::string_view since;
  std::string_view needed_for;
};
std::span<const KernelHelper> kernel_helpers();
const KernelHelper* kernel_helper(int id);  // nullptr: not one histd calls
std::string this_kernel_release();          // uname -r

// The verifier's log of a two-instruction program calling helper `id`
// ("" if the kernel loaded it), and whether the running kernel has the
// helper: the log does not say "invalid func unknown#<id>".
std::string helper_call_log(int id);
bool kernel_knows_helper(int id);

// What a kernel lacking the helpers `knows` says no to means (pure):
// a start refused, naming each helper and the release histd needs, when an
// every-start one is missing; a note for each other one, naming what
// cannot be traced.
struct KernelShortfall {
  std::string refusal;             // empty: histd can start
  std::vector<std::string> notes;  // features refused on this kernel
};
KernelShortfall kernel_shortfall(const std::function<bool(const KernelHelper&)>& knows, std::string_view release);

// The oldest kernel that loads a unit of C `source` (pure): "Linux 5.8 or
// later", or a newer release with the helpers that need it ("Linux 5.17
// or later (bpf_loop(): 5.17)").
std::string kernel_needed(std::string_view source);

// The first line of a refusal whose verifier log says the kernel has no
// such helper, or refuses one as a lockdown does (bpf_probe_read_kernel()
// under confidentiality, raised after histd started); empty if the log
// says something else (pure).
std::string helper_refusal(std::string_view log, std::string_view release);

class EventProgram {
 public:
  // `maps` names every map of the unit the engine owns (fd -1: one the
  // unit declares but none of its programs uses, left uncreated); the
  // unit's own scratch maps are created by libbpf. When the verifier refuses a
  // program, the error carries the end of its log (where the reason is).
  // `rodata`: read-only sections of the unit (".rodata.<name>") each set to
  // these bytes (host order, its whole size) before load: the same cached
  // object serves several places (codegen::kChainNextSlot) and several
  // filters' numbers (codegen::kConstantsSection). `fields`: where the
  // unit's record fields are (none: it reads none by name).
  static Expected<EventProgram> load(const std::string& object, const std::map<std::string, int>& maps,
                                     const std::map<std::string, std::vector<uint8_t>>& rodata = {},
                                     const std::vector<RecordFieldPlace>& fields = {});
  int event_fd() const { return event_.get(); }
  // -1 when the unit has no test entry (an attached event's).
  int test_fd() const { return test_.get(); }
  // The kernel's recursion_misses of its programs (see Attachment::missed).
  uint64_t missed() const;

 private:
  EventProgram() = default;
  Fd event_;
  Fd test_;
};

// The dispatcher attached to one tracepoint, with its program array.
// With a pin base, the link and the array are pinned ("<base>_link",
// "<base>_slots"): if histd dies, the event keeps being counted by the last
// installed program, and the next histd adopts both instead of attaching
// again. Destroying an Attachment (a clean removal or shutdown) unpins and
// detaches; with a pin, the kernel finishes the detach in the background.
// With `syscall`, the dispatcher runs on the raw sys_enter or sys_exit
// tracepoint for that one system call, and the event program installed must
// be a unit generated for that entry (codegen::EventEntry). With
// `btf_target`, it runs on the tracepoint BTF-typed (tp_btf/<btf_target>),
// and so must the units installed.
class Attachment {
 public:
  static Expected<Attachment> attach(const BpfPaths& paths, const std::string& system, const std::string& event,
                                     const std::string& pin_base = {},
                                     const std::optional<catalog::SyscallEvent>& syscall = std::nullopt,
                                     bool probe = false, const std::string& btf_target = {});
  Attachment(Attachment&&) noexcept;
  Attachment& operator=(Attachment&&) noexcept;
  ~Attachment();
  // Atomically replaces the program in one slot of the dispatcher's array:
  // slot 0 is the one the dispatcher runs, the others the rest of the
  // event's chain (HISTD_CHAIN_SLOTS).
  Status install(int prog_fd, uint32_t slot = 0);
  void clear(uint32_t slot);
  // The array's slots: HISTD_CHAIN_SLOTS, or 1 for pins an older histd left.
  uint32_t slot_count() const { return slot_count_; }
  int slots_fd() const { return slots_.get(); }
  // Destroying an Attachment empties the dispatcher's slot before the
  // detach, which the kernel may finish later (see ~Attachment), so that the
  // program counts nothing meanwhile. A caller that has paused every trigger
  // of the program already (shutdown) may skip that step: emptying a slot is
  // a text poke of the dispatcher, tens of milliseconds per event.
  void keep_program_until_detached() { slots_ = Fd(); }
  // Closes what it holds and leaves the rest as it found it: an adopted
  // link and array stay pinned, running what they ran (a restore that
  // failed: the next try adopts them again).
  void let_go() {
    slots_ = Fd();
    pin_base_.clear();
  }
  const std::string& pin_base() const { return pin_base_; }
  // True when it took over a link a previous histd left pinned.
  bool adopted() const { return adopted_; }
  // Events the dispatcher did not run for: the kernel skips a tracepoint's
  // BPF programs when another BPF program is already running on that CPU
  // (its recursion guard; on a raw tracepoint, when the same program is),
  // counting them in struct bpf_prog_info.recursion_misses. Since the
  // dispatcher was attached, by whichever histd.
  uint64_t missed() const;

 private:
  Attachment() = default;
  Fd slots_;
  Fd prog_;  // the attached dispatcher program (through the link: adopted ones too)
  std::string pin_base_;
  bool adopted_ = false;
  bool probe_ = false;  // on a probe event, which may be deleted once detached
  uint32_t slot_count_ = 0;
  void unpin();
  bpf_object* obj_ = nullptr;
  bpf_link* link_ = nullptr;
};

// options/event-fork: event_pids.bpf.o's programs attached at the BTF-typed
// sched_process_fork and sched_process_free tracepoints, listing in
// `pids_map` (set_event_pid's pids, HISTD_MAX_EVENT_PIDS) every task a
// listed one makes and unlisting each task freed, as the kernel's fork and
// exit probes of its pid filter. Detached when it goes.
class ForkFollower {
 public:
  static Expected<ForkFollower> attach(const BpfPaths& paths, int pids_map);
  ForkFollower(ForkFollower&&) noexcept;
  ForkFollower& operator=(ForkFollower&&) noexcept;
  ~ForkFollower();

 private:
  ForkFollower() = default;
  bpf_object* obj_ = nullptr;
  bpf_link* fork_ = nullptr;
  bpf_link* free_ = nullptr;
};

// The machine's pid (the first PID namespace's, as BPF programs and the
// kernel's trace records show a task) of a task known by its pid in histd's
// own namespace: FUSE names a writer that way, and in a container the two
// differ. Asks the kernel through a task iterator (host_pid.bpf.o, loaded
// at the first question) only when histd is not in the first namespace.
class HostPids {
 public:
  HostPids();
  ~HostPids();
  HostPids(const HostPids&) = delete;
  HostPids& operator=(const HostPids&) = delete;
  // `pid` itself in the first namespace, or when the kernel cannot say
  // (the task ended, no iterator): what histd did before it asked.
  uint32_t host_pid(pid_t pid);

 private:
  const bool first_namespace_;
  std::mutex mu_;
  bool loaded_ = false;
  bpf_object* obj_ = nullptr;
};

// Runs the test entry on one record (BPF_PROG_TEST_RUN); returns its retval
// (0 when the record was handled).
// `ts`: the record's timestamp (0: now); `comm`: the comm of its task
// (16 bytes, NUL-terminated; null: the caller's).
Expected<uint32_t> test_run(int test_prog_fd, std::span<const uint8_t> record, uint64_t ts = 0,
                            const char* comm = nullptr);

// Mounts bpffs at /sys/fs/bpf when `pin_dir` is to be below it and it is
// not mounted yet (a machine booted without systemd), once however many
// ask at the same time; ok when the pin directory is on bpffs already.
Status ensure_bpffs(const std::filesystem::path& pin_dir);

// Raises RLIMIT_MEMLOCK for kernels that still charge BPF memory to it and
// routes libbpf's messages to stderr only when `verbose`.
void init_libbpf(bool verbose);

}  // namespace histd::runtime
