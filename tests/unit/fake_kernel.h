// SPDX-License-Identifier: GPL-2.0-only
// A kernel for the deployer's unit tests (deploy::Kernel, histd/kernel.h),
// without root: it keeps maps, pins, programs and dispatchers as the kernel
// would count their references, records every call, and fails the call the
// test names. Its fds are real (a pipe's write end for each map, an eventfd
// for each program), so that the deployer may close and duplicate them as
// it does the kernel's: a map lives while an fd of it or a pin does (its
// pipe's read end, kept here, says when every write end is closed).
// Programs live while their handle does or a live dispatcher's slot holds
// them; a dispatcher while its handle or its pinned link does.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "histd/kernel.h"

namespace histd::testing {

class FakeKernel final : public deploy::Kernel {
 public:
  // The calls a test can make fail (fail_nth).
  enum class Op { CreateMap, Pin, Update, Load, Attach, Install, Follow };
  static const char* op_name(Op op);
  friend void PrintTo(Op op, std::ostream* os) { *os << op_name(op); }

  struct Map {
    uint64_t id = 0;
    MapSpec spec;
    bool created = false;  // by create_map (not a dispatcher's own array)
    Fd watch;              // the read end of its pipe
    std::map<std::vector<uint8_t>, std::vector<uint8_t>> elements;
  };
  // One load, refused or not: the maps bound by name (map ids).
  struct LoadCall {
    std::map<std::string, uint64_t> maps;
    std::map<std::string, std::vector<uint8_t>> rodata;
    std::vector<codegen::RecordField> fields;
    uint64_t program = 0;  // 0: refused
  };
  struct Dispatcher {
    uint64_t id = 0;
    AttachPoint at;
    uint64_t slots_map = 0;
    std::vector<uint64_t> slots;  // program ids, 0: empty
    int handles = 0;
  };
  // What lives: the state a failed command must leave as it found it.
  struct Live {
    std::set<uint64_t> maps;
    std::set<std::string> pins;
    std::set<uint64_t> programs;
    std::map<uint64_t, std::vector<uint64_t>> dispatchers;  // id -> its slots
    friend bool operator==(const Live&, const Live&) = default;
    friend void PrintTo(const Live& l, std::ostream* os);  // for gtest's messages
  };

  FakeKernel();
  ~FakeKernel() override;

  // ---- what the test asks for ----
  // The `nth` (1: the next) call of `op` from now fails with `err`.
  void fail_nth(Op op, int nth, int err);
  // The verifier: refuses (its errno) or accepts (0) each load.
  void set_verifier(std::function<int(const LoadCall&)> verifier) { verifier_ = std::move(verifier); }
  // Calls of `op` so far.
  int calls(Op op) const;

  // ---- what it saw ----
  Live live() const;
  // Every map made by create_map, in order.
  std::vector<const Map*> created() const;
  const std::vector<LoadCall>& loads() const { return loads_; }
  // The map an fd is of (nullptr: not a map of this kernel).
  const Map* map_of(int fd) const;
  const Map* map(uint64_t id) const;
  std::vector<const Dispatcher*> dispatchers() const;
  // Every call, in words, for a failing test's message.
  std::string journal() const;
  // Followers (follow_forks) alive, each with the map it was given (its id).
  std::vector<uint64_t> followers() const;

  // ---- deploy::Kernel ----
  Expected<Fd> create_map(const MapSpec& spec) override;
  Expected<Fd> open_pinned(const std::string& path, const MapSpec& spec) override;
  Status pin(int fd, const std::string& path) override;
  void unpin(const std::string& path) override;
  std::vector<std::string> pins(const std::filesystem::path& dir) override;
  Status update(int map, std::span<const uint8_t> key, std::span<const uint8_t> value) override;
  Status lookup(int map, std::span<const uint8_t> key, std::span<uint8_t> value) const override;
  Status remove(int map, std::span<const uint8_t> key) override;
  std::vector<std::vector<uint8_t>> keys(int map, uint32_t key_size) const override;
  uint32_t map_id(int map) const override;
  Expected<std::unique_ptr<Program>> load(const std::string& object, const std::map<std::string, int>& maps,
                                          const std::map<std::string, std::vector<uint8_t>>& rodata,
                                          const std::vector<codegen::RecordField>& fields) override;
  Expected<std::unique_ptr<Attachment>> attach(const AttachPoint& at) override;
  Expected<std::unique_ptr<Follower>> follow_forks(int pids_map) override;
  Expected<uint32_t> test_run(int test_fd, std::span<const uint8_t> record, uint64_t ts, const char* comm) override;

 private:
  class FakeProgram;
  class FakeAttachment;
  class FakeFollower;
  struct Pin {
    uint64_t map = 0;         // a map's pin holds an fd of it
    uint64_t dispatcher = 0;  // a link's pin holds its dispatcher attached
    Fd hold;
  };
  struct ProgramState {
    bool handle = true;
    int event_fd = -1;
    int test_fd = -1;
  };
  // The errno a rule of fail_nth() gives this call of `op` (0: none).
  int injected(Op op);
  Expected<Fd> new_map(const MapSpec& spec, bool created);
  uint64_t map_id_of(int fd) const;
  Map* find_map(int fd);
  Expected<Fd> dup_of(uint64_t map);
  uint64_t program_by_fd(int fd) const;
  bool map_alive(const Map& m) const;
  bool dispatcher_alive(const Dispatcher& d) const;
  // A handle of dispatcher `id` went, or its link's pin.
  void maybe_detach(uint64_t id);
  void note(std::string line) { journal_.push_back(std::move(line)); }

  uint64_t next_id_ = 1;
  std::map<ino_t, uint64_t> by_inode_;
  std::map<uint64_t, Map> maps_;
  std::map<std::string, Pin> pins_;
  std::map<uint64_t, ProgramState> programs_;
  std::map<uint64_t, Dispatcher> dispatchers_;
  std::vector<LoadCall> loads_;
  std::map<uint64_t, uint64_t> followers_;  // follower id -> its map's id
  std::map<Op, int> calls_;
  std::multimap<Op, std::pair<int, int>> rules_;  // op -> (call number, errno)
  std::function<int(const LoadCall&)> verifier_;
  std::vector<std::string> journal_;
};

}  // namespace histd::testing
