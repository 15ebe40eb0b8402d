// SPDX-License-Identifier: GPL-2.0-only
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "hist_shared.h"
#include "histd/runtime.h"

namespace histd::runtime {

namespace {

Unexpected<Error> bpf_fail(int neg_err, std::string context) {
  const int e = neg_err < 0 ? -neg_err : (neg_err ? neg_err : EINVAL);
  return fail(ErrorKind::Bpf, e, context + ": " + std::strerror(e));
}

// libbpf prints through one process-wide callback; these are the only two
// behaviours histd wants, chosen once at start-up.
int quiet_print(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || level == LIBBPF_INFO) return 0;
  return vfprintf(stderr, format, args);
}
int verbose_print(enum libbpf_print_level, const char* format, va_list args) { return vfprintf(stderr, format, args); }

// The verifier's log of a refused program, cut to its last `max` bytes at a
// line start: the reason for a refusal is at the end, after the walk of the
// instructions that led there.
std::string log_tail(std::string_view log, size_t max) {
  std::string text(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  if (text.size() <= max) return text;
  size_t cut = text.find('\n', text.size() - max);
  if (cut == std::string::npos)
    cut = text.size() - max;
  else
    ++cut;
  return fmt::format("... ({} earlier bytes of the log left out)\n", cut) + text.substr(cut);
}

// Enough for the log of any program histd generates at level 1; a log that
// does not fit is cut by the kernel (which keeps its end) and reported as
// ENOSPC.
constexpr size_t kVerifierLogSize = size_t{1} << 20;
constexpr size_t kVerifierLogShown = 4096;

uint64_t recursion_misses(int prog_fd) {
  if (prog_fd < 0) return 0;
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  return bpf_obj_get_info_by_fd(prog_fd, &info, &len) == 0 ? info.recursion_misses : 0;
}

uint32_t max_entries(int map_fd) {
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  return bpf_obj_get_info_by_fd(map_fd, &info, &len) == 0 ? info.max_entries : 0;
}

// The program a link runs, as an fd of its own.
Fd linked_program(bpf_link* link) {
  bpf_link_info info{};
  uint32_t len = sizeof(info);
  if (!link || bpf_obj_get_info_by_fd(bpf_link__fd(link), &info, &len) != 0) return Fd();
  return Fd(bpf_prog_get_fd_by_id(info.prog_id));
}

}  // namespace

void init_libbpf(bool verbose) {
  libbpf_set_print(verbose ? verbose_print : quiet_print);
  struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &r);
}

Expected<Fd> create_map(int type, const char* name, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
                        uint32_t flags) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
  int fd = bpf_map_create(static_cast<enum bpf_map_type>(type), name, key_size, value_size, max_entries, &opts);
  if (fd < 0) return bpf_fail(fd, fmt::format("creating map {}", name));
  return Fd(fd);
}

