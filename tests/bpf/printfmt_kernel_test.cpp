// SPDX-License-Identifier: GPL-2.0-only
// printfmt::Printer against the kernel itself: the records of a real tracefs
// instance (read raw from per_cpu/cpuN/trace_pipe_raw) printed by the
// Printer must read as the kernel printed the same records in the
// instance's `trace` — the kernel has tracefs and event recording, only not
// hist triggers. Where the two may differ by design (%p: the kernel prints a
// hashed pointer, histd the address; %pS: see below) the test says so.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
// libtraceevent's kbuffer.h has no extern "C" of its own.
extern "C" {
#include <traceevent/kbuffer.h>
}

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bpf_test_support.h"
#include "histd/printfmt.h"
#include "histd/symbols.h"

namespace histd {
namespace {

namespace fs = std::filesystem;
constexpr const char* kTracefs = "/sys/kernel/tracing";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool put(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// A tracefs instance of the machine's kernel, removed at the end.
class KernelInstance {
 public:
  KernelInstance() : dir_(fs::path(kTracefs) / "instances" / ("histd-printfmt-" + testing::unique_suffix())) {
    made_ = mkdir(dir_.c_str(), 0700) == 0;
  }
  ~KernelInstance() {
    if (!made_) return;
    put(dir_ / "tracing_on", "0");
    put(dir_ / "events/enable", "0");
    rmdir(dir_.c_str());
  }
  bool made() const { return made_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  bool made_ = false;
};

struct RawRecord {
  unsigned long long ts = 0;
  std::vector<uint8_t> data;
};

// Every record the instance's per-CPU buffers hold (consumed).
std::vector<RawRecord> drain_raw(const fs::path& dir) {
  std::vector<RawRecord> out;
  const long page = sysconf(_SC_PAGESIZE);
  for (const auto& cpu : fs::directory_iterator(dir / "per_cpu")) {
    const int fd = open((cpu.path() / "trace_pipe_raw").c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) continue;
    kbuffer* kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
    std::vector<uint8_t> buf(static_cast<size_t>(page));
    while (read(fd, buf.data(), buf.size()) > 0) {
      if (kbuffer_load_subbuffer(kb, buf.data()) < 0) break;
      unsigned long long ts = 0;
      for (void* d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts)) {
        const auto* p = static_cast<const uint8_t*>(d);
        out.push_back({ts, std::vector<uint8_t>(p, p + kbuffer_event_size(kb))});
      }
    }
    kbuffer_free(kb);
    close(fd);
  }
  return out;
}

// Hashed pointers ("ptr=00000000c8e98f8c") cannot be compared: the kernel
// keys its hash with a secret of its own, histd with another.
std::string without_hashes(std::string text) {
  static const std::regex hashed("\\b00000000[0-9a-f]{8}\\b");
  return std::regex_replace(text, hashed, "<hashed>");
}

// The kernel's lines by their timestamp text ("1234.567890"): what follows
// the line's header ("<name>: <fields>", or a system call's own form), its
// hashed pointers masked.
std::multimap<std::string, std::string> kernel_lines(const std::string& trace) {
  std::multimap<std::string, std::string> out;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    // "<comm>-<pid> [cpu] flags <ts>: <text>": the first ": " after "] ".
    const size_t bracket = line.find("] ");
    const size_t colon = line.find(": ", bracket);
    if (bracket == std::string::npos || colon == std::string::npos) continue;
    const size_t ts_begin = line.rfind(' ', colon) + 1;
    out.emplace(line.substr(ts_begin, colon - ts_begin), without_hashes(line.substr(colon + 2)));
  }
  return out;
}

std::string ts_text(unsigned long long ns) {
  char b[32];
  snprintf(b, sizeof(b), "%llu.%06llu", ns / 1000000000ULL, (ns % 1000000000ULL) / 1000ULL);
  return b;
}

TEST(PrintfmtKernel, PrintsTheRecordsAsTheKernelDoes) {
  if (geteuid() != 0 || !fs::exists(fs::path(kTracefs) / "instances")) GTEST_SKIP() << "needs root and tracefs";
  KernelInstance inst;
  ASSERT_TRUE(inst.made()) << inst.dir();
  // Whole systems, whose print fmts use every common helper: flags,
  // symbolic values, strings, dynamic strings, hex, %pS, enum constants.
  const std::vector<std::string> systems = {"sched", "kmem",         "timer",   "signal",  "task", "workqueue",
                                            "irq",   "raw_syscalls", "filemap", "pagemap", "rcu",  "mmap_lock"};
  ASSERT_TRUE(put(inst.dir() / "trace_clock", "mono"));
  symbols::KernelSymbols kallsyms = symbols::KernelSymbols::parse(slurp("/proc/kallsyms"));
  printfmt::Printer printer(&kallsyms, printfmt::kernel_enums());
  ASSERT_TRUE(printer.add_printk_formats(slurp(fs::path(kTracefs) / "printk_formats")).ok());
  for (const std::string& sys : systems) {
    if (!fs::exists(inst.dir() / "events" / sys)) continue;
    for (const auto& e : fs::directory_iterator(inst.dir() / "events" / sys)) {
      if (e.is_directory()) {
        ASSERT_TRUE(printer.add_event(sys, slurp(e.path() / "format")).ok()) << e.path();
      }
    }
    ASSERT_TRUE(put(inst.dir() / "events" / sys / "enable", "1")) << sys;
  }
  for (const std::string ev : {"sys_enter_openat", "sys_exit_openat", "sys_enter_read", "sys_exit_read"}) {
    const fs::path e = inst.dir() / "events/syscalls" / ev;
    ASSERT_TRUE(printer.add_event("syscalls", slurp(e / "format")).ok()) << e;
    ASSERT_TRUE(put(e / "enable", "1")) << e;
  }
  ASSERT_TRUE(put(inst.dir() / "tracing_on", "1"));
  for (int i = 0; i < 5; ++i) ASSERT_EQ(std::system("/bin/ls /proc/self/ >/dev/null; kill -0 $$"), 0);
  ASSERT_TRUE(put(inst.dir() / "tracing_on", "0"));
  const auto lines = kernel_lines(slurp(inst.dir() / "trace"));
  const std::vector<RawRecord> records = drain_raw(inst.dir());
  ASSERT_GT(records.size(), 20u);
  size_t compared = 0, same = 0;
  std::map<std::string, std::vector<std::string>> differences;
  for (const RawRecord& r : records) {
    auto body = printer.line_text(r.data);
    if (!body) continue;  // an event not added (none should be)
    const std::string mine = without_hashes(*body);
    // The record's line: the same timestamp as printed, give or take a
    // microsecond of rounding (the per-CPU buffers and the merged text
    // round their deltas apart).
    std::string kernel;
    bool matched = false, seen = false;
    for (long long d = -1; d <= 1 && !matched; ++d) {
      const auto range = lines.equal_range(ts_text(r.ts + static_cast<unsigned long long>(d * 1000)));
      for (auto it = range.first; it != range.second && !matched; ++it) {
        seen = true;
        kernel = it->second;
        matched = kernel == mine;
      }
    }
    if (!seen) continue;
    ++compared;
    if (matched)
      ++same;
    else
      differences[body->substr(0, body->find_first_of(":("))].push_back("histd: " + *body +
                                                                        "\n  kernel, at that time: " + kernel);
  }
  EXPECT_GT(compared, 20u);
  std::string report;
  for (const auto& [name, diffs] : differences)
    report += name + " (" + std::to_string(diffs.size()) + "), e.g.\n  " + diffs.front() + "\n";
  EXPECT_EQ(same, compared) << report;
}

}  // namespace
}  // namespace histd
