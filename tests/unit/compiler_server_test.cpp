// SPDX-License-Identifier: GPL-2.0-only
// The resident compiler (histd-cc): programs as small as clang's (its own
// short optimization pipeline, daemon/histd-cc/optimize.h) and the same
// diagnostics as clang; a lost server costs one compile by clang, never a
// failure; and the object cache tells the compilers apart. No root needed.
#include <gtest/gtest.h>

#include <bpf/libbpf.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "compiler_support.h"
#include "histd/codegen.h"
#include "histd/runtime.h"

namespace histd::runtime {
namespace {

namespace fs = std::filesystem;

const char* const kCommands[] = {
    "hist:keys=fd:vals=count if count > 10 && __syscall_nr != -1",
    "hist:keys=count.log2,comm:vals=hitcount",
    "hist:keys=common_pid,cpu,fd.hex:vals=count.hex,buf:sort=count.descending,fd",
};

// A unit with a C error (generated code never has one: that is a histd bug).
const std::string kBroken = "#include <linux/bpf.h>\nint f(void) { return undeclared_x + 1; }\n";
// A unit the BPF backend refuses, its stack over 512 bytes (generated code
// never is: its big buffers are per-CPU maps).
const std::string kTooMuchStack =
    "#include <linux/bpf.h>\n"
    "__attribute__((section(\"tracepoint\"), used)) int f(void *ctx) {\n"
    "  volatile char buf[1024];\n"
    "  buf[0] = 1;\n"
    "  return buf[*(volatile int *)ctx & 1023];\n"
    "}\n";

// Every program's instructions, by name, as libbpf reads them (no load).
std::map<std::string, std::string> programs(const std::string& object) {
  std::map<std::string, std::string> out;
  bpf_object* obj = bpf_object__open_mem(object.data(), object.size(), nullptr);
  EXPECT_TRUE(obj != nullptr);
  if (!obj) return out;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    out[bpf_program__name(prog)] = std::string(reinterpret_cast<const char*>(bpf_program__insns(prog)),
                                               bpf_program__insn_cnt(prog) * sizeof(bpf_insn));
  }
  bpf_object__close(obj);
  return out;
}

class CompilerServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(paths_with().cc_server.empty()) << "histd-cc not found next to the test or in the build tree";
  }
};

// `cmd`'s unit compiled by `server` has the programs clang makes of it, and
// none is longer than clang's by more than 2% (what each event would pay;
// that they load and count, every test under tests/bpf and tests/e2e says,
// all compiled by histd-cc).
void expect_clangs_programs(const Compiler& server, const char* cmd) {
  const Compiler clang(paths_with(fs::path()), {});
  auto a = server.compile(unit(cmd));
  auto b = clang.compile(unit(cmd));
  ASSERT_TRUE(a.ok()) << cmd << "\n" << a.error().context;
  ASSERT_TRUE(b.ok()) << cmd << "\n" << b.error().context;
  const auto ours = programs(*a);
  const auto theirs = programs(*b);
  EXPECT_FALSE(ours.empty());
  ASSERT_EQ(ours.size(), theirs.size()) << cmd;
  for (const auto& [name, insns] : theirs) {
    ASSERT_EQ(ours.count(name), 1u) << cmd << ": no program " << name;
    EXPECT_LE(ours.at(name).size(), insns.size() + insns.size() / 50) << cmd << ": " << name;
  }
}

TEST_F(CompilerServer, MakesTheProgramsClangMakes) {
  Compiler server(paths_with(), {});
  server.start_server();
  for (const char* cmd : kCommands) expect_clangs_programs(server, cmd);
  EXPECT_EQ(server.stats().by_server, 3u);
}

// A string filter's predicate is a function of its own, with loops: the
// short pipeline rotates them as -O2 does (the verifier needs that, see
// StringTest.GlobShapes) and keeps the entry as small.
TEST_F(CompilerServer, MakesTheProgramsClangMakesOfAStringFilter) {
  Compiler server(paths_with(), {});
  server.start_server();
  expect_clangs_programs(server, "hist:keys=fd:vals=count if common_comm ~ \"k*worker*/*\"");
  EXPECT_EQ(server.stats().by_server, 1u);
}