namespace {

// The kernel's BPF_LOG_STATS: only the verifier's own messages (the reason
// for a refusal among them) and its statistics, not the walk of every
// instruction that level 1 prints.
constexpr uint32_t kLogStatsOnly = 4;

// The BTF a unit's loads are relocated with: struct histd_rec, its member
// f<n> at fields[n] (members may overlap: a field read at two sizes), in an
// unnamed file libbpf reads by path. An empty Fd with no fields.
Expected<Fd> record_btf(const std::vector<RecordFieldPlace>& fields) {
  if (fields.empty()) return Fd();
  std::unique_ptr<btf, decltype(&btf__free)> b(btf__new_empty(), btf__free);
  if (!b) return bpf_fail(-errno, "making the record's BTF");
  uint32_t size = 0;
  std::vector<int> types;
  for (const RecordFieldPlace& f : fields) {
    size = std::max(size, f.offset + f.size);
    const std::string name = fmt::format("__{}{}", f.is_signed ? 's' : 'u', f.size * 8);
    types.push_back(btf__add_int(b.get(), name.c_str(), f.size, f.is_signed ? BTF_INT_SIGNED : 0));
    if (types.back() < 0) return bpf_fail(types.back(), "making the record's BTF");
  }
  int err = btf__add_struct(b.get(), "histd_rec", size);
  for (size_t n = 0; n < fields.size() && err >= 0; ++n)
    err = btf__add_field(b.get(), fmt::format("f{}", n).c_str(), types[n], fields[n].offset * 8, 0);
  if (err < 0) return bpf_fail(err, "making the record's BTF");
  uint32_t bytes = 0;
  const void* raw = btf__raw_data(b.get(), &bytes);
  Fd file(memfd_create("histd-record-btf", MFD_CLOEXEC));
  if (!raw || !file || write(file.get(), raw, bytes) != static_cast<ssize_t>(bytes))
    return bpf_fail(-errno, "writing the record's BTF");
  return file;
}

// Opens `object` with the engine's maps and loads it; on failure the kernel's
// log is in `log`. `log_level` 0: libbpf asks for a level-1 log only when a
// load fails (and retries with it).
Expected<bpf_object*> open_and_load(const std::string& object, const std::map<std::string, int>& maps,
                                    const std::map<std::string, std::vector<uint8_t>>& rodata,
                                    const std::vector<RecordFieldPlace>& fields, char* log, uint32_t log_level) {
  auto btf_file = record_btf(fields);
  if (!btf_file) return unexpected(std::move(btf_file).error());
  const std::string btf_path = *btf_file ? fmt::format("/proc/self/fd/{}", btf_file->get()) : std::string();
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "histd_event",
              .btf_custom_path = btf_path.empty() ? nullptr : btf_path.c_str(), .kernel_log_buf = log,
              .kernel_log_size = kVerifierLogSize, .kernel_log_level = log_level);
  bpf_object* obj = bpf_object__open_mem(object.data(), object.size(), &opts);
  if (!obj) return bpf_fail(-errno, "opening generated object");
  auto failed = [&](Unexpected<Error> e) {
    bpf_object__close(obj);
    return e;
  };
  for (const auto& [name, fd] : maps) {
    bpf_map* m = bpf_object__find_map_by_name(obj, name.c_str());
    if (!m) return failed(fail(ErrorKind::Bpf, ENOENT, "generated object lacks map " + name));
    // -1: declared, but no program of the object uses it: not created.
    int err = fd < 0 ? bpf_map__set_autocreate(m, false) : bpf_map__reuse_fd(m, fd);
    if (err) return failed(bpf_fail(err, "reusing map " + name));
  }
  for (const auto& [section, bytes] : rodata) {
    bpf_map* m = bpf_object__find_map_by_name(obj, section.c_str());
    const int err = m ? bpf_map__set_initial_value(m, bytes.data(), bytes.size()) : -ENOENT;
    if (err) return failed(bpf_fail(err, "setting " + section + " of the generated object"));
  }
  // The test entry is loaded but never attached.
  bpf_program* test = bpf_object__find_program_by_name(obj, "test_entry");
  if (test) bpf_program__set_autoattach(test, false);
  int err = bpf_object__load(obj);
  if (err) {
    const int e = err < 0 ? -err : EINVAL;
    if (log[0] == '\0') return failed(bpf_fail(err, "loading the generated object"));
    return failed(fail(ErrorKind::Bpf, e, verifier_refusal(log, e, this_kernel_release())));
  }
  return obj;
}

}  // namespace

// The verifier's own words when it gives up on a program as too complex
// to check, rather than finding it wrong: the user's remedy is a simpler
// trigger, which the refusal then says first.
constexpr std::string_view kTooComplex[] = {"BPF program is too large", "jumps is too complex", "too many states"};

std::string verifier_refusal(std::string_view log, int err, std::string_view release) {
  const std::string tail = log_tail(log, kVerifierLogShown);
  if (std::string helper = helper_refusal(log, release); !helper.empty())
    return fmt::format("{} ({}); the verifier log:\n{}", helper, std::strerror(err), tail);
  const bool complex = std::any_of(std::begin(kTooComplex), std::end(kTooComplex),
                                   [&](std::string_view m) { return log.find(m) != std::string_view::npos; });
  if (complex)
    return fmt::format(
        "the kernel's verifier gave up on the generated program as too complex ({}): fewer segments between "
        "a glob's stars, or fewer string filters on the event, would fit; the verifier log:\n{}",
        std::strerror(err), tail);
  return fmt::format("the kernel refused the generated program ({}); the verifier log:\n{}", std::strerror(err), tail);
}

