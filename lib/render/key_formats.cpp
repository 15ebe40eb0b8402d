// SPDX-License-Identifier: GPL-2.0-only
#include "render/key_formats.h"
#include "histd/enum_rows.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace histd::render {

KeyValue::KeyValue(const table::KeyColumn& k, const table::Row& r, const Resolver& resolver, const Options& options)
    : column(k), row(r), res(resolver), opt(options) {
  if (table::key_traits(k.display).holds != table::KeyHolds::Number) return;
  addr = r.key_number(k.offset);
  v = shown(addr, k.address, options);
}

std::string_view KeyValue::text() const {
  const size_t end = std::min<size_t>(column.offset + column.size, row.key.size());
  const char* s = reinterpret_cast<const char*>(row.key.data() + column.offset);
  return std::string_view(s, strnlen(s, end - column.offset));
}

std::string or_address(std::string s, uint64_t addr) { return s.empty() ? fmt::format("0x{:x}", addr) : s; }

std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void put_number(std::string& out, uint64_t v, bool is_signed) {
  const fmt::format_int digits = is_signed ? fmt::format_int(static_cast<int64_t>(v)) : fmt::format_int(v);
  out.append(digits.data(), digits.size());
}

namespace {

// The entry's comm; a table none of whose entries has one gives an empty
// view without data, which fmt and std::string may not copy from.
std::string_view comm_of(const KeyValue& k) { return k.row.comm.data() ? k.row.comm : std::string_view(""); }
std::string known_or(std::string s, std::string_view otherwise) { return s.empty() ? std::string(otherwise) : s; }
std::string syscall_of(const KeyValue& k) { return known_or(k.res.syscall_name(k.v), "unknown_syscall"); }
// The frames of a Stack key as the kernel shows them, each through `visit`.
void each_frame(const KeyValue& k, auto&& visit) {
  const table::KeyColumn& c = k.column;
  for_each_shown_frame(
      k.res, c.size / 8, [&](size_t i) { return k.row.key_number(c.offset + 8 * i); }, visit);
}

// --- hist: each the kernel's printf format, quoted

void text_decimal(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: %10llu"
  out += name;
  out += ": ";
  put_right(out, k.v, 10);
}
void text_hex(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: %llx"
  put(out, FMT_COMPILE("{}: {:x}"), name, k.v);
}
void text_sym(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: [%llx] %-45s"
  put(out, FMT_COMPILE("{}: [{:x}] {:<45}"), name, k.v, or_address(k.res.symbol(k.addr), k.v));
}
void text_sym_offset(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: [%llx] %-55s"
  put(out, FMT_COMPILE("{}: [{:x}] {:<55}"), name, k.v, or_address(k.res.symbol_offset(k.addr), k.v));
}
void text_execname(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: %-16s[%10llu]"
  put(out, FMT_COMPILE("{}: {:<16}[{:>10}]"), name, comm_of(k), k.v);
}
void text_syscall(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: %-30s[%3llu]"
  put(out, FMT_COMPILE("{}: {:<30}[{:>3}]"), name, syscall_of(k), k.v);
}
void text_log2(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: ~ 2^%-2llu"
  put(out, FMT_COMPILE("{}: ~ 2^{:<2}"), name, k.v);
}
void text_buckets(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: ~ %llu-%llu"
  put(out, FMT_COMPILE("{}: ~ {}-{}"), name, k.v, k.v + k.column.buckets - 1);
}
void text_string(std::string& out, std::string_view name, const KeyValue& k) {  // "%s: %-50s"
  put(out, FMT_COMPILE("{}: {:<50}"), name, k.text());
}
// "common_stacktrace:\n", or a stack field's "stack.stacktrace" run on into
// its first frame, then a frame a line ("%*c%pS\n").
void text_stack(std::string& out, std::string_view name, const KeyValue& k) {
  if (name.ends_with(".stacktrace"))
    out += name;
  else
    put(out, FMT_COMPILE("{}:\n"), name);
  each_frame(k, [&](uint64_t f) {
    put(out, FMT_COMPILE("         {}\n"), or_address(k.res.symbol_offset(f), shown(f, k.column.address, k.opt)));
  });
}

// --- hist.json

void json_decimal(std::string& out, const KeyValue& k) { put_number(out, k.v, k.column.is_signed); }
void json_hex(std::string& out, const KeyValue& k) { put(out, FMT_COMPILE("\"{:x}\""), k.v); }
void json_sym(std::string& out, const KeyValue& k) { out += json_string(k.res.symbol(k.addr)); }
void json_sym_offset(std::string& out, const KeyValue& k) { out += json_string(k.res.symbol_offset(k.addr)); }
void json_execname(std::string& out, const KeyValue& k) { out += json_string(comm_of(k)); }
void json_syscall(std::string& out, const KeyValue& k) { out += json_string(syscall_of(k)); }
void json_log2(std::string& out, const KeyValue& k) { put(out, FMT_COMPILE("\"2^{}\""), k.v); }
void json_buckets(std::string& out, const KeyValue& k) {
  put(out, FMT_COMPILE("\"{}-{}\""), k.v, k.v + k.column.buckets - 1);
}
void json_string_key(std::string& out, const KeyValue& k) { out += json_string(k.text()); }
// Frames by name, or as numbers where the resolver knows none.
void json_stack(std::string& out, const KeyValue& k) {
  std::vector<std::string> frames;
  each_frame(k, [&](uint64_t f) {
    const std::string s = k.res.symbol_offset(f);
    frames.push_back(s.empty() ? fmt::format_int(shown(f, k.column.address, k.opt)).str() : json_string(s));
  });
  if (frames.empty()) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (size_t i = 0; i < frames.size(); ++i) {
    out += "              ";
    out += frames[i];
    out += i + 1 < frames.size() ? ",\n" : "\n";
  }
  out += "            ]";
}

// --- labels

// One label a series: format_int and a compiled format, not a format
// string parsed every time.
std::string label_decimal(const KeyValue& k) {
  return k.column.is_signed ? fmt::format_int(static_cast<int64_t>(k.v)).str() : fmt::format_int(k.v).str();
}
std::string label_hex(const KeyValue& k) { return fmt::format(FMT_COMPILE("{:x}"), k.v); }
std::string label_sym(const KeyValue& k) { return known_or(k.res.symbol(k.addr), "unknown"); }
std::string label_sym_offset(const KeyValue& k) { return known_or(k.res.symbol_offset(k.addr), "unknown"); }
std::string label_execname(const KeyValue& k) { return fmt::format_int(k.v).str(); }
std::string companion_comm(const KeyValue& k) { return std::string(comm_of(k)); }
std::string label_bucket(const KeyValue& k) { return key_format(k.column.display).bucket(k.column, k.v); }
std::string label_string(const KeyValue& k) { return std::string(k.text()); }
std::string label_stack(const KeyValue& k) {
  std::string out;
  each_frame(k, [&](uint64_t f) {
    if (!out.empty()) out += ';';
    out += known_or(k.res.symbol_offset(f), "?");
  });
  return out;
}

// --- buckets

std::string bucket_log2(const table::KeyColumn&, uint64_t v) { return fmt::format("2^{}", v); }
std::string bucket_range(const table::KeyColumn& k, uint64_t v) { return fmt::format("{}-{}", v, v + k.buckets - 1); }
uint64_t step_log2(const table::KeyColumn&) { return 1; }
uint64_t step_range(const table::KeyColumn& k) { return std::max<uint64_t>(k.buckets, 1); }
// .log2: a bucket for each power of two up to the top of the field's type
// (bucket v holds (2^(v-1), 2^v]).
uint64_t last_log2(const table::KeyColumn& k) { return k.field_bits; }
// .buckets=N: the first 64 steps from 0, or fewer where the type ends.
uint64_t last_range(const table::KeyColumn& k) {
  const uint64_t step = step_range(k);
  const uint64_t top = k.field_bits >= 64 ? UINT64_MAX : (uint64_t{1} << k.field_bits) - 1;
  return std::min<uint64_t>(kLinearBuckets - 1, top / step) * step;
}

using enum table::KeyDisplay;
// clang-format off
constexpr KeyFormat kFormats[] = {
  // display    text             json             label             bucket        step        fills_gaps  last_bucket
  {Decimal,     text_decimal,    json_decimal,    label_decimal},
  {Hex,         text_hex,        json_hex,        label_hex},
  {Sym,         text_sym,        json_sym,        label_sym},
  {SymOffset,   text_sym_offset, json_sym_offset, label_sym_offset},
  {Execname,    text_execname,   json_execname,   label_execname,   nullptr,      nullptr,    false,      nullptr,
                "_comm", companion_comm},
  {Syscall,     text_syscall,    json_syscall,    syscall_of},
  // .log2 has at most 65 buckets: the page draws them all.
  {Log2,        text_log2,       json_log2,       label_bucket,     bucket_log2,  step_log2,  true,       last_log2},
  {Buckets,     text_buckets,    json_buckets,    label_bucket,     bucket_range, step_range, false,      last_range},
  {String,      text_string,     json_string_key, label_string},
  {Stacktrace,  text_stack,      json_stack,      label_stack},
};
// clang-format on

// Stacktrace is the last display.
static_assert(rows_follow_enum(kFormats, &KeyFormat::display, static_cast<size_t>(Stacktrace) + 1),
              "a row per value, in the enum's order");

}  // namespace

const KeyFormat& key_format(table::KeyDisplay display) { return kFormats[static_cast<size_t>(display)]; }

}  // namespace histd::render
