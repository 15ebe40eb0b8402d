// SPDX-License-Identifier: GPL-2.0-only
// FakeKernel (fake_kernel.h): the deployer's kernel for tests without root.
#include "fake_kernel.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "hist_shared.h"

namespace histd::testing {

using deploy::Kernel;

namespace {

Unexpected<Error> injected_error(FakeKernel::Op op, int err) {
  return fail(ErrorKind::Bpf, err,
              fmt::format("{} failed as the test asked: {}", FakeKernel::op_name(op), std::strerror(err)));
}

bool is_array(int type) {
  return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PROG_ARRAY;
}

bool is_per_cpu(int type) { return type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH; }

std::string parent_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

}  // namespace

// A loaded program: its fds are eventfds, closed with it.
class FakeKernel::FakeProgram final : public Kernel::Program {
 public:
  FakeProgram(FakeKernel& k, uint64_t id, bool test_entry) : k_(k), id_(id) {
    event_ = Fd(eventfd(0, EFD_CLOEXEC));
    if (test_entry) test_ = Fd(eventfd(0, EFD_CLOEXEC));
  }
  ~FakeProgram() override {
    k_.programs_.at(id_).handle = false;
    k_.note(fmt::format("close program {}", id_));
  }
  int event_fd() const override { return event_.get(); }
  int test_fd() const override { return test_.get(); }
  uint64_t missed() const override { return 0; }

 private:
  FakeKernel& k_;
  const uint64_t id_;
  Fd event_;
  Fd test_;
};

// A handle of a dispatcher, as runtime::Attachment behaves.
class FakeKernel::FakeAttachment final : public Kernel::Attachment {
 public:
  FakeAttachment(FakeKernel& k, uint64_t id, Fd slots, std::string pin_base, bool adopted)
      : k_(k), id_(id), slots_(std::move(slots)), pin_base_(std::move(pin_base)), adopted_(adopted) {
    ++k_.dispatchers_.at(id_).handles;
  }
  ~FakeAttachment() override {
    if (slots_) clear(0);
    if (!pin_base_.empty()) {
      k_.unpin(pin_base_ + "_link");
      k_.unpin(pin_base_ + "_slots");
    }
    --k_.dispatchers_.at(id_).handles;
    k_.note(fmt::format("close dispatcher {}", id_));
    k_.maybe_detach(id_);
  }
  Status install(int prog_fd, uint32_t slot) override {
    if (const int err = k_.injected(Op::Install)) return injected_error(Op::Install, err);
    const uint64_t program = k_.program_by_fd(prog_fd);
    Dispatcher& d = k_.dispatchers_.at(id_);
    if (!program || slot >= d.slots.size()) return fail(ErrorKind::Bpf, EINVAL, "installing the event program");
    d.slots[slot] = program;
    k_.note(fmt::format("install program {} in slot {} of dispatcher {}", program, slot, id_));
    return ok_status();
  }
  void clear(uint32_t slot) override {
    Dispatcher& d = k_.dispatchers_.at(id_);
    if (slot < d.slots.size()) d.slots[slot] = 0;
    k_.note(fmt::format("clear slot {} of dispatcher {}", slot, id_));
  }
  uint32_t slot_count() const override { return uint32_t(k_.dispatchers_.at(id_).slots.size()); }
  int slots_fd() const override { return slots_.get(); }
  void keep_program_until_detached() override { slots_ = Fd(); }
  void let_go() override {
    slots_ = Fd();
    pin_base_.clear();
  }
  const std::string& pin_base() const override { return pin_base_; }
  bool adopted() const override { return adopted_; }
  uint64_t missed() const override { return 0; }

