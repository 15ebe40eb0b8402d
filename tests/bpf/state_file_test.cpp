// SPDX-License-Identifier: GPL-2.0-only
// The state file is never read through a symlink: root
// would restore (and later replace) whatever file the link names. A link
// there is set aside like an unreadable state file, its target untouched.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(StateFile, SymlinkIsNotFollowed) {
  HISTD_REQUIRE_BPF();
  char tmpl[] = "/tmp/histd-state-test-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const fs::path dir = tmpl;
  // Someone's file, shaped as a state file with one trigger.
  const std::string theirs =
      R"({"version": 1, "triggers": [{"event": "syscalls:sys_enter_write", "command": "hist:keys=fd"}]})";
  std::ofstream(dir / "theirs.json") << theirs;
  fs::create_symlink(dir / "theirs.json", dir / "triggers.json");
  engine::EngineOptions opt;
  opt.state_file = dir / "triggers.json";
  {
    auto eng = fixture_engine(opt);
    ASSERT_TRUE(eng);
    const std::vector<std::string> problems = eng->restorer().restore();
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("a symbolic link (not followed)"), std::string::npos) << problems[0];
    EXPECT_TRUE(list_triggers(*eng).empty()) << "the trigger was restored through the link";
    // Set aside as it is (a link), and a file of histd's own saved instead.
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir / "triggers.json")));
    size_t aside = 0;
    for (const auto& e : fs::directory_iterator(dir))
      aside += e.path().filename().string().starts_with("triggers.json.corrupt-") && fs::is_symlink(e.symlink_status());
    EXPECT_EQ(aside, 1u);
    ASSERT_TRUE(eng->write_trigger("syscalls", "sys_enter_write", "hist:keys=count").ok());
  }
  EXPECT_EQ(slurp(dir / "theirs.json"), theirs);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace histd::testing
