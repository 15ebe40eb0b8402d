// SPDX-License-Identifier: GPL-2.0-only
#include "bpf_test_support.h"
#include "test_paths.h"

#include <bpf/bpf.h>
#include <sys/prctl.h>

#include <filesystem>
#include <random>

#include "histd/catalog.h"
#include "histd/runtime.h"

namespace histd::testing {

std::string missing_capability() {
  if (geteuid() != 0) return "not root";
  int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "probe", 4, 8, 1, nullptr);
  if (fd < 0) return std::string("cannot create BPF maps: ") + std::strerror(errno);
  close(fd);
  return {};
}

namespace {

std::unique_ptr<engine::Engine> make_engine(const std::filesystem::path& root, bool attach,
                                            engine::EngineOptions opt = {}) {
  runtime::init_libbpf(false);
  auto catalog = catalog::Catalog::open(root);
  EXPECT_TRUE(catalog.ok()) << (catalog.ok() ? "" : catalog.error().context);
  if (!catalog) return nullptr;
  auto paths = runtime::find_bpf_paths();
  EXPECT_TRUE(paths.ok()) << (paths.ok() ? "" : paths.error().context);
  if (!paths) return nullptr;
  opt.deploy.attach = attach;
  auto eng = engine::Engine::create(std::move(*catalog), runtime::Compiler(*paths, {}), opt);
  EXPECT_TRUE(eng.ok()) << (eng.ok() ? "" : eng.error().context);
  if (!eng) return nullptr;
  return std::move(*eng);
}

}  // namespace

Record exec_record(const std::string& filename, int32_t pid) {
  Record r(20 + filename.size() + 1);
  r.pid(pid).set<uint32_t>(8, static_cast<uint32_t>((filename.size() + 1) << 16 | 20)).set<int32_t>(12, pid);
  for (size_t i = 0; i < filename.size(); ++i) r.set<char>(20 + i, filename[i]);
  return r;
}

Expected<std::string> read_hist(engine::Engine& engine, const std::string& system, const std::string& event,
                                const render::Options& options) {
  auto hist = engine.reads().hist(system, event);
  if (!hist) return unexpected(std::move(hist).error());
  return render::hist_text(*hist, engine.resolver(), options);
}

Expected<std::string> read_hist_json(engine::Engine& engine, const std::string& system, const std::string& event,
                                     const render::Options& options) {
  auto hist = engine.reads().hist(system, event);
  if (!hist) return unexpected(std::move(hist).error());
  return render::hist_json(*hist, engine.resolver(), options);
}

std::string read_hist_debug(engine::Engine& engine, const std::string& system, const std::string& event) {
  return render::hist_debug(engine.reads().hist_debug(system, event));
}

std::string read_trigger(engine::Engine& engine, const std::string& system, const std::string& event) {
  return render::trigger_file(engine.reads().event_triggers(system, event));
}

std::string read_error_log(engine::Engine& engine) { return render::error_log(engine.reads().error_log()); }

std::string read_synthetic(engine::Engine& engine) {
  return render::synthetic_events(engine.reads().synthetic_events());
}

std::vector<std::string> list_triggers(engine::Engine& engine) {
  std::vector<std::string> out;
  for (const engine::TriggerInfo& t : engine.reads().trigger_lines()) {
    std::string line = render::trigger_list({t});
    line.pop_back();  // its '\n'
    out.push_back(std::move(line));
  }
  return out;
}

std::string observable_state(engine::Engine& engine, const std::vector<std::string>& events) {
  std::string out = "synthetic_events:\n" + read_synthetic(engine) + "triggers:\n";
  for (const std::string& line : list_triggers(engine)) out += line + "\n";
  for (const std::string& event : events) {
    const size_t colon = event.find(':');
    auto hist = read_hist(engine, event.substr(0, colon), event.substr(colon + 1));
    const std::string text = hist ? *hist : "read_hist failed: " + hist.error().context;
    out += event + " hist:\n" + text.substr(0, text.find("\nERROR: ")) + "\n";
  }
  return out;
}

std::unique_ptr<engine::Engine> fixture_engine(engine::EngineOptions options) {
  return make_engine(histd::testing::test_data_dir() / "fixtures" / "tracefs", false, std::move(options));
}

std::unique_ptr<engine::Engine> real_engine(engine::EngineOptions options) {
  auto root = catalog::find_tracefs();
  EXPECT_TRUE(root.ok()) << (root.ok() ? "" : root.error().context);
  if (!root) return nullptr;
  return make_engine(*root, true, std::move(options));
}

std::string unique_suffix(size_t n) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kChars[rd() % (sizeof(kChars) - 1)];
  return out;
}

// A machine booted without systemd may have no bpffs at /sys/fs/bpf yet:
// histd mounts it for its pin directory, and so does a test for its own.
// Should the mount fail (not root), pinning there fails and says so.
std::filesystem::path test_pin_dir(const std::string& tag) {
  auto dir = std::filesystem::path("/sys/fs/bpf") /
             ("histd-test-" + tag + "-" + unique_suffix() + "-" + std::to_string(getpid()));
  (void)runtime::ensure_bpffs(dir);
  return dir;
}

// 8 + 1 + 6 characters: a comm holds 15.
NamedThread::NamedThread(const std::string& tag) : comm_(tag.substr(0, 8) + "-" + unique_suffix(6)) {
  thread_ = std::thread([this] { loop(); });
}

NamedThread::~NamedThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void NamedThread::run(const std::function<void()>& work) {
  std::unique_lock<std::mutex> lock(mu_);
  work_ = &work;
  cv_.notify_all();
  cv_.wait(lock, [&] { return work_ == nullptr; });
}

void NamedThread::loop() {
  // Named before it takes any work: every event of the work carries the name.
  prctl(PR_SET_NAME, comm_.c_str());
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || work_ != nullptr; });
    if (work_ == nullptr) return;  // stopped
    const std::function<void()>* work = work_;
    lock.unlock();
    (*work)();
    lock.lock();
    work_ = nullptr;
    cv_.notify_all();
  }
}

}  // namespace histd::testing
