// SPDX-License-Identifier: GPL-2.0-only
#include "histd/symbols.h"

#include <gtest/gtest.h>

namespace histd::symbols {
namespace {

constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81001000 t do_one_initcall\n"
    "ffffffff81001200 D some_data\n"
    "ffffffff81001400 T __kmalloc\n"
    "ffffffffa0001000 t hidraw_send_report\t[hid]\n"
    "ffffffffa0001200 t hidraw_report_event\t[hid]\n";

TEST(Symbols, LooksUpTheEnclosingTextSymbol) {
  KernelSymbols ks = KernelSymbols::parse(kKallsyms);
  EXPECT_EQ(ks.size(), 6u);  // the data symbol is left out
  EXPECT_EQ(format_symbol(ks.lookup(0xffffffff81001010), false), "do_one_initcall");
  EXPECT_EQ(format_symbol(ks.lookup(0xffffffff81001010), true), "do_one_initcall+0x10/0x400");
  EXPECT_EQ(format_symbol(ks.lookup(0xffffffff81000004), true), "_stext+0x4/0x1000");
  EXPECT_EQ(format_symbol(ks.lookup(0xffffffffa00010fe), false), "hidraw_send_report [hid]");
  EXPECT_EQ(format_symbol(ks.lookup(0xffffffffa00010fe), true), "hidraw_send_report+0xfe/0x200 [hid]");
  EXPECT_EQ(format_symbol(ks.lookup(0x1000), false), "");
}

TEST(Symbols, TracingFramesAreBpfProgramsAndTheRawTracepointLoop) {
  const KernelSymbols k = KernelSymbols::parse(
      "ffffffff81100000 T bpf_trace_run2\n"
      "ffffffff81100200 t __bpf_trace_sys_enter\n"
      "ffffffff81100300 T __traceiter_sys_enter\n"
      "ffffffff81100400 T syscall_trace_enter\n"
      "ffffffff81100600 T bpf_map_lookup_elem\n"
      "ffffffffc0001000 t bpf_prog_6581cca134347b01_trigger_0\t[bpf]\n"
      "ffffffffc0002000 t hidraw_send_report\t[hid]\n");
  for (uint64_t a : {0xffffffff81100010ULL, 0xffffffff81100210ULL, 0xffffffff81100310ULL, 0xffffffffc0001010ULL})
    EXPECT_TRUE(is_tracing_frame(k.lookup(a))) << std::hex << a;
  for (uint64_t a : {0xffffffff81100410ULL, 0xffffffff81100610ULL, 0xffffffffc0002010ULL, 0x1000ULL})
    EXPECT_FALSE(is_tracing_frame(k.lookup(a))) << std::hex << a;
}

// On a machine with no other BPF, histd's own program is the highest
// symbol: its frames are still its own (and left out), within a JIT pack.
TEST(Symbols, TheHighestSymbolIsABpfProgramOfUnknownSize) {
  const KernelSymbols k = KernelSymbols::parse(
      "ffffffff81100000 T bpf_trace_run2\n"
      "ffffffffa0001000 t hidraw_send_report\t[hid]\n"
      "ffffffffc0001b0c t bpf_prog_4621db037d15000e_test_entry\t[bpf]\n");
  EXPECT_TRUE(is_tracing_frame(k.lookup(0xffffffffc0002497ULL)));
  EXPECT_EQ(format_symbol(k.lookup(0xffffffffc0002497ULL), true), "bpf_prog_4621db037d15000e_test_entry+0x98b [bpf]");
  EXPECT_EQ(format_symbol(k.lookup(0xffffffffc0001b0cULL + (2u << 20)), false), "");
  const KernelSymbols m = KernelSymbols::parse("ffffffffa0001000 t hidraw_send_report\t[hid]\n");
  EXPECT_EQ(format_symbol(m.lookup(0xffffffffa0001010ULL), false), "");  // a module's end is unknown
}

TEST(Symbols, SyscallNamesLikeTheKernel) {
  SystemResolver r;
  EXPECT_EQ(r.syscall_name(1), "sys_write");
  EXPECT_EQ(r.syscall_name(0), "sys_read");
  EXPECT_EQ(r.syscall_name(100000), "");
}

}  // namespace
}  // namespace histd::symbols
