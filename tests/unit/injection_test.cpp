// SPDX-License-Identifier: GPL-2.0-only
// Hostile text in every place a command can carry text: each command is
// either refused or compiles to a unit that contains none of it (generated
// C is compiled by a root-run clang: ARCHITECTURE decision 4).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/pipeline.h"
#include "test_support.h"

namespace histd::testing {
namespace {

const std::vector<std::string> kPayloads = {
    "*/ int evil; /*",
    "\"); bpf_override_return(ctx, 0); //",
    "\n#include </etc/shadow>\n",
    "__attribute__((constructor)) void p(void) {}",
    "$(reboot)",
    "`id`",
    "%s%n%x",
    "../../../../etc/passwd",
    "\\x00\\\"\\n",
    "evil_identifier_qq",
    std::string(300, 'A'),
};

// Every place text can stand, with the payload at @.
const std::vector<std::string> kTemplates = {
    "hist:keys=comm if comm == \"@\"",
    "hist:keys=comm if comm ~ \"@*\"",
    "hist:keys=comm if comm != @",
    "hist:name=@:keys=fd",
    "hist:keys=@",
    "hist:keys=fd:vals=@",
    "hist:keys=fd:sort=@",
    "hist:keys=fd:@=count",
    "hist:keys=fd:x=count+@",
    "hist:keys=fd:x=$@",
    "hist:keys=fd:x=count:onmax($x).save(@)",
    "hist:keys=fd:x=count:onmatch(@.b).c($x)",
    "hist:keys=fd:x=count:onmatch(syscalls.sys_enter_write).@($x)",
    "hist:keys=fd.@",
    "hist:keys=fd:clock=@",
};

TEST(Injection, HostileTextNeverReachesTheGeneratedSource) {
  size_t compiled = 0, refused = 0;
  for (const std::string& t : kTemplates)
    for (const std::string& payload : kPayloads) {
      std::string cmd = t;
      cmd.replace(cmd.find('@'), 1, payload);
      auto r = pipeline::compile(cmd, sys_enter_write());
      if (!r) {
        ++refused;
        continue;
      }
      ++compiled;
      EXPECT_EQ(r->unit.source.find(payload), std::string::npos) << cmd;
      // no fragment either: the payload's longer words
      for (const char* word : {"evil", "bpf_override_return", "shadow", "constructor", "reboot", "passwd"}) {
        if (payload.find(word) == std::string::npos) continue;
        EXPECT_EQ(r->unit.source.find(word), std::string::npos) << cmd << " leaks " << word;
      }
    }
  // string filters take any text: some of these must have compiled
  EXPECT_GT(compiled, 10u);
  EXPECT_GT(refused, 10u);
}

}  // namespace
}  // namespace histd::testing