Expected<EventProgram> EventProgram::load(const std::string& object, const std::map<std::string, int>& maps,
                                          const std::map<std::string, std::vector<uint8_t>>& rodata,
                                          const std::vector<RecordFieldPlace>& fields) {
  // libbpf asks the kernel for a log only when a load fails, and then
  // writes it here instead of printing it. Not filled beforehand: the
  // kernel ends what it writes with a NUL, and a megabyte of zeros cost
  // every load its page faults (the first load of a histd ~4 ms).
  const std::unique_ptr<char[]> buffer(new char[kVerifierLogSize]);
  char* log = buffer.get();
  log[0] = '\0';
  auto obj = open_and_load(object, maps, rodata, fields, log, 0);
  if (!obj && obj.error().err == ENOSPC && log[0] != '\0') {
    // ENOSPC with a log says only that the log did not fit (the kernel
    // reports a cut log instead of the refusal, whatever it was: a program
    // too complex to verify, with string filters, once showed as "No space
    // left on device"). Once more with the verifier's messages alone.
    log[0] = '\0';
    obj = open_and_load(object, maps, rodata, fields, log, kLogStatsOnly);
  }
  if (!obj) return unexpected(std::move(obj).error());
  // The programs' own descriptors, kept past the object's close.
  const bpf_program* event = bpf_object__find_program_by_name(*obj, "event_prog");
  const bpf_program* test = bpf_object__find_program_by_name(*obj, "test_entry");
  EventProgram p;
  if (event) p.event_ = Fd(fcntl(bpf_program__fd(event), F_DUPFD_CLOEXEC, 0));
  if (test) p.test_ = Fd(fcntl(bpf_program__fd(test), F_DUPFD_CLOEXEC, 0));
  const int dup_errno = errno;
  bpf_object__close(*obj);
  if (!event) return fail(ErrorKind::Bpf, ENOENT, "generated object lacks event_prog");
  if (!p.event_ || (test && !p.test_)) return fail(ErrorKind::Bpf, dup_errno, "keeping the loaded programs");
  return p;
}

// Tail-called and test-run programs pass no recursion guard of their own
// today (their dispatcher's counts); read anyway, so that a kernel that
// guards them too is not missed.
uint64_t EventProgram::missed() const { return recursion_misses(event_fd()) + recursion_misses(test_fd()); }

uint64_t Attachment::missed() const { return recursion_misses(prog_.get()); }

namespace {

// A link and its slots pinned by an earlier histd, to adopt.
struct PinnedPair {
  bpf_link* link = nullptr;
  Fd slots;
};

// Both halves of the pair at `pin_base`, or none: half a pair is stale,
// dropped so that the event is attached afresh.
std::optional<PinnedPair> open_pinned(const std::string& pin_base) {
  const std::string link_path = pin_base + "_link", slots_path = pin_base + "_slots";
  // libbpf warns on stderr when there is nothing to open (every event at
  // a clean start, since shutdown unpins): look before asking it.
  bpf_link* link = access(link_path.c_str(), F_OK) == 0 ? bpf_link__open(link_path.c_str()) : nullptr;
  Fd slots(bpf_obj_get(slots_path.c_str()));
  if (link && slots) return PinnedPair{link, std::move(slots)};
  if (link) bpf_link__destroy(link);
  unlink(link_path.c_str());
  unlink(slots_path.c_str());
  return std::nullopt;
}

const char* dispatcher_name(const std::optional<catalog::SyscallEvent>& syscall, bool probe, bool btf) {
  if (syscall) return syscall->exit ? "dispatch_sys_exit" : "dispatch_sys_enter";
  return btf ? "dispatch_btf" : probe ? "dispatch_probe" : "dispatch";
}

// Loads the dispatcher `wanted` alone, on the program array `slots_fd`
// (and, for a system call, its number; BTF-typed, its tracepoint).
Status load_dispatcher(bpf_object* obj, int slots_fd, const char* wanted,
                       const std::optional<catalog::SyscallEvent>& syscall, const std::string& btf_target) {
  int err = bpf_map__reuse_fd(bpf_object__find_map_by_name(obj, "slots"), slots_fd);
  if (err) return bpf_fail(err, "reusing the dispatcher's program array");
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    const bool it = std::strcmp(bpf_program__name(prog), wanted) == 0;
    bpf_program__set_autoload(prog, it);
    if (it && !btf_target.empty()) {
      err = bpf_program__set_attach_target(prog, 0, btf_target.c_str());
      if (err) return bpf_fail(err, "naming the dispatcher's tracepoint " + btf_target);
    }
  }
  if (syscall) {
    bpf_map* rodata = bpf_object__find_map_by_name(obj, ".rodata");
    const long nr = syscall->nr;
    err = rodata ? bpf_map__set_initial_value(rodata, &nr, sizeof(nr)) : -ENOENT;
    if (err) return bpf_fail(err, "setting the dispatcher's system call number");
  }
  err = bpf_object__load(obj);
  if (err) return bpf_fail(err, "loading the dispatcher");
  return ok_status();
}