// The BPF backend's own refusal is an answer, worded as clang's first line
// of it (LLVM would otherwise print it and end the server), and the server
// stays.
TEST_F(CompilerServer, ReturnsTheBackendsRefusal) {
  Compiler server(paths_with(), {});
  server.start_server();
  auto a = server.compile(kTooMuchStack);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::Compile);
  EXPECT_NE(a.error().context.find("\nunit.c:4:10: error: Looks like the BPF stack limit of 512 bytes is exceeded."),
            std::string::npos)
      << a.error().context;
  EXPECT_EQ(server.stats().by_server, 1u);
  EXPECT_NE(server.server_pid(), 0);
  EXPECT_TRUE(server.compile(unit(kCommands[0])).ok());
  EXPECT_EQ(server.stats().by_server, 2u);
}

TEST_F(CompilerServer, ReturnsClangsDiagnostics) {
  Compiler server(paths_with(), {});
  server.start_server();
  Compiler clang(paths_with(fs::path()), {});
  auto a = server.compile(kBroken);
  auto b = clang.compile(kBroken);
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::Compile);
  const std::string head = paths_with().clang + " failed on the generated unit (";
  EXPECT_EQ(a.error().context.rfind(head + "in histd-cc; a histd bug, or a broken compiler):\nunit.c:2:22: error: ", 0),
            0u)
      << a.error().context;
  EXPECT_EQ(b.error().context.rfind(head + "exit status 1; a histd bug, or a broken compiler):\n", 0), 0u)
      << b.error().context;
  // After the first line, clang's diagnostics: it names its temporary file;
  // the text is otherwise the same.
  auto body = [](const std::string& text) { return text.substr(text.find('\n') + 1); };
  EXPECT_EQ(body(a.error().context),
            std::regex_replace(body(b.error().context), std::regex("/tmp/histd-cc-[^/]+/"), ""));
  EXPECT_EQ(server.stats().by_server, 1u);
  // An error is an answer: the server stays.
  EXPECT_NE(server.server_pid(), 0);
  EXPECT_TRUE(server.compile(unit(kCommands[0])).ok());
  EXPECT_EQ(server.stats().by_server, 2u);
}

// histd-cc precompiles the include lines units open with, after the first
// unit it compiles (daemon/histd-cc/prelude.h). A header changed on disk
// since (a package upgrade while histd runs) is read as it is now: clang
// refuses the stale precompiled header (its size or time differ), histd-cc
// compiles the unit as sent and builds the prelude again after it.
TEST_F(CompilerServer, HeaderChangedUnderThePreludeIsReadAsItIsNow) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  BpfPaths paths = paths_with();
  fs::copy(paths.include_dir, dir.path(), fs::copy_options::recursive);
  paths.include_dir = dir.path();
  const fs::path helpers = dir.path() / "hist_helpers.bpf.h";
  std::string original;
  {
    std::ifstream in(helpers);
    original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  Compiler c(paths, {});
  c.start_server();
  for (const char* cmd : kCommands) ASSERT_TRUE(c.compile(unit(cmd)).ok()) << cmd;
  int n = 0;
  auto expects_mark = [&](const std::string& mark) {
    return unit(kCommands[0]) + fmt::format("_Static_assert(HISTD_TEST_MARK == {}, \"mark\"); /* {} */\n", mark, ++n);
  };
  for (const std::string mark : {"1", "22"}) {
    std::ofstream(helpers, std::ios::trunc) << original << "#define HISTD_TEST_MARK " << mark << "\n";
    // The first compile after the change finds the prelude stale; the
    // second reads the one built again.
    for (int i = 0; i < 2; ++i) {
      auto obj = c.compile(expects_mark(mark));
      ASSERT_TRUE(obj.ok()) << "mark " << mark << ", compile " << i << ":\n" << obj.error().context;
    }
  }
  auto stale = c.compile(expects_mark("1"));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().context.find("static_assert failed due to requirement '22 == 1'"), std::string::npos)
      << stale.error().context;
  EXPECT_EQ(c.stats().by_clang, 0u);
}

