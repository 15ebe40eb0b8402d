// SPDX-License-Identifier: GPL-2.0-only
// runtime::verifier_refusal(): what histd says when the kernel refuses a
// generated program, from the verifier's log. No root needed.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "histd/runtime.h"

namespace histd::runtime {
namespace {

TEST(VerifierRefusal, AProgramTooComplexToCheckIsSaidSoFirst) {
  const std::string too_large =
      "func 'sched_switch' arg2 has btf_id 114 type STRUCT 'task_struct'\n"
      "BPF program is too large. Processed 1000001 insn\n"
      "processed 1000001 insns (limit 1000000) max_states_per_insn 107 total_states 13427\n";
  EXPECT_EQ(verifier_refusal(too_large, E2BIG, "6.1.0-9-amd64"),
            "the kernel's verifier gave up on the generated program as too complex (Argument list too long): "
            "fewer segments between a glob's stars, or fewer string filters on the event, would fit; the "
            "verifier log:\n" +
                too_large.substr(0, too_large.size() - 1));
  for (const char* words : {"The sequence of 8193 jumps is too complex.\n", "too many states visited\n"})
    EXPECT_EQ(verifier_refusal(words, EFAULT, "6.1.0-9-amd64")
                  .rfind("the kernel's verifier gave up on the generated program", 0),
              0u)
        << words;
}

TEST(VerifierRefusal, AnyOtherRefusalQuotesTheLogsEnd) {
  EXPECT_EQ(verifier_refusal("0: (79) r1 = *(u64 *)(r1 +0)\nR1 invalid mem access 'scalar'\n", EACCES, "6.1.0-9-amd64"),
            "the kernel refused the generated program (Permission denied); the verifier log:\n"
            "0: (79) r1 = *(u64 *)(r1 +0)\nR1 invalid mem access 'scalar'");
  // A long log: its end, from a line's start, after how much was left out.
  const std::string log = std::string(10000, 'x') + "\nthe reason\n";
  const std::string r = verifier_refusal(log, EINVAL, "6.1.0-9-amd64");
  EXPECT_NE(r.find("earlier bytes of the log left out)\n"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.size() - 11), "\nthe reason");
  EXPECT_LT(r.size(), 5000u);
}

}  // namespace
}  // namespace histd::runtime