 private:
  FakeKernel& k_;
  const uint64_t id_;
  Fd slots_;
  std::string pin_base_;
  const bool adopted_;
};

const char* FakeKernel::op_name(Op op) {
  static const std::map<Op, const char*> names{
      {Op::CreateMap, "CreateMap"}, {Op::Pin, "Pin"},         {Op::Update, "Update"}, {Op::Load, "Load"},
      {Op::Attach, "Attach"},       {Op::Install, "Install"}, {Op::Follow, "Follow"}};
  return names.at(op);
}

FakeKernel::FakeKernel() = default;
FakeKernel::~FakeKernel() = default;

void FakeKernel::fail_nth(Op op, int nth, int err) { rules_.emplace(op, std::make_pair(calls(op) + nth, err)); }

int FakeKernel::calls(Op op) const {
  auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

int FakeKernel::injected(Op op) {
  const int n = ++calls_[op];
  auto [from, to] = rules_.equal_range(op);
  for (auto it = from; it != to; ++it)
    if (it->second.first == n) {
      note(fmt::format("{} #{} fails: {}", op_name(op), n, std::strerror(it->second.second)));
      return it->second.second;
    }
  return 0;
}

// ---- maps and pins ----

Expected<Fd> FakeKernel::new_map(const MapSpec& spec, bool created) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return fail_errno("a fake map's pipe");
  Fd watch(ends[0]);
  Fd fd(ends[1]);
  struct stat st {};
  fstat(fd.get(), &st);
  const uint64_t id = next_id_++;
  by_inode_[st.st_ino] = id;
  Map& m = maps_[id];
  m.id = id;
  m.spec = spec;
  m.created = created;
  m.watch = std::move(watch);
  note(fmt::format("map {}: {} type {} key {} value {} entries {}", id, spec.name, spec.type, spec.key_size,
                   spec.value_size, spec.max_entries));
  return fd;
}

Expected<Fd> FakeKernel::create_map(const MapSpec& spec) {
  if (const int err = injected(Op::CreateMap)) return injected_error(Op::CreateMap, err);
  return new_map(spec, true);
}

// A map's fds are its pipe's write ends: the pipe's inode names it.
uint64_t FakeKernel::map_id_of(int fd) const {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  auto it = by_inode_.find(st.st_ino);
  return it == by_inode_.end() ? 0 : it->second;
}

FakeKernel::Map* FakeKernel::find_map(int fd) {
  const uint64_t id = map_id_of(fd);
  return id ? &maps_.at(id) : nullptr;
}

const FakeKernel::Map* FakeKernel::map_of(int fd) const {
  const uint64_t id = map_id_of(fd);
  return id ? &maps_.at(id) : nullptr;
}

const FakeKernel::Map* FakeKernel::map(uint64_t id) const {
  auto it = maps_.find(id);
  return it == maps_.end() ? nullptr : &it->second;
}

// A new fd of a map a pin holds.
Expected<Fd> FakeKernel::dup_of(uint64_t map) {
  for (const auto& [path, p] : pins_)
    if (p.map == map && p.hold) return Fd(fcntl(p.hold.get(), F_DUPFD_CLOEXEC, 0));
  return fail(ErrorKind::Bpf, ENOENT, "no pin holds the map");
}

Expected<Fd> FakeKernel::open_pinned(const std::string& path, const MapSpec& spec) {
  auto it = pins_.find(path);
  if (it == pins_.end() || !it->second.map) return fail(ErrorKind::System, ENOENT, "no pin at " + path);
  const MapSpec& have = maps_.at(it->second.map).spec;
  if (have.type != spec.type || have.key_size != spec.key_size || have.value_size != spec.value_size ||
      have.max_entries != spec.max_entries)
    return fail(ErrorKind::Invalid, ESTALE, "the map pinned at " + path + " has another shape");
  note(fmt::format("open pin {} (map {})", path, it->second.map));
  return dup_of(it->second.map);
}

Status FakeKernel::pin(int fd, const std::string& path) {
  if (const int err = injected(Op::Pin)) return injected_error(Op::Pin, err);
  const Map* m = find_map(fd);
  if (!m) return fail(ErrorKind::System, EBADF, "pinning " + path);
  if (pins_.count(path)) return fail(ErrorKind::System, EEXIST, "pinning " + path);
  pins_[path] = Pin{m->id, 0, Fd(fcntl(fd, F_DUPFD_CLOEXEC, 0))};
  note(fmt::format("pin map {} at {}", m->id, path));
  return ok_status();
}

void FakeKernel::unpin(const std::string& path) {
  auto it = pins_.find(path);
  if (it == pins_.end()) return;
  const uint64_t dispatcher = it->second.dispatcher;
  pins_.erase(it);
  note("unpin " + path);
  if (dispatcher) maybe_detach(dispatcher);
}

std::vector<std::string> FakeKernel::pins(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& [path, p] : pins_)
    if (parent_of(path) == dir.string()) out.push_back(path);
  return out;
}

