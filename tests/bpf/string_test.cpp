// SPDX-License-Identifier: GPL-2.0-only
// String keys and string filters, through the real generated programs.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <regex>
#include <set>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_switch: prev_comm char[16] @8, prev_pid @24, next_comm @40, next_pid @56.
Record switch_record(const std::string& prev, int32_t prev_pid, const std::string& next) {
  Record r(64);
  r.pid(1).set<int32_t>(24, prev_pid);
  for (size_t i = 0; i < prev.size() && i < 15; ++i) r.set<char>(8 + i, prev[i]);
  for (size_t i = 0; i < next.size() && i < 15; ++i) r.set<char>(40 + i, next[i]);
  return r;
}

class StringTest : public EngineTest {
 protected:
  std::string rows(const std::string& sys, const std::string& ev) {
    auto h = read_hist(*engine_, sys, ev);
    EXPECT_TRUE(h.ok());
    if (!h) return "";
    // The entry lines only: between the header's blank line and "\nTotals".
    const size_t begin = h->find("#\n\n") + 3;
    return h->substr(begin, h->find("\nTotals:") - begin);
  }
};

TEST_F(StringTest, CharArrayKeysAndGlobs) {
  add("sched", "sched_switch",
      "hist:keys=prev_comm:vals=hitcount if prev_comm ~ \"b[a-s]sh*\" && next_comm != swapper");
  inject("sched", "sched_switch", switch_record("bash", 1, "x"));
  inject("sched", "sched_switch", switch_record("bash", 2, "x"));
  inject("sched", "sched_switch", switch_record("bush", 3, "x"));      // 'u' is not in [a-s]
  inject("sched", "sched_switch", switch_record("bosh-5.1", 4, "x"));  // matches: b [o] s h *
  inject("sched", "sched_switch", switch_record("bash", 5, "swapper"));
  inject("sched", "sched_switch", switch_record("ba", 6, "x"));
  EXPECT_EQ(rows("sched", "sched_switch"),
            "{ prev_comm: bosh-5.1                                           } hitcount:          1\n"
            "{ prev_comm: bash                                               } hitcount:          2\n");
}

TEST_F(StringTest, GlobShapes) {
  struct Case {
    const char* pattern;
    std::vector<std::string> match, no_match;
  };
  const std::vector<Case> cases = {
      {"*sh", {"bash", "sh", "zsh"}, {"shell", "s"}},
      {"*ash*", {"bash", "ash", "dash-1"}, {"ahs", "as"}},
      {"k*worker*/*", {"kworker/0:1", "kxworkerx/"}, {"kworker", "worker/1"}},
      {"[!a-z]*", {"0abc", "_x"}, {"abc", ""}},
      {"exact", {"exact"}, {"exact1", "exac"}},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(engine_->truncate_triggers("sched", "sched_switch").ok());
    add("sched", "sched_switch", std::string("hist:keys=prev_pid if prev_comm ~ \"") + c.pattern + "\"");
    int32_t pid = 1;
    for (const auto& s : c.match) inject("sched", "sched_switch", switch_record(s, pid++, "x"));
    for (const auto& s : c.no_match) inject("sched", "sched_switch", switch_record(s, 1000 + pid++, "x"));
    const std::string h = *read_hist(*engine_, "sched", "sched_switch");
    EXPECT_NE(h.find("Hits: " + std::to_string(c.match.size()) + "\n"), std::string::npos) << c.pattern << "\n" << h;
  }
}

TEST_F(StringTest, DataLocStringKeyAndEquality) {
  add("sched", "sched_process_exec", "hist:keys=filename:vals=hitcount if filename != \"/bin/true\"");
  inject("sched", "sched_process_exec", exec_record("/usr/bin/env", 10));
  inject("sched", "sched_process_exec", exec_record("/usr/bin/env", 11));
  inject("sched", "sched_process_exec", exec_record("/bin/true", 12));
  inject("sched", "sched_process_exec", exec_record("/bin/sh", 13));
  EXPECT_EQ(rows("sched", "sched_process_exec"),
            "{ filename: /bin/sh                                            } hitcount:          1\n"
            "{ filename: /usr/bin/env                                       } hitcount:          2\n");
}

// A filter's strings are copied into one buffer, which is not cleared
// between them: a char array that fills its field without a NUL, matched
// after a longer string of the same event, is the bytes the kernel compares
// (it stops at the field's end), nothing of the string before it.
// block:block_rq_issue: bytes @28, rwbs char[10] @34, comm char[16] @44,
// cmd data-loc @60.
TEST_F(StringTest, AFullCharArrayIsNotReadPastItsField) {
  add("block", "block_rq_issue", "hist:keys=bytes if comm ~ \"y*\" && rwbs == \"abcdefghij\"");
  Record r(68);
  r.pid(1).set<uint32_t>(28, 7).set<uint32_t>(60, 64u | (1u << 16));
  for (size_t i = 0; i < 10; ++i) r.set<char>(34 + i, static_cast<char>('a' + i));
  for (size_t i = 0; i < 15; ++i) r.set<char>(44 + i, 'y');
  for (int round = 0; round < 3; ++round) inject("block", "block_rq_issue", r);
  EXPECT_EQ(rows("block", "block_rq_issue"), "{ bytes:          7 } hitcount:          3\n");
}

