// Codegen: the generated unit compiles (clang, no root needed), never
// contains user text, and matches a few goldens.
#include <gtest/gtest.h>

#include "golden.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "histd/codegen.h"
#include "histd/pipeline.h"
#include "histd/runtime.h"

namespace histd::codegen {
namespace {

catalog::EventFormat sys_enter_write() {
  catalog::EventFormat f;
  f.system = "syscalls";
  f.name = "sys_enter_write";
  auto add = [&](std::string n, uint32_t off, uint32_t size, bool s,
                 catalog::FieldKind k = catalog::FieldKind::Integer, uint32_t len = 0) {
    catalog::Field fl;
    fl.name = std::move(n);
    fl.offset = off;
    fl.size = size;
    fl.is_signed = s;
    fl.kind = k;
    fl.array_len = len;
    f.fields.push_back(fl);
  };
  add("common_type", 0, 2, false);
  add("common_pid", 4, 4, true);
  add("__syscall_nr", 8, 4, true);
  add("fd", 16, 8, false);
  add("buf", 24, 8, false);
  add("count", 32, 8, false);
  add("comm", 40, 16, false, catalog::FieldKind::CharArray, 16);
  return f;
}

void expect_golden(const std::string& name, const std::string& actual) {
  histd::testing::expect_golden("codegen", name, actual);
}

std::string compile_ok(const std::string& cmd) {
  auto r = pipeline::compile(cmd, sys_enter_write());
  EXPECT_TRUE(r.ok()) << cmd << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? r->source : "";
}

TEST(Codegen, Golden) {
  expect_golden("keys_fd_vals_count_filter.c", compile_ok("hist:keys=fd:vals=count if count > 10 && __syscall_nr != -1"));
  expect_golden("log2_string_key.c", compile_ok("hist:keys=count.log2,comm:vals=hitcount"));
}

TEST(Codegen, GeneratedUnitsCompile) {
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  for (const char* cmd : {"hist:keys=fd:vals=count if count > 10 && __syscall_nr != -1",
                          "hist:keys=count.log2,comm:vals=hitcount",
                          "hist:keys=common_pid,cpu,fd.hex:vals=count.hex,buf:sort=count.descending,fd",
                          "hist:keys=count.buckets=10 if !(fd & 1) || (count <= 3 && count >= 1)"}) {
    auto obj = compiler.compile(compile_ok(cmd));
    ASSERT_TRUE(obj.ok()) << cmd << "\n" << obj.error().context;
    EXPECT_GT(obj->size(), 0u);
  }
}

TEST(Codegen, UserTextNeverReachesTheSource) {
  // Names, filter text and the table name appear nowhere in the unit:
  // only synthesized identifiers and re-printed numbers do.
  const std::string src = compile_ok("hist:name=evil_name_x:keys=comm:vals=count if count == 0x1234 && fd < 077");
  for (const char* word : {"evil_name_x", "comm", "count", "fd", "077"})
    EXPECT_FALSE(std::regex_search(src, std::regex(std::string("\\b") + word + "\\b"))) << word;
  EXPECT_NE(src.find("0x1234ULL"), std::string::npos);  // re-printed from the parsed number...
  EXPECT_NE(src.find("0x3fULL"), std::string::npos);    // ...octal 077 as 0x3f
}

}  // namespace
}  // namespace histd::codegen
