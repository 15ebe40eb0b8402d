// SPDX-License-Identifier: GPL-2.0-only
// Shared by the parser, planner and map-memory tests: format fields by hand, and the
// kernel selftests' inline-caret notation ('^' marks the byte the caret
// must point at; it is removed before parsing).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "histd/catalog.h"
#include "histd/parse.h"
#include "histd/pipeline.h"
#include "histd/plan.h"

namespace histd::testing {

inline catalog::Field field(std::string name, std::string type, uint32_t off, uint32_t size, bool is_signed,
                            catalog::FieldKind kind = catalog::FieldKind::Integer, uint32_t array_len = 0) {
  catalog::Field f;
  f.name = std::move(name);
  f.type = std::move(type);
  f.offset = off;
  f.size = size;
  f.is_signed = is_signed;
  f.kind = kind;
  f.array_len = array_len;
  f.is_common = f.name.rfind("common_", 0) == 0;
  return f;
}

// syscalls:sys_enter_write with a char[16] added: what codegen tests compile.
inline catalog::EventFormat sys_enter_write() {
  catalog::EventFormat f;
  f.system = "syscalls";
  f.name = "sys_enter_write";
  f.fields = {field("common_type", "unsigned short", 0, 2, false),
              field("common_pid", "int", 4, 4, true),
              field("__syscall_nr", "int", 8, 4, true),
              field("fd", "unsigned int", 16, 8, false),
              field("buf", "const char *", 24, 8, false),
              field("count", "size_t", 32, 8, false),
              field("comm", "char[16]", 40, 16, false, catalog::FieldKind::CharArray, 16)};
  return f;
}

inline parse::HistCommand parse_ok(const std::string& text) {
  auto r = parse::parse_hist(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : parse::HistCommand{};
}

// `marked` without its '^', and the caret's position.
inline std::pair<std::string, size_t> unmark(const std::string& marked) {
  const size_t caret = marked.find('^');
  EXPECT_NE(caret, std::string::npos) << marked;
  std::string text = marked;
  if (caret != std::string::npos) text.erase(caret, 1);
  return {text, caret};
}

// The parser refuses `marked` with `code`, the caret where '^' stands.
inline void expect_parse_error(const std::string& marked, ErrorCode code) {
  const auto [text, caret] = unmark(marked);
  auto r = parse::parse_trigger(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(error_name(r.error().code), error_name(code)) << text;
  EXPECT_EQ(r.error().span.begin, caret) << text;
  // The kernel's caret for a missing value sits one past the end.
  EXPECT_LE(r.error().span.begin, r.error().command.size() + 1) << text;
}

// kmem:kmalloc as this kernel describes it, plus a char[16] to test strings.
inline catalog::EventFormat kmalloc() {
  catalog::EventFormat f;
  f.system = "kmem";
  f.name = "kmalloc";
  f.id = 658;
  f.fields = {field("common_type", "unsigned short", 0, 2, false),
              field("common_flags", "unsigned char", 2, 1, false),
              field("common_preempt_count", "unsigned char", 3, 1, false),
              field("common_pid", "int", 4, 4, true),
              field("call_site", "unsigned long", 8, 8, false),
              field("ptr", "const void *", 16, 8, false),
              field("bytes_req", "size_t", 24, 8, false),
              field("bytes_alloc", "size_t", 32, 8, false),
              field("gfp_flags", "unsigned long", 40, 8, false),
              field("node", "int", 48, 4, true),
              field("comm", "char[16]", 52, 16, false, catalog::FieldKind::CharArray, 16)};
  return f;
}

// parse -> plan against kmalloc(), which must succeed.
inline plan::HistPlan plan_ok(const std::string& cmd) {
  auto r = pipeline::plan_command(cmd, kmalloc());
  EXPECT_TRUE(r.ok()) << cmd << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? r->plan : plan::HistPlan{};
}

}  // namespace histd::testing