// Globs over data-loc strings of every length a word boundary can split,
// against fnmatch(3) (the kernel's glob_match() for patterns without a
// backslash): a prefix, a suffix or an exact string is matched eight bytes
// at a time, so the lengths around 8, 16 and the buffer's end are where a
// mistake would be. Searches between stars go a place a bpf_loop() round
// over such strings: up to twenty-one in one pattern, to the buffer's end.
TEST_F(StringTest, GlobsAgreeWithFnmatchAcrossWordBoundaries) {
  const std::string long_tail = std::string(240, 'x') + "abcdefghijk";  // 251 bytes
  const std::vector<std::string> strings = {"",
                                            "a",
                                            "abcdefg",
                                            "abcdefgh",
                                            "abcdefghi",
                                            "abcdefghijklmnop",
                                            "abcdefghijklmnopq",
                                            "/usr/bin/env",
                                            "/bin/true",
                                            "xabcdefghijkabcdefghijk",
                                            "abcdefghabcdefgh",
                                            "libc.so",
                                            "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                            long_tail,
                                            std::string(255, 'y'),
                                            std::string(247, 'y') + "abcdefgh",
                                            "a/b/c",
                                            "abc"};
  const std::vector<std::string> patterns = {"",
                                             "a",
                                             "abcdefgh",
                                             "abcdefghi",
                                             "abcdefghijklmnopq",
                                             "abcdefgh*",
                                             "abcdefghij*",
                                             "/usr/bin/*",
                                             "*.so",
                                             "*abcdefghijk",
                                             "*/env",
                                             "*bin*",
                                             "*abcdefghi*",
                                             "/u*/b*n/e*v",
                                             "a*b*c",
                                             "*[0-9]*6",
                                             "?bc*",
                                             "*abcdefgh",
                                             "abcdefgh*abcdefgh",
                                             "*y*abcdefgh",
                                             "x*k",
                                             "*" + std::string(20, 'x') + "abc*",
                                             "*ab*cd*ef*",
                                             "*a*b*c*d*e*f*g*h*",
                                             "*x*b*c*d*e*f*g*h*i*j*k",
                                             "/u*/*/lib*/*.so*",
                                             "*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*a*",
                                             "*[a-c]?*[d-f]*[g-i]*?*[j-k]*"};
  for (const std::string& pattern : patterns) {
    ASSERT_TRUE(engine_->truncate_triggers("sched", "sched_process_exec").ok());
    add("sched", "sched_process_exec", "hist:keys=pid if filename ~ \"" + pattern + "\"");
    std::set<int32_t> expected, seen;
    for (size_t i = 0; i < strings.size(); ++i) {
      const int32_t pid = static_cast<int32_t>(100 + i);
      inject("sched", "sched_process_exec", exec_record(strings[i], pid));
      if (fnmatch(pattern.c_str(), strings[i].c_str(), 0) == 0) expected.insert(pid);
    }
    const std::string r = rows("sched", "sched_process_exec");
    const std::regex pid_key(R"(\{ pid: +(\d+) \})");
    for (std::sregex_iterator it(r.begin(), r.end(), pid_key), e; it != e; ++it) seen.insert(std::stoi((*it)[1]));
    EXPECT_EQ(seen, expected) << "pattern \"" << pattern << "\" (pid 100 + the string's place)";
  }
}

// Searches between stars over a char array stop at the field's end (the
// verifier walks 16 places of a comm, not the buffer's 256): against
// fnmatch(3) at every length up to a field filled without a NUL, with
// patterns of up to eight searched segments, two such in one filter.
TEST_F(StringTest, CharArrayGlobsAgreeWithFnmatchUpToTheFieldsEnd) {
  const std::vector<std::string> strings = {"",
                                            "a",
                                            "ab",
                                            "ba",
                                            "xaxbx",
                                            "abcdefgh",
                                            "abcdefghijklmno",
                                            "abcdefghijklmnop",
                                            "ponmlkjihgfedcba",
                                            "aaaaaaaaaaaaaaab",
                                            "bbbbbbbbbbbbbbba",
                                            "abxcdxefxghxijxk"};
  const std::vector<std::string> patterns = {"*a*b*",
                                             "*ab*",
                                             "*op*",
                                             "*p*",
                                             "*o*p",
                                             "a*b*c*",
                                             "*b*a",
                                             "*[m-p]*",
                                             "*a*b*c*d*e*f*g*h*",
                                             "*ab*cd*ef*gh*ij*kl*mn*op*",
                                             "*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*",
                                             "*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*"};
  for (const std::string& pattern : patterns) {
    ASSERT_TRUE(engine_->truncate_triggers("sched", "sched_switch").ok());
    add("sched", "sched_switch",
        "hist:keys=prev_pid if prev_comm ~ \"" + pattern + "\" || next_comm ~ \"" + pattern + "\"");
    std::set<int32_t> expected, seen;
    for (size_t i = 0; i < strings.size(); ++i) {
      const int32_t pid = static_cast<int32_t>(100 + i);
      Record r(64);
      r.pid(1).set<int32_t>(24, pid);
      for (size_t k = 0; k < strings[i].size(); ++k) r.set<char>(8 + k, strings[i][k]);
      inject("sched", "sched_switch", r);
      if (fnmatch(pattern.c_str(), strings[i].c_str(), 0) == 0) expected.insert(pid);
    }
    const std::string r = rows("sched", "sched_switch");
    const std::regex pid_key(R"(\{ prev_pid: +(\d+) \})");
    for (std::sregex_iterator it(r.begin(), r.end(), pid_key), e; it != e; ++it) seen.insert(std::stoi((*it)[1]));
    EXPECT_EQ(seen, expected) << "pattern \"" << pattern << "\" (pid 100 + the string's place)";
  }
}

}  // namespace
}  // namespace histd::testing