// A server started with the prelude (as histd starts it) compiles a
// unit of those lines first; that answer is nobody's, and each compile
// gets its own unit's object, also after the server was replaced.
TEST_F(CompilerServer, APrimedServerAnswersEachUnitWithItsOwnObject) {
  Compiler server(paths_with(), {});
  server.set_prelude(codegen::kUnitPrelude);
  server.start_server();
  for (const char* cmd : kCommands) {
    expect_clangs_programs(server, cmd);
    if (cmd == kCommands[0]) {
      ASSERT_EQ(kill(server.server_pid(), SIGKILL), 0);
    }
  }
  // Killed after the first unit: clang compiled the second, a new server
  // (primed as it started) the third.
  EXPECT_EQ(server.stats().by_clang, 1u);
  EXPECT_EQ(server.stats().by_server, 2u);
  EXPECT_EQ(server.stats().server_starts, 2u);
}

TEST_F(CompilerServer, KilledServerIsReplaced) {
  Compiler c(paths_with(), {});
  c.start_server();
  ASSERT_TRUE(c.compile(unit(kCommands[0])).ok());
  const pid_t first = c.server_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  // The unit the dead server cannot answer is compiled by clang...
  auto obj = c.compile(unit(kCommands[1]));
  ASSERT_TRUE(obj.ok()) << obj.error().context;
  EXPECT_EQ(c.stats().by_clang, 1u);
  // ...and a new server answers the next one.
  EXPECT_NE(c.server_pid(), 0);
  EXPECT_NE(c.server_pid(), first);
  ASSERT_TRUE(c.compile(unit(kCommands[2])).ok());
  EXPECT_EQ(c.stats().by_server, 2u);
  EXPECT_EQ(c.stats().server_starts, 2u);
}

TEST_F(CompilerServer, MissingServerMeansClang) {
  Compiler c(paths_with(fs::path("/nonexistent/histd-cc")), {});
  c.start_server();
  for (const char* cmd : kCommands) {
    auto obj = c.compile(unit(cmd));
    ASSERT_TRUE(obj.ok()) << obj.error().context;
  }
  auto bad = c.compile(kBroken);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().context.find(" failed on the generated unit (exit status 1; a histd bug, or a broken "
                                     "compiler):\n/tmp/histd-cc-"),
            std::string::npos)
      << bad.error().context;
  EXPECT_EQ(c.stats().by_clang, 4u);
  EXPECT_EQ(c.stats().by_server, 0u);
  EXPECT_EQ(c.server_pid(), 0);
  EXPECT_TRUE(c.stats().given_up);
}

TEST_F(CompilerServer, NoServerIsNoResident) {
  Compiler c(paths_with(fs::path()), {});
  c.start_server();
  ASSERT_TRUE(c.compile(unit(kCommands[0])).ok());
  const Compiler::Stats s = c.stats();
  EXPECT_FALSE(s.resident);
  EXPECT_FALSE(s.given_up);
  EXPECT_EQ(s.server_pid, 0);
  EXPECT_EQ(s.by_clang, 1u);
}

TEST_F(CompilerServer, CacheKeyChangesWithTheCompiler) {
  char dir_template[] = "/tmp/histd-cc-test-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir_template));
  const fs::path dir = dir_template;
  auto objects = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir / "cache")) n += e.path().extension() == ".o";
    return n;
  };
  const std::string src = unit(kCommands[0]);
  {
    Compiler c(paths_with(), dir / "cache");
    ASSERT_TRUE(c.compile(src).ok());
    ASSERT_TRUE(c.compile(src).ok());  // a hit
    EXPECT_EQ(c.stats().by_clang + c.stats().by_server, 1u);
  }
  EXPECT_EQ(objects(), 1u);
  // Another histd-cc (here: a copy elsewhere) is another compiler.
  fs::copy_file(paths_with().cc_server, dir / "histd-cc");
  {
    Compiler c(paths_with(dir / "histd-cc"), dir / "cache");
    c.start_server();
    ASSERT_TRUE(c.compile(src).ok());
    EXPECT_EQ(c.stats().by_server, 1u);
  }
  EXPECT_EQ(objects(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace histd::runtime
