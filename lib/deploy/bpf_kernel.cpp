// SPDX-License-Identifier: GPL-2.0-only
// bpf_kernel(): the deployer's Kernel (histd/kernel.h) as the kernel itself,
// through lib/runtime and libbpf. Each method is the call the deployer
// made before the interface existed, unchanged.
#include <bpf/bpf.h>

#include <system_error>

#include "histd/kernel.h"

namespace histd::deploy {

namespace {

class BpfProgram final : public Kernel::Program {
 public:
  explicit BpfProgram(runtime::EventProgram p) : p_(std::move(p)) {}
  int event_fd() const override { return p_.event_fd(); }
  int test_fd() const override { return p_.test_fd(); }
  uint64_t missed() const override { return p_.missed(); }

 private:
  runtime::EventProgram p_;
};

class BpfAttachment final : public Kernel::Attachment {
 public:
  explicit BpfAttachment(runtime::Attachment a) : a_(std::move(a)) {}
  Status install(int prog_fd, uint32_t slot) override { return a_.install(prog_fd, slot); }
  void clear(uint32_t slot) override { a_.clear(slot); }
  uint32_t slot_count() const override { return a_.slot_count(); }
  int slots_fd() const override { return a_.slots_fd(); }
  void keep_program_until_detached() override { a_.keep_program_until_detached(); }
  void let_go() override { a_.let_go(); }
  const std::string& pin_base() const override { return a_.pin_base(); }
  bool adopted() const override { return a_.adopted(); }
  uint64_t missed() const override { return a_.missed(); }

 private:
  runtime::Attachment a_;
};

class BpfFollower final : public Kernel::Follower {
 public:
  explicit BpfFollower(runtime::ForkFollower f) : f_(std::move(f)) {}

 private:
  runtime::ForkFollower f_;
};

class BpfKernel final : public Kernel {
 public:
  explicit BpfKernel(runtime::BpfPaths paths) : paths_(std::move(paths)) {}

  Expected<Fd> create_map(const MapSpec& s) override {
    return runtime::create_map(s.type, s.name.c_str(), s.key_size, s.value_size, s.max_entries, s.flags);
  }

  Expected<Fd> open_pinned(const std::string& path, const MapSpec& s) override {
    Fd fd(bpf_obj_get(path.c_str()));
    if (!fd) return fail_errno("opening the pin " + path);
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0) return fail_errno("reading the map pinned at " + path);
    if (int(info.type) != s.type || info.key_size != s.key_size || info.value_size != s.value_size ||
        info.max_entries != s.max_entries)
      return fail(ErrorKind::Invalid, ESTALE, "the map pinned at " + path + " has another shape");
    return fd;
  }

  Status pin(int fd, const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (bpf_obj_pin(fd, path.c_str()) != 0) return fail_errno("pinning " + path);
    return ok_status();
  }

  void unpin(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }

  std::vector<std::string> pins(const std::filesystem::path& dir) override {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (!entry.is_directory(ec)) out.push_back(entry.path().string());
    return out;
  }

  Status update(int map, std::span<const uint8_t> key, std::span<const uint8_t> value) override {
    if (bpf_map_update_elem(map, key.data(), value.data(), BPF_ANY) != 0) return fail_errno("updating a map");
    return ok_status();
  }

  Status lookup(int map, std::span<const uint8_t> key, std::span<uint8_t> value) const override {
    if (bpf_map_lookup_elem(map, key.data(), value.data()) != 0) return fail_errno("reading a map");
    return ok_status();
  }

  Status remove(int map, std::span<const uint8_t> key) override {
    if (bpf_map_delete_elem(map, key.data()) != 0) return fail_errno("deleting from a map");
    return ok_status();
  }

  std::vector<std::vector<uint8_t>> keys(int map, uint32_t key_size) const override {
    std::vector<std::vector<uint8_t>> out;
    std::vector<uint8_t> key(key_size), next(key_size);
    for (const void* prev = nullptr; bpf_map_get_next_key(map, prev, next.data()) == 0; prev = key.data()) {
      key = next;
      out.push_back(key);
    }
    return out;
  }

  Expected<std::unique_ptr<Follower>> follow_forks(int pids_map) override {
    auto f = runtime::ForkFollower::attach(paths_, pids_map);
    if (!f) return unexpected(std::move(f).error());
    return std::unique_ptr<Follower>(std::make_unique<BpfFollower>(std::move(*f)));
  }

  uint32_t map_id(int map) const override {
    if (map < 0) return 0;
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    return bpf_obj_get_info_by_fd(map, &info, &len) == 0 ? info.id : 0;
  }

  Expected<std::unique_ptr<Program>> load(const std::string& object, const std::map<std::string, int>& maps,
                                          const std::map<std::string, std::vector<uint8_t>>& rodata,
                                          const std::vector<codegen::RecordField>& fields) override {
    std::vector<runtime::RecordFieldPlace> places;
    for (const codegen::RecordField& f : fields) places.push_back({f.offset, f.size, f.is_signed});
    auto p = runtime::EventProgram::load(object, maps, rodata, places);
    if (!p) return unexpected(std::move(p).error());
    return std::unique_ptr<Program>(std::make_unique<BpfProgram>(std::move(*p)));
  }

  Expected<std::unique_ptr<Attachment>> attach(const AttachPoint& at) override {
    auto a = runtime::Attachment::attach(paths_, at.system, at.event, at.pin_base, at.syscall, at.probe, at.btf_target);
    if (!a) return unexpected(std::move(a).error());
    return std::unique_ptr<Attachment>(std::make_unique<BpfAttachment>(std::move(*a)));
  }

  Expected<uint32_t> test_run(int test_fd, std::span<const uint8_t> record, uint64_t ts, const char* comm) override {
    return runtime::test_run(test_fd, record, ts, comm);
  }

 private:
  const runtime::BpfPaths paths_;
};

}  // namespace

std::shared_ptr<Kernel> bpf_kernel(runtime::BpfPaths paths) { return std::make_shared<BpfKernel>(std::move(paths)); }

}  // namespace histd::deploy
