// SPDX-License-Identifier: GPL-2.0-only
// What the deployer asks of the kernel, one method an operation: a map
// made, opened from its pin, pinned, unpinned; an element written, read or
// deleted, a map's keys; an event's compiled object loaded; its dispatcher
// attached and programs installed in the dispatcher's slots; the programs
// following forks attached; a record run through a test entry.
// The deployer holds one (Deployer::create) and calls nothing else of the
// kernel on its command path, so that a fake can stand in for it: histd's
// is bpf_kernel(), over lib/runtime and libbpf; the unit tests' is
// tests/unit/fake_kernel.h, which needs no root. Left out on purpose: the
// trace ring's consumer and switches (histd/trace_ring.h) and the table
// reader's reads and clears (histd/table_reader.h), which read maps the
// deployer made but decide nothing about them. Not thread-safe: the deployer
// calls it under the engine's lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/codegen.h"
#include "histd/fd.h"
#include "histd/result.h"
#include "histd/runtime.h"

namespace histd::deploy {

class Kernel {
 public:
  // A BPF map's shape (bpf_map_create's arguments).
  struct MapSpec {
    int type = 0;  // enum bpf_map_type
    std::string name;
    uint32_t key_size = 0;
    uint32_t value_size = 0;
    uint32_t max_entries = 0;
    uint32_t flags = 0;  // map_flags (BPF_F_NO_PREALLOC, ...)
    friend bool operator==(const MapSpec&, const MapSpec&) = default;
  };

  // One loaded event unit (runtime::EventProgram): its programs' fds, kept
  // by the handle; the kernel keeps an installed program alive through the
  // dispatcher's array once the handle goes.
  class Program {
   public:
    virtual ~Program() = default;
    virtual int event_fd() const = 0;
    virtual int test_fd() const = 0;  // -1: no test entry
    // The kernel's recursion_misses of its programs.
    virtual uint64_t missed() const = 0;
  };

  // Where a dispatcher attaches (runtime::Attachment::attach's arguments).
  struct AttachPoint {
    std::string system;
    std::string event;
    std::string pin_base;  // empty: not pinned
    std::optional<catalog::SyscallEvent> syscall;
    bool probe = false;
    std::string btf_target;  // entered BTF-typed at tp_btf/<btf_target>; empty: not
  };

  // The dispatcher attached to one tracepoint, with its program array
  // (runtime::Attachment, which says what each of these does). Destroying
  // it empties slot 0, detaches and unpins.
  class Attachment {
   public:
    virtual ~Attachment() = default;
    virtual Status install(int prog_fd, uint32_t slot) = 0;
    virtual void clear(uint32_t slot) = 0;
    virtual uint32_t slot_count() const = 0;
    virtual int slots_fd() const = 0;
    virtual void keep_program_until_detached() = 0;
    virtual void let_go() = 0;
    virtual const std::string& pin_base() const = 0;
    virtual bool adopted() const = 0;
    virtual uint64_t missed() const = 0;
  };

  // options/event-fork's programs following forks and frees on a pid list
  // (runtime::ForkFollower); destroying it detaches them.
  class Follower {
   public:
    virtual ~Follower() = default;
  };

  virtual ~Kernel() = default;

  // ---- maps and pins ----
  virtual Expected<Fd> create_map(const MapSpec& spec) = 0;
  // The map pinned at `path` if it has the shape `spec` (its name aside);
  // ENOENT without one, ESTALE when it has another shape.
  virtual Expected<Fd> open_pinned(const std::string& path, const MapSpec& spec) = 0;
  // Pins `fd` at `path`, making its directory if need be.
  virtual Status pin(int fd, const std::string& path) = 0;
  // Removes the pin at `path` (none there: nothing to do).
  virtual void unpin(const std::string& path) = 0;
  // The pins in `dir`, not its subdirectories (others' pins live there).
  virtual std::vector<std::string> pins(const std::filesystem::path& dir) = 0;
  virtual Status update(int map, std::span<const uint8_t> key, std::span<const uint8_t> value) = 0;
  virtual Status lookup(int map, std::span<const uint8_t> key, std::span<uint8_t> value) const = 0;
  // Deletes the element at `key` (ENOENT: there was none).
  virtual Status remove(int map, std::span<const uint8_t> key) = 0;
  // Every key of a hash map, `key_size` bytes each, in the map's order.
  virtual std::vector<std::vector<uint8_t>> keys(int map, uint32_t key_size) const = 0;
  // The kernel's id of the map (0: unknown).
  virtual uint32_t map_id(int map) const = 0;

  // ---- programs ----
  // runtime::EventProgram::load: `object` with the maps it uses bound to
  // `maps` (-1: declared, unused, not created) and its read-only sections
  // set to `rodata`, its record fields at `fields` (codegen::RecordField).
  virtual Expected<std::unique_ptr<Program>> load(const std::string& object, const std::map<std::string, int>& maps,
                                                  const std::map<std::string, std::vector<uint8_t>>& rodata,
                                                  const std::vector<codegen::RecordField>& fields) = 0;
  // A dispatcher attached at `at`, or adopted from the pins there.
  virtual Expected<std::unique_ptr<Attachment>> attach(const AttachPoint& at) = 0;
  // The programs of options/event-fork attached, on the pid list `pids_map`.
  virtual Expected<std::unique_ptr<Follower>> follow_forks(int pids_map) = 0;
  // runtime::test_run: the test entry's retval for `record`.
  virtual Expected<uint32_t> test_run(int test_fd, std::span<const uint8_t> record, uint64_t ts, const char* comm) = 0;
};

// The kernel itself, through lib/runtime and libbpf; `paths` says where the
// dispatcher objects are.
std::shared_ptr<Kernel> bpf_kernel(runtime::BpfPaths paths);

// An element's bytes, for Kernel::update and Kernel::lookup.
template <class T>
std::span<const uint8_t> bytes_of(const T& v) {
  return {reinterpret_cast<const uint8_t*>(&v), sizeof(T)};
}
template <class T>
std::span<uint8_t> bytes_of(T& v) {
  return {reinterpret_cast<uint8_t*>(&v), sizeof(T)};
}

}  // namespace histd::deploy