Status FakeKernel::update(int fd, std::span<const uint8_t> key, std::span<const uint8_t> value) {
  if (const int err = injected(Op::Update)) return injected_error(Op::Update, err);
  Map* m = find_map(fd);
  if (!m) return fail(ErrorKind::System, EBADF, "updating a map");
  if (key.size() != m->spec.key_size || value.size() != m->spec.value_size)
    return fail(ErrorKind::System, EINVAL, "updating a map: wrong sizes");
  if (is_array(m->spec.type)) {
    uint32_t index = 0;
    std::memcpy(&index, key.data(), sizeof(index));
    if (index >= m->spec.max_entries) return fail(ErrorKind::System, E2BIG, "updating a map: no such index");
  }
  std::vector<uint8_t> k(key.begin(), key.end());
  // A hash is full at max_entries, as the kernel's.
  if (!is_array(m->spec.type) && !m->elements.count(k) && m->elements.size() >= m->spec.max_entries)
    return fail(ErrorKind::System, E2BIG, "updating a map: full");
  m->elements[std::move(k)] = std::vector<uint8_t>(value.begin(), value.end());
  return ok_status();
}

Status FakeKernel::remove(int fd, std::span<const uint8_t> key) {
  Map* m = find_map(fd);
  if (!m) return fail(ErrorKind::System, EBADF, "deleting from a map");
  if (m->elements.erase(std::vector<uint8_t>(key.begin(), key.end())) == 0)
    return fail(ErrorKind::System, ENOENT, "deleting from a map");
  return ok_status();
}

std::vector<std::vector<uint8_t>> FakeKernel::keys(int fd, uint32_t key_size) const {
  std::vector<std::vector<uint8_t>> out;
  const Map* m = map_of(fd);
  if (!m || key_size != m->spec.key_size) return out;
  for (const auto& [k, v] : m->elements) out.push_back(k);
  return out;
}

Status FakeKernel::lookup(int fd, std::span<const uint8_t> key, std::span<uint8_t> value) const {
  const Map* m = map_of(fd);
  if (!m) return fail(ErrorKind::System, EBADF, "reading a map");
  if (key.size() != m->spec.key_size) return fail(ErrorKind::System, EINVAL, "reading a map: wrong key size");
  // A per-CPU map's value is one a CPU; an array's elements start zeroed.
  const bool fits =
      is_per_cpu(m->spec.type) ? value.size() % m->spec.value_size == 0 : value.size() == m->spec.value_size;
  if (!fits) return fail(ErrorKind::System, EINVAL, "reading a map: wrong value size");
  auto it = m->elements.find(std::vector<uint8_t>(key.begin(), key.end()));
  if (it == m->elements.end()) {
    if (!is_array(m->spec.type)) return fail(ErrorKind::System, ENOENT, "reading a map");
    std::fill(value.begin(), value.end(), 0);
    return ok_status();
  }
  std::copy_n(it->second.begin(), std::min(it->second.size(), value.size()), value.begin());
  return ok_status();
}

uint32_t FakeKernel::map_id(int fd) const { return uint32_t(map_id_of(fd)); }

// ---- programs and dispatchers ----

uint64_t FakeKernel::program_by_fd(int fd) const {
  for (const auto& [id, p] : programs_)
    if (p.handle && fd >= 0 && (p.event_fd == fd || p.test_fd == fd)) return id;
  return 0;
}

