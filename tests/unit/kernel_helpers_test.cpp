// SPDX-License-Identifier: GPL-2.0-only
// The kernel histd needs (runtime::kernel_helpers()): every BPF helper its
// programs call is listed with the release it came in, a kernel lacking
// one is named with what it cannot do, and the guide's table says the
// same. No root needed.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "histd/runtime.h"
#include "test_paths.h"

namespace histd::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path& repo() {
  static const fs::path root = (histd::testing::test_data_dir() / ".." / "..").lexically_normal();
  return root;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every helper a program of histd's calls: in bpf/ (its own programs and
// the headers units include) and in the C that lib/codegen writes.
std::set<std::string> helpers_called() {
  std::set<std::string> called;
  const std::regex call(R"(\b(bpf_[a-z0-9_]+)\()");
  for (const char* dir : {"bpf", "lib/codegen"})
    for (const fs::directory_entry& e : fs::directory_iterator(repo() / dir)) {
      if (!e.is_regular_file()) continue;
      const std::string text = read(e.path());
      for (auto m = std::sregex_iterator(text.begin(), text.end(), call); m != std::sregex_iterator(); ++m)
        called.insert((*m)[1]);
    }
  return called;
}

TEST(KernelHelpers, EveryHelperHistdsProgramsCallIsListed) {
  const std::set<std::string> called = helpers_called();
  ASSERT_GT(called.size(), 10u) << "the sources were not found under " << repo();
  for (const std::string& name : called) {
    const auto helpers = kernel_helpers();
    EXPECT_TRUE(std::any_of(helpers.begin(), helpers.end(), [&](const KernelHelper& h) { return h.name == name; }))
        << name << " is called but not in runtime::kernel_helpers(): say which Linux release has it";
  }
}

TEST(KernelHelpers, TheGuideListsEachWithItsRelease) {
  const std::string guide = read(repo() / "docs/guide.md");
  for (const KernelHelper& h : kernel_helpers()) {
    const std::string row = "| `" + std::string(h.name) + "()` | " + std::string(h.since) + " |";
    EXPECT_NE(guide.find(row), std::string::npos) << "docs/guide.md lacks the row " << row;
  }
}

TEST(KernelHelpers, AUnitNeedsTheStartsReleaseOrTheNewestHelperItCalls) {
  EXPECT_EQ(kernel_needed("int event_prog(void *ctx) {\n  bpf_ringbuf_output(&rb, p, 8, 0);\n}\n"),
            "Linux 5.8 or later");
  EXPECT_EQ(kernel_needed("    bpf_loop(240u, histd_search_0, &st, 0);\n"), "Linux 5.17 or later (bpf_loop(): 5.17)");
  EXPECT_EQ(kernel_needed("__u64 t = bpf_ktime_get_tai_ns();\nbpf_loop(1u, f, 0, 0);\n"),
            "Linux 6.1 or later (bpf_loop(): 5.17, bpf_ktime_get_tai_ns(): 6.1)");
  // A name inside a longer one, or not called, is no call.
  EXPECT_EQ(kernel_needed("histd_bpf_loop(1);\n/* bpf_loop */\n"), "Linux 5.8 or later");
  // The guide says the same release of every start.
  EXPECT_NE(read(repo() / "docs/guide.md").find("(histd needs Linux 5.8 or later)"), std::string::npos);
}

TEST(KernelHelpers, AKernelWithEveryHelperRefusesNothing) {
  const KernelShortfall s = kernel_shortfall([](const KernelHelper&) { return true; }, "6.1.0-9-amd64");
  EXPECT_EQ(s.refusal, "");
  EXPECT_TRUE(s.notes.empty());
}

TEST(KernelHelpers, AKernelLackingWhatEveryStartNeedsIsRefusedWithTheReleaseNeeded) {
  const std::set<std::string_view> lacking = {"bpf_ringbuf_output", "bpf_seq_write", "bpf_get_stack", "bpf_loop"};
  const KernelShortfall s =
      kernel_shortfall([&](const KernelHelper& h) { return !lacking.contains(h.name); }, "4.19.0-21-amd64");
  EXPECT_EQ(s.refusal,
            "this kernel (4.19.0-21-amd64) lacks BPF helpers every histd program may call: bpf_get_stack() (Linux "
            "4.18), bpf_seq_write() (Linux 5.8), bpf_ringbuf_output() (Linux 5.8); histd needs Linux 5.8 or later");
  ASSERT_EQ(s.notes.size(), 1u);
}

TEST(KernelHelpers, AnOptionalHelperMissingIsANoteOfWhatCannotBeTraced) {
  const KernelShortfall s =
      kernel_shortfall([](const KernelHelper& h) { return h.name != "bpf_loop" && h.name != "bpf_ktime_get_tai_ns"; },
                       "5.15.0-91-generic");
  EXPECT_EQ(s.refusal, "");
  EXPECT_EQ(s.notes, (std::vector<std::string>{
                         "this kernel (5.15.0-91-generic) has no bpf_loop() (Linux 5.17): a glob with text between "
                         "two stars ('*ab*') over a string longer than 16 bytes cannot be traced",
                         "this kernel (5.15.0-91-generic) has no bpf_ktime_get_tai_ns() (Linux 6.1): timestamps with "
                         "trace_clock tai cannot be traced"}));
}

TEST(KernelHelpers, TheVerifiersUnknownHelperIsNamedWithItsReleaseAndUse) {
  const std::string log =
      "0: R1=ctx(off=0,imm=0) R10=fp0\n; bpf_loop(8u, histd_search_0, &st, 0);\n"
      "12: (85) call unknown#181\ninvalid func unknown#181\nprocessed 13 insns (limit 1000000)\n";
  EXPECT_EQ(helper_refusal(log, "5.15.0-91-generic"),
            "this kernel (5.15.0-91-generic) has no bpf_loop() helper, which came in Linux 5.17: the generated "
            "program calls it for a glob with text between two stars ('*ab*') over a string longer than 16 bytes");
  const std::string r = verifier_refusal(log, EINVAL, "5.15.0-91-generic");
  EXPECT_EQ(r.rfind("this kernel (5.15.0-91-generic) has no bpf_loop() helper", 0), 0u) << r;
  EXPECT_NE(r.find("(Invalid argument); the verifier log:\n0: R1=ctx"), std::string::npos) << r;
  EXPECT_EQ(helper_refusal("invalid func unknown#4000\n", "6.1.0"),
            "this kernel (6.1.0) has no BPF helper #4000, which the generated program calls");
  EXPECT_EQ(helper_refusal("invalid func unknown#130\n", "5.4.0"),
            "this kernel (5.4.0) has no bpf_ringbuf_output() helper, which came in Linux 5.8: the generated "
            "program calls it for any trigger");
}

// A lockdown raised after histd started: the kernel has the helper and
// gives it to no program. Both the verifier's wordings (5.17 on, before).
TEST(KernelHelpers, AHelperALockdownTakesIsNamedWithTheLockdown) {
  const std::string log =
      "12: (85) call bpf_probe_read_kernel#113\n"
      "program of this type cannot use helper bpf_probe_read_kernel#113\n"
      "processed 13 insns (limit 1000000)\n";
  EXPECT_EQ(helper_refusal(log, "6.12.0"),
            "this kernel (6.12.0) refuses bpf_probe_read_kernel() to BPF programs, as it does when locked down for "
            "confidentiality (/sys/kernel/security/lockdown; histd cannot run under that lockdown)");
  const std::string old = helper_refusal("unknown func bpf_probe_read_kernel_str#115\n", "5.10.0");
  EXPECT_EQ(old.rfind("this kernel (5.10.0) refuses bpf_probe_read_kernel_str() to BPF programs, as", 0), 0u) << old;
  const std::string r = verifier_refusal(log, EINVAL, "6.12.0");
  EXPECT_EQ(r.rfind("this kernel (6.12.0) refuses bpf_probe_read_kernel()", 0), 0u) << r;
  EXPECT_NE(r.find("(Invalid argument); the verifier log:\n12: (85) call"), std::string::npos) << r;
  // The user-memory reads are not the lockdown's.
  EXPECT_EQ(helper_refusal("program of this type cannot use helper bpf_probe_read_user#112\n", "6.12.0"), "");
}

TEST(KernelHelpers, AnyOtherLogIsNotAboutTheKernelsAge) {
  // A helper the kernel has, not for this kind of program, is another refusal.
  EXPECT_EQ(helper_refusal("unknown func bpf_seq_write#127\n", "6.1.0"), "");
  EXPECT_EQ(helper_refusal("R1 invalid mem access 'scalar'\n", "6.1.0"), "");
  EXPECT_EQ(helper_refusal("invalid func unknown#\n", "6.1.0"), "");
  EXPECT_EQ(verifier_refusal("R1 invalid mem access 'scalar'\n", EACCES, "6.1.0"),
            "the kernel refused the generated program (Permission denied); the verifier log:\n"
            "R1 invalid mem access 'scalar'");
}

}  // namespace
}  // namespace histd::runtime
