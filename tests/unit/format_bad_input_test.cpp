// SPDX-License-Identifier: GPL-2.0-only
// catalog::parse_format on what no kernel writes: every malformed format
// file is an error that names the line and what is wrong, and mutated real
// files give a value or an error, never a crash.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "histd/catalog.h"

namespace histd::catalog {
namespace {

struct BadInput {
  const char* what;
  std::string text;
  const char* context_part;  // must appear in the error context
};

constexpr const char* kHead = "name: e\nID: 1\nformat:\n";
constexpr const char* kCommon = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
constexpr const char* kTail = "\nprint fmt: \"\"\n";

std::string with_field(const std::string& line) { return std::string(kHead) + kCommon + line + "\n" + kTail; }

TEST(FormatParser, RejectsMalformedInput) {
  const std::vector<BadInput> cases = {
      {"empty", "", "line 0: missing 'format:'"},
      {"no format line", "name: e\nID: 1\n", "missing 'format:'"},
      {"format before id", "name: e\nformat:\n", "line 2: 'format:' before name and ID"},
      {"bad id", "name: e\nID: x1\nformat:\n", "line 2: bad ID 'x1'"},
      {"negative id", "name: e\nID: -1\nformat:\n", "line 2: bad ID"},
      {"empty name", "name:\nID: 1\nformat:\n", "line 1: empty event name"},
      {"duplicate name", "name: a\nname: b\n", "line 2: duplicate name"},
      {"garbage header", "hello\n", "line 1: expected 'name:'"},
      {"no fields", std::string(kHead) + kTail, "no fields"},
      {"no print fmt", std::string(kHead) + kCommon, "missing 'print fmt:'"},
      {"garbage in fields", std::string(kHead) + "oops\n", "line 4: expected 'field:'"},
      {"no semicolon", with_field("\tfield:int x\toffset:8"), "line 5: missing ';'"},
      {"missing offset", with_field("\tfield:int x;\tsize:4;"), "line 5: missing offset"},
      {"missing size", with_field("\tfield:int x;\toffset:8;"), "line 5: missing size"},
      {"size not a number", with_field("\tfield:int x;\toffset:8;\tsize:four;"), "line 5: bad size value 'four'"},
      {"hex offset", with_field("\tfield:int x;\toffset:0x8;\tsize:4;"), "bad offset"},
      {"signed 2", with_field("\tfield:int x;\toffset:8;\tsize:4;\tsigned:2;"), "bad signed"},
      {"huge size", with_field("\tfield:int x;\toffset:8;\tsize:99999999999;"), "bad size"},
      {"overflow", with_field("\tfield:int x;\toffset:4294967295;\tsize:4;"), "overflows"},
      {"no key", with_field("\tfield:int x;\t8;\tsize:4;"), "expected key:value"},
      {"no name", with_field("\tfield:int;\toffset:8;\tsize:4;"), "line 5: cannot split"},
      {"no type", with_field("\tfield:x;\toffset:8;\tsize:4;"), "cannot split"},
      {"empty decl", with_field("\tfield:;\toffset:8;\tsize:4;"), "empty field declaration"},
      {"name starts with digit", with_field("\tfield:int 9x;\toffset:8;\tsize:4;"), "cannot split"},
      {"unbalanced bracket", with_field("\tfield:char x];\toffset:8;\tsize:4;"), "unbalanced"},
      {"bracket in type", with_field("\tfield:char[4] x;\toffset:8;\tsize:4;"), "unexpected '['"},
      {"data_loc wrong size", with_field("\tfield:__data_loc char[] s;\toffset:8;\tsize:8;"), "must have size 4"},
      {"data_loc no name", with_field("\tfield:__data_loc char[];\toffset:8;\tsize:4;"), "cannot split"},
      {"duplicate field", with_field("\tfield:int x;\toffset:8;\tsize:4;\n\tfield:int x;\toffset:12;\tsize:4;"),
       "line 6: duplicate field 'x'"},
  };
  for (const BadInput& c : cases) {
    auto r = parse_format(c.text, "s");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.error().kind, ErrorKind::Invalid) << c.what;
    EXPECT_EQ(r.error().err, EINVAL) << c.what;
    EXPECT_NE(r.error().context.find(c.context_part), std::string::npos) << c.what << ": " << r.error().context;
    EXPECT_TRUE(r.error().context.starts_with("format line ")) << c.what;
  }
}

// Cheap deterministic fuzzing: truncations and byte flips of real files must
// give a value or an error, never a crash (run under ASan to see more).
TEST(FormatParser, SurvivesMutatedInput) {
  std::mt19937 rng(12345);
  const char alphabet[] = "\t\n ;:[]_acdefilmnorstz019*";
  for (const char* ev : {"kmem/kmalloc", "sched/sched_switch", "ftrace/print"}) {
    const std::string path(ev);
    const std::string original =
        testing::fixture_format(path.substr(0, path.find('/')), path.substr(path.find('/') + 1))->text;
    for (size_t cut = 0; cut < original.size(); cut += 7) {
      auto r = parse_format(std::string_view(original).substr(0, cut), "s");
      if (r.ok()) {
        EXPECT_LE(r->record_size(), 1u << 16);
      }
    }
    for (int round = 0; round < 2000; ++round) {
      std::string text = original;
      for (int flips = 0; flips < 4; ++flips) {
        size_t at = rng() % text.size();
        text[at] = alphabet[rng() % (sizeof alphabet - 1)];
      }
      auto r = parse_format(text, "s");
      (void)r.ok();
    }
  }
}

}  // namespace
}  // namespace histd::catalog