Expected<bpf_link*> attach_dispatcher(bpf_program* prog, const std::string& system, const std::string& event,
                                      const std::optional<catalog::SyscallEvent>& syscall, bool btf) {
  if (btf) {
    bpf_link* link = bpf_program__attach_trace(prog);
    if (!link) return bpf_fail(-errno, fmt::format("attaching to {}:{} BTF-typed", system, event));
    return link;
  }
  if (syscall) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link)
      return bpf_fail(-errno, fmt::format("attaching to the raw tracepoint {} for {}:{}",
                                          syscall->exit ? "sys_exit" : "sys_enter", system, event));
    return link;
  }
  // A probe event is a tracepoint to perf too: its kprobe-type program is
  // attached the same way, and runs wherever the event fires.
  bpf_link* link = bpf_program__attach_tracepoint(prog, system.c_str(), event.c_str());
  if (!link) return bpf_fail(-errno, fmt::format("attaching to tracepoint {}:{}", system, event));
  return link;
}

// Pins the link and its slots at `pin_base`: both, or neither. Without a
// pin the event is simply not counted while histd is down.
bool pin_pair(bpf_link* link, int slots_fd, const std::string& pin_base) {
  if (bpf_link__pin(link, (pin_base + "_link").c_str()) != 0) return false;
  if (bpf_obj_pin(slots_fd, (pin_base + "_slots").c_str()) == 0) return true;
  bpf_link__unpin(link);
  return false;
}

}  // namespace

Expected<Attachment> Attachment::attach(const BpfPaths& paths, const std::string& system, const std::string& event,
                                        const std::string& pin_base,
                                        const std::optional<catalog::SyscallEvent>& syscall, bool probe,
                                        const std::string& btf_target) {
  Attachment a;
  a.probe_ = probe;
  if (!pin_base.empty()) {
    if (std::optional<PinnedPair> pinned = open_pinned(pin_base)) {
      a.slot_count_ = max_entries(pinned->slots.get());
      a.link_ = pinned->link;
      a.slots_ = std::move(pinned->slots);
      a.prog_ = linked_program(a.link_);
      a.pin_base_ = pin_base;
      a.adopted_ = true;
      return a;
    }
  }
  auto slots = create_map(BPF_MAP_TYPE_PROG_ARRAY, "histd_slots", 4, 4, HISTD_CHAIN_SLOTS);
  if (!slots) return unexpected(std::move(slots).error());
  a.slot_count_ = HISTD_CHAIN_SLOTS;
  a.slots_ = std::move(*slots);
  const bool btf = !btf_target.empty();
  const std::filesystem::path& object = syscall || btf ? paths.syscall_dispatcher_object : paths.dispatcher_object;
  a.obj_ = bpf_object__open_file(object.c_str(), nullptr);
  if (!a.obj_) return bpf_fail(-errno, "opening " + object.string());
  const char* wanted = dispatcher_name(syscall, probe, btf);
  if (auto loaded = load_dispatcher(a.obj_, a.slots_.get(), wanted, syscall, btf_target); !loaded)
    return unexpected(std::move(loaded).error());
  bpf_program* prog = bpf_object__find_program_by_name(a.obj_, wanted);
  auto link = attach_dispatcher(prog, system, event, syscall, btf);
  if (!link) return unexpected(std::move(link).error());
  a.link_ = *link;
  a.prog_ = linked_program(a.link_);
  // A perf event attachment without a BPF link (older kernels) has no link
  // info: the loaded program is the same one.
  if (!a.prog_) a.prog_ = Fd(fcntl(bpf_program__fd(prog), F_DUPFD_CLOEXEC, 0));
  if (!pin_base.empty() && pin_pair(a.link_, a.slots_.get(), pin_base)) a.pin_base_ = pin_base;
  return a;
}