Expected<std::unique_ptr<Kernel::Program>> FakeKernel::load(const std::string& object,
                                                            const std::map<std::string, int>& maps,
                                                            const std::map<std::string, std::vector<uint8_t>>& rodata,
                                                            const std::vector<codegen::RecordField>& fields) {
  LoadCall call;
  call.rodata = rodata;
  call.fields = fields;
  for (const auto& [name, fd] : maps) {
    if (fd < 0) {
      call.maps[name] = 0;  // declared, not created
      continue;
    }
    const Map* m = map_of(fd);
    if (!m) return fail(ErrorKind::Bpf, EBADF, "reusing map " + name + ": not a map");
    call.maps[name] = m->id;
  }
  int err = injected(Op::Load);
  if (!err && verifier_) err = verifier_(call);
  if (err) {
    loads_.push_back(call);
    note(fmt::format("load refused: {}", std::strerror(err)));
    return fail(ErrorKind::Bpf, err, fmt::format("the kernel refused the generated program ({})", std::strerror(err)));
  }
  const uint64_t id = next_id_++;
  call.program = id;
  loads_.push_back(call);
  // The test entry's name is in the object's symbols when it has one.
  auto p = std::make_unique<FakeProgram>(*this, id, object.find("test_entry") != std::string::npos);
  programs_[id] = ProgramState{true, p->event_fd(), p->test_fd()};
  std::string bound;
  for (const auto& [name, map] : call.maps) bound += fmt::format(" {}=map {}", name, map);
  note(fmt::format("load program {}:{}", id, bound));
  return std::unique_ptr<Kernel::Program>(std::move(p));
}

Expected<std::unique_ptr<Kernel::Attachment>> FakeKernel::attach(const AttachPoint& at) {
  if (const int err = injected(Op::Attach)) return injected_error(Op::Attach, err);
  if (!at.pin_base.empty()) {
    auto link = pins_.find(at.pin_base + "_link");
    auto slots = pins_.find(at.pin_base + "_slots");
    if (link != pins_.end() && slots != pins_.end()) {
      note(fmt::format("adopt dispatcher {} of {}", link->second.dispatcher, at.pin_base));
      auto fd = dup_of(slots->second.map);
      if (!fd) return unexpected(std::move(fd).error());
      return std::unique_ptr<Kernel::Attachment>(
          std::make_unique<FakeAttachment>(*this, link->second.dispatcher, std::move(*fd), at.pin_base, true));
    }
    unpin(at.pin_base + "_link");
    unpin(at.pin_base + "_slots");
  }
  auto slots = new_map({BPF_MAP_TYPE_PROG_ARRAY, "histd_slots", 4, 4, HISTD_CHAIN_SLOTS}, false);
  if (!slots) return unexpected(std::move(slots).error());
  const uint64_t id = next_id_++;
  Dispatcher& d = dispatchers_[id];
  d.id = id;
  d.at = at;
  d.slots_map = find_map(slots->get())->id;
  d.slots.assign(HISTD_CHAIN_SLOTS, 0);
  note(fmt::format("attach dispatcher {} to {}:{}", id, at.system, at.event));
  if (!at.pin_base.empty()) {
    pins_[at.pin_base + "_link"] = Pin{0, id, Fd()};
    pins_[at.pin_base + "_slots"] = Pin{d.slots_map, 0, Fd(fcntl(slots->get(), F_DUPFD_CLOEXEC, 0))};
  }
  return std::unique_ptr<Kernel::Attachment>(
      std::make_unique<FakeAttachment>(*this, id, std::move(*slots), at.pin_base, false));
}

// A follower holds a duplicate of its map's fd, as the loaded programs
// keep the kernel's map alive.
class FakeKernel::FakeFollower final : public deploy::Kernel::Follower {
 public:
  FakeFollower(std::map<uint64_t, uint64_t>& followers, uint64_t id, Fd map)
      : followers_(followers), id_(id), map_(std::move(map)) {}
  ~FakeFollower() override { followers_.erase(id_); }

