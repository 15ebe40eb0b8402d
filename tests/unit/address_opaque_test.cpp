// SPDX-License-Identifier: GPL-2.0-only
// Writers who may not see kernel addresses (kptr_restrict): what they may
// not write, where the caret points and which errno they get, and what
// they still may (keys and plain values, which render hidden to them).
#include <gtest/gtest.h>

#include <string>

#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/registry.h"
#include "registry_support.h"

namespace histd {
namespace {

using registry::Registry;
using namespace testing;

// A write as a writer who may not see kernel addresses.
registry::Command opaque(const catalog::EventId& event, std::string_view text) {
  registry::Command c = write(event, text);
  std::get<registry::TriggerWrite>(c).may_see_addresses = false;
  return c;
}

// The refusal's code, errno and the text under its caret, checking that
// the registry is unchanged.
std::string refusal(const Registry& r, const registry::Command& command) {
  const Registry before = r;
  auto applied = r.apply(command);
  EXPECT_EQ(r, before);
  if (applied) return "applied";
  const registry::Refusal& no = applied.error();
  if (!no.diagnostic) return "error " + no.error.context;
  const Diagnostic& d = *no.diagnostic;
  return std::string(error_name(d.code)) + " " + std::to_string(no.error.err) + " '" +
         d.command.substr(d.span.begin, d.span.end - d.span.begin) + "'";
}

const std::string kHidden = "AddressHidden " + std::to_string(EPERM);

TEST(AddressOpaque, FieldsTheKernelPrintsAsAddresses) {
  auto kmalloc = fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  EXPECT_TRUE(kmalloc->find("call_site")->kernel_address);  // unsigned long, printed %pS
  EXPECT_TRUE(kmalloc->find("ptr")->kernel_address);        // a pointer
  EXPECT_FALSE(kmalloc->find("bytes_req")->kernel_address);
  EXPECT_FALSE(kmalloc->find("gfp_flags")->kernel_address);  // unsigned long, printed as flags
  auto write_enter = fixture_format("syscalls", "sys_enter_write");
  ASSERT_TRUE(write_enter);
  EXPECT_FALSE(write_enter->find("buf")->kernel_address);  // the writer's own buffer
}

TEST(AddressOpaque, CompareOrderComputeOrCopyIsRefusedAtTheField) {
  Registry r(fixtures(), {});
  ok(r, synth_line("leakev unsigned long a"));
  const std::pair<const char*, const char*> refused[] = {
      // A filter would bisect the address by which events count.
      {"hist:keys=common_pid if call_site < 0xffffffff81000000", "'call_site'"},
      {"hist:keys=common_pid if bytes_req > 8 && ptr == 0", "'ptr'"},
      // .buckets bounds say where the addresses lie.
      {"hist:keys=call_site.buckets=4096", "'buckets=4096'"},
      // A share of a sum of addresses is not hidden as the sum is.
      {"hist:keys=common_pid:vals=call_site.percent", "'percent'"},
      {"hist:keys=common_pid:vals=ptr.graph", "'graph'"},
      // A variable copies it; an expression computes with it.
      {"hist:keys=common_pid:a=call_site", "'call_site'"},
      {"hist:keys=common_pid:a=bytes_req+ptr", "'ptr'"},
      {"hist:keys=common_pid:vals=$d:d=bytes_req-call_site", "'call_site'"},
      // onmax/onchange would save it; an action would copy it out.
      {"hist:keys=common_pid:m=bytes_req:onmax($m).save(call_site)", "'call_site'"},
      {"hist:keys=common_pid:onchange(call_site).trace(leakev,call_site)", "'call_site'"},
      {"hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,call_site)", "'call_site'"},
      // A control trigger's filter bisects as well.
      {"traceon if call_site > 0xffffffff81000000", "'call_site'"},
      {"enable_event:kmem:kmalloc if ptr != 0", "'ptr'"},
  };
  for (const auto& [text, caret] : refused) {
    const std::string got = refusal(r, opaque(kKmalloc, text));
    if (std::string(text).find("onchange(call_site)") != std::string::npos) {
      // onchange() takes a variable: refused before anything else.
      EXPECT_EQ(got.substr(0, got.find(' ')), "OnxNotVar") << text;
      continue;
    }
    EXPECT_EQ(got, kHidden + " " + caret) << text;
    // Root, or a reader kptr_restrict lets see addresses, may.
    EXPECT_EQ(refusal(r, write(kKmalloc, text)), "applied") << text;
  }
}

TEST(AddressOpaque, KeysPlainValuesAndRemovalsStayAllowed) {
  Registry r(fixtures(), {});
  for (const char* text :
       {"hist:keys=call_site", "hist:keys=call_site.sym", "hist:keys=ptr.hex",
        "hist:keys=call_site.sym-offset:vals=bytes_req:sort=call_site", "hist:keys=common_pid:vals=call_site",
        "hist:keys=common_pid:vals=ptr.hex", "hist:keys=call_site.log2", "hist:keys=common_stacktrace",
        "hist:keys=common_pid:b=bytes_req if bytes_req > 100"})
    ok(r, opaque(kKmalloc, text));
  // A trigger root made may be removed by a writer who could not make it.
  ok(r, write(kKmalloc, "hist:keys=call_site.buckets=4096"));
  ok(r, opaque(kKmalloc, "!hist:keys=call_site.buckets=4096"));
  ok(r, write(kKmalloc, "traceon if call_site > 0"));
  ok(r, opaque(kKmalloc, "!traceon if call_site > 0"));
  EXPECT_EQ(r.triggers(kKmalloc)->controls.size(), 0u);
}

TEST(AddressOpaque, AVariableOrFieldVariableThatHoldsAnAddressIsOneToo) {
  Registry r(fixtures(), {});
  ok(r, synth_line("leakev unsigned long a"));
  // Root keeps an address in a variable; another writer may not read it.
  ok(r, write(kKmalloc, "hist:keys=common_pid:site=call_site"));
  EXPECT_EQ(refusal(r, opaque(kWaking, "hist:keys=common_pid:x=$site")), kHidden + " '$site'");
  EXPECT_EQ(refusal(r, opaque(kWaking, "hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,$site)")),
            kHidden + " '$site'");
  // A field of the matching event is carried by a variable the command
  // would make there: refused at the parameter, nothing made.
  EXPECT_EQ(refusal(r, opaque(kWaking, "hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,kmem.kmalloc.ptr)")),
            kHidden + " 'kmem.kmalloc.ptr'");
  EXPECT_EQ(refusal(r, write(kWaking, "hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,kmem.kmalloc.ptr)")),
            "applied");
}

// A synthetic event's unsigned long fields are its addresses: readers who
// may not see them see them hidden, and a writer who may not may not
// compare them. An address goes into no other field, whoever writes.
TEST(AddressOpaque, OnlyAnUnsignedLongSyntheticFieldCarriesAnAddress) {
  Registry r(fixtures(), {});
  ok(r, synth_line("leakev u64 a; unsigned long b"));
  ok(r, write(kKmalloc, "hist:keys=common_pid:s=call_site"));
  EXPECT_EQ(refusal(r, write(kKmalloc, "hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,$s,$s)")),
            "SynthTypeMismatch " + std::to_string(EINVAL) + " '$s'");
  ok(r, write(kKmalloc, "hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,bytes_req,$s)"));
  const catalog::EventId leakev{"synthetic", "leakev"};
  auto formats = r.format(leakev);
  ASSERT_TRUE(formats.ok());
  EXPECT_FALSE((*formats)->find("a")->kernel_address);
  EXPECT_TRUE((*formats)->find("b")->kernel_address);
  EXPECT_EQ(refusal(r, opaque(leakev, "hist:keys=common_pid if b > 0xffffffff81000000")), kHidden + " 'b'");
  ok(r, opaque(leakev, "hist:keys=b:vals=a if a > 10"));
}

}  // namespace
}  // namespace histd