Attachment::Attachment(Attachment&& o) noexcept
    : slots_(std::move(o.slots_)),
      prog_(std::move(o.prog_)),
      pin_base_(std::move(o.pin_base_)),
      adopted_(o.adopted_),
      probe_(o.probe_),
      slot_count_(o.slot_count_),
      obj_(o.obj_),
      link_(o.link_) {
  o.obj_ = nullptr;
  o.link_ = nullptr;
  o.pin_base_.clear();
}

Attachment& Attachment::operator=(Attachment&& o) noexcept {
  std::swap(slots_, o.slots_);
  std::swap(prog_, o.prog_);
  std::swap(pin_base_, o.pin_base_);
  std::swap(adopted_, o.adopted_);
  std::swap(probe_, o.probe_);
  std::swap(slot_count_, o.slot_count_);
  std::swap(obj_, o.obj_);
  std::swap(link_, o.link_);
  return *this;
}

// Detaching a tracepoint program waits for RCU grace periods under a
// kernel-wide mutex (perf_trace_destroy: tracepoint_synchronize_unregister),
// 50-100 ms per event: closing 300 links one after another kept SIGTERM
// waiting 21 s, and threads cannot overlap what the mutex serializes. So the
// dispatcher first runs nothing (its slot emptied: it counts nothing from
// here on), then the fd is closed while the pin still holds the link (no
// detach yet), and the pin goes last: dropping the last reference from
// bpffs hands the detach to a kernel worker, and histd does not wait for it.
// Without a pin, closing the fd detaches at once.
Attachment::~Attachment() {
  if (slots_) {
    const uint32_t key = 0;
    bpf_map_delete_elem(slots_.get(), &key);
  }
  // A probe event's pins go first, so that closing the fd detaches at once:
  // the kernel refuses to delete a probe event while it is attached, and
  // its user may delete it as soon as the last trigger is gone.
  if (probe_ && !pin_base_.empty()) unpin();
  if (link_) bpf_link__destroy(link_);
  bpf_object__close(obj_);
  link_ = nullptr;
  obj_ = nullptr;
  if (!pin_base_.empty()) unpin();
}

void Attachment::unpin() {
  unlink((pin_base_ + "_link").c_str());
  unlink((pin_base_ + "_slots").c_str());
}

Status Attachment::install(int prog_fd, uint32_t slot) {
  int err = bpf_map_update_elem(slots_.get(), &slot, &prog_fd, BPF_ANY);
  if (err) return bpf_fail(-errno, "installing the event program");
  return ok_status();
}

// An empty slot already is what is wanted (ENOENT).
void Attachment::clear(uint32_t slot) { bpf_map_delete_elem(slots_.get(), &slot); }

Expected<uint32_t> test_run(int test_prog_fd, std::span<const uint8_t> record, uint64_t ts, const char* comm) {
  // comm: 16 bytes, NUL-terminated within them.
  uint64_t args[4] = {reinterpret_cast<uintptr_t>(record.data()), record.size(), ts, reinterpret_cast<uintptr_t>(comm)};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof(args));
  int err = bpf_prog_test_run_opts(test_prog_fd, &opts);
  if (err) return bpf_fail(-errno, "running the test entry");
  return opts.retval;
}

}  // namespace histd::runtime