 private:
  std::map<uint64_t, uint64_t>& followers_;
  uint64_t id_;
  Fd map_;
};

Expected<std::unique_ptr<deploy::Kernel::Follower>> FakeKernel::follow_forks(int pids_map) {
  if (const int err = injected(Op::Follow)) return injected_error(Op::Follow, err);
  const uint64_t map = map_id_of(pids_map);
  if (!map) return fail(ErrorKind::Bpf, EBADF, "following forks");
  const uint64_t id = next_id_++;
  followers_[id] = map;
  note(fmt::format("follower {} on map {}", id, map));
  return std::unique_ptr<Follower>(
      std::make_unique<FakeFollower>(followers_, id, Fd(fcntl(pids_map, F_DUPFD_CLOEXEC, 0))));
}

std::vector<uint64_t> FakeKernel::followers() const {
  std::vector<uint64_t> out;
  for (const auto& [id, map] : followers_) out.push_back(map);
  return out;
}

Expected<uint32_t> FakeKernel::test_run(int test_fd, std::span<const uint8_t> record, uint64_t, const char*) {
  const uint64_t program = program_by_fd(test_fd);
  if (!program) return fail(ErrorKind::Bpf, EBADF, "running the test entry");
  note(fmt::format("test run of program {} ({} bytes)", program, record.size()));
  return 0u;
}

// ---- what lives ----

bool FakeKernel::map_alive(const Map& m) const {
  pollfd p{m.watch.get(), POLLIN, 0};
  // Every write end closed (fds and pins alike): the pipe hangs up.
  return poll(&p, 1, 0) == 0 || !(p.revents & POLLHUP);
}

bool FakeKernel::dispatcher_alive(const Dispatcher& d) const {
  if (d.handles > 0) return true;
  return std::any_of(pins_.begin(), pins_.end(), [&](const auto& e) { return e.second.dispatcher == d.id; });
}

void FakeKernel::maybe_detach(uint64_t id) {
  Dispatcher& d = dispatchers_.at(id);
  if (dispatcher_alive(d)) return;
  // Detached: its array goes, and with it the programs it held.
  std::fill(d.slots.begin(), d.slots.end(), 0);
  note(fmt::format("detach dispatcher {}", id));
}

FakeKernel::Live FakeKernel::live() const {
  Live l;
  for (const auto& [id, m] : maps_)
    if (map_alive(m)) l.maps.insert(id);
  for (const auto& [path, p] : pins_) l.pins.insert(path);
  for (const auto& [id, p] : programs_)
    if (p.handle) l.programs.insert(id);
  for (const auto& [id, d] : dispatchers_) {
    if (!dispatcher_alive(d)) continue;
    l.dispatchers[id] = d.slots;
    for (uint64_t p : d.slots)
      if (p) l.programs.insert(p);
  }
  return l;
}

void PrintTo(const FakeKernel::Live& l, std::ostream* os) {
  *os << "maps";
  for (uint64_t m : l.maps) *os << " " << m;
  *os << "; pins";
  for (const std::string& p : l.pins) *os << " " << p;
  *os << "; programs";
  for (uint64_t p : l.programs) *os << " " << p;
  for (const auto& [id, slots] : l.dispatchers) {
    *os << "; dispatcher " << id << " slots";
    for (uint64_t p : slots) *os << " " << p;
  }
}

std::vector<const FakeKernel::Map*> FakeKernel::created() const {
  std::vector<const Map*> out;
  for (const auto& [id, m] : maps_)
    if (m.created) out.push_back(&m);
  return out;
}

std::vector<const FakeKernel::Dispatcher*> FakeKernel::dispatchers() const {
  std::vector<const Dispatcher*> out;
  for (const auto& [id, d] : dispatchers_)
    if (dispatcher_alive(d)) out.push_back(&d);
  return out;
}

std::string FakeKernel::journal() const {
  std::string out;
  for (const std::string& line : journal_) out += line + "\n";
  return out;
}

}  // namespace histd::testing
