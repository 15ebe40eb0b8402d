// SPDX-License-Identifier: GPL-2.0-only
// prepare_format(): the print fmt as the Printer gives it to libtraceevent
// (pointer conversions tagged, enum constants and constant expressions
// replaced by their values), and the Printer over records made here.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>

#include "histd/printfmt.h"

namespace histd {
namespace {

using printfmt::prepare_format;

std::string format_with(const std::string& print_fmt) {
  return "name: test\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
         "print fmt: " +
         print_fmt + "\n";
}

std::string print_fmt_of(const std::string& format_text) {
  const size_t at = format_text.find("print fmt: ");
  return format_text.substr(at + 11, format_text.find('\n', at) - at - 11);
}

TEST(PrintfmtPrepare, PointerConversionsBecomeTags) {
  EXPECT_EQ(
      print_fmt_of(prepare_format(format_with(R"("call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr)"), "N")),
      R"("call_site={{histd:N:S:%llx}} ptr={{histd:N:p:%llx}}", (unsigned long long)( (void *)REC->call_site), (unsigned long long)( REC->ptr))");
  EXPECT_EQ(
      print_fmt_of(prepare_format(format_with(R"("f=%ps k=%pK x=%px", REC->f, REC->k, REC->x)"), "N")),
      R"("f={{histd:N:s:%llx}} k={{histd:N:p:%llx}} x={{histd:N:x:%llx}}", (unsigned long long)( REC->f), (unsigned long long)( REC->k), (unsigned long long)( REC->x))");
}

TEST(PrintfmtPrepare, OtherConversionsKeepTheirArguments) {
  // %% takes no argument, '*' takes one, %pM (a MAC address) stays libtraceevent's.
  EXPECT_EQ(
      print_fmt_of(prepare_format(format_with(R"("%d%% %*s %pM %p", REC->a, REC->w, REC->s, REC->mac, REC->p)"), "N")),
      R"("%d%% %*s %pM {{histd:N:p:%llx}}", REC->a, REC->w, REC->s, REC->mac, (unsigned long long)( REC->p))");
  EXPECT_EQ(print_fmt_of(prepare_format(format_with(R"("no arguments")"), "N")), R"("no arguments")");
  // Nothing but the print fmt line changes.
  const std::string f = format_with(R"("%d", REC->a)");
  EXPECT_EQ(prepare_format(f, "N"), f);
}

TEST(PrintfmtPrepare, EnumConstantsBecomeValues) {
  const printfmt::Enums enums = {{"HRTIMER_MODE_ABS", 0}, {"HRTIMER_MODE_REL", 1}, {"mode", 9}};
  EXPECT_EQ(
      print_fmt_of(prepare_format(
          format_with(
              R"("mode=%s", __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, "ABS" }, { HRTIMER_MODE_REL, "HRTIMER_MODE_REL" }))"),
          "N", enums)),
      R"("mode=%s", __print_symbolic(REC->mode, { 0, "ABS" }, { 1, "HRTIMER_MODE_REL" }))");
}

TEST(PrintfmtPrepare, ConstantExpressionsAreFolded) {
  EXPECT_EQ(
      print_fmt_of(prepare_format(
          format_with(
              R"("%s", __print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000), "|", { 0x00040000, "M" }))"),
          "N")),
      R"("%s", __print_flags(REC->flags & 0x1c0000, "|", { 0x00040000, "M" }))");
  EXPECT_EQ(print_fmt_of(prepare_format(format_with(R"("%d", REC->s & ((((0 | 1 | 2) + 1) << 1) - 1))"), "N")),
            R"("%d", REC->s & 0x7)");
  // Casts, fields, calls and literals with suffixes stay.
  EXPECT_EQ(print_fmt_of(prepare_format(format_with(R"("%d %d", (long)REC->a, (1UL << 3))"), "N")),
            R"("%d %d", (long)REC->a, (1UL << 3))");
  EXPECT_EQ(print_fmt_of(prepare_format(format_with(R"x("%s", __print_flags(REC->f, "|", { 1, "(1|2)" }))x"), "N")),
            R"x("%s", __print_flags(REC->f, "|", { 1, "(1|2)" }))x");
}

// A record of the test event: common_type 7, then the fields below.
std::vector<uint8_t> record(uint64_t ptr, uint64_t site) {
  std::vector<uint8_t> r(24, 0);
  r[0] = 7;
  std::memcpy(r.data() + 8, &ptr, 8);
  std::memcpy(r.data() + 16, &site, 8);
  return r;
}

TEST(Printfmt, PointersAreHashedAndSymbolsNamed) {
  const auto syms = symbols::KernelSymbols::parse("ffffffff81000000 T start_kernel\nffffffff81000100 T next_one\n");
  printfmt::Printer printer(&syms);
  ASSERT_TRUE(printer
                  .add_event("test",
                             "name: tev\nID: 7\nformat:\n"
                             "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
                             "\tfield:void * ptr;\toffset:8;\tsize:8;\tsigned:0;\n"
                             "\tfield:unsigned long site;\toffset:16;\tsize:8;\tsigned:0;\n\n"
                             "print fmt: \"ptr=%p site=%pS short=%ps\", REC->ptr, (void *)REC->site, REC->site\n")
                  .ok());
  auto text = printer.line_text(record(0xffff888102ddf000, 0xffffffff81000010));
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(std::regex_match(
      *text, std::regex("tev: ptr=00000000[0-9a-f]{8} site=start_kernel\\+0x10/0x100 short=start_kernel")))
      << *text;
  // The heap address itself is never shown; NULL is.
  EXPECT_EQ(text->find("ffff888102ddf000"), std::string::npos);
  EXPECT_EQ(*printer.line_text(record(0, 0x1234)), "tev: ptr=0000000000000000 site=0x1234 short=0x1234");
  EXPECT_EQ(printer.line_text(std::vector<uint8_t>(24, 0)).error().err, ENOENT);
  // For a reader who may not see kernel addresses, an address no symbol
  // names is hashed like %p; a named one reads the same.
  auto hidden = printer.line_text(record(0, 0xffffffffc0001234), true);
  ASSERT_TRUE(hidden.ok());
  EXPECT_TRUE(std::regex_match(
      *hidden, std::regex("tev: ptr=0000000000000000 site=00000000[0-9a-f]{8} short=00000000[0-9a-f]{8}")))
      << *hidden;
  EXPECT_EQ(*printer.line_text(record(0, 0xffffffff81000010), true), *printer.line_text(record(0, 0xffffffff81000010)));
}

TEST(Printfmt, SystemCallsAsTheKernelPrintsThem) {
  printfmt::Printer printer;
  const std::string common =
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
      "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n";
  ASSERT_TRUE(printer
                  .add_event("syscalls", "name: sys_enter_read\nID: 7\nformat:\n" + common +
                                             "\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n"
                                             "\tfield:char * buf;\toffset:24;\tsize:8;\tsigned:0;\n"
                                             "\tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;\n\n"
                                             "print fmt: \"fd: 0x%08lx, buf: 0x%08lx, count: 0x%08lx\", "
                                             "((unsigned long)(REC->fd)), ((unsigned long)(REC->buf)), "
                                             "((unsigned long)(REC->count))\n")
                  .ok());
  std::vector<uint8_t> r(40, 0);
  r[0] = 7;
  const uint64_t fd = 3, buf = 0x7ffe1000, count = 0x340;
  std::memcpy(r.data() + 16, &fd, 8);
  std::memcpy(r.data() + 24, &buf, 8);
  std::memcpy(r.data() + 32, &count, 8);
  EXPECT_EQ(*printer.line_text(r), "sys_read(fd: 3, buf: 0x7ffe1000, count: 0x340)");
}

}  // namespace
}  // namespace histd
