// The kernel's hist_trigger_show() and hist_trigger_entry_print(), byte for
// byte: the printf formats are the kernel's.
#include "histd/render.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <cstring>
#include <limits>

namespace histd::render {

namespace {

class NullResolver : public Resolver {
 public:
  std::string symbol(uint64_t) const override { return {}; }
  std::string symbol_offset(uint64_t) const override { return {}; }
  std::string syscall_name(uint64_t) const override { return {}; }
};

// Totals and maxima per value column: what .percent and .graph scale by.
struct ColumnStats {
  std::vector<uint64_t> total;
  std::vector<uint64_t> max;
};

ColumnStats column_stats(const table::Table& t) {
  ColumnStats s{std::vector<uint64_t>(t.vals.size(), 0), std::vector<uint64_t>(t.vals.size(), 0)};
  for (const table::Row& r : t.rows)
    for (size_t i = 0; i < t.vals.size() && i < r.vals.size(); ++i) {
      s.total[i] += r.vals[i];
      s.max[i] = std::max(s.max[i], r.vals[i]);
    }
  return s;
}

uint64_t key_u64(const table::Row& r, uint32_t offset) {
  uint64_t v = 0;
  if (offset + 8 <= r.key.size()) std::memcpy(&v, r.key.data() + offset, 8);
  return v;
}

// %ps / %pS of an address the resolver does not know: the raw address.
std::string or_address(std::string s, uint64_t addr) { return s.empty() ? fmt::format("0x{:x}", addr) : s; }

void append_key(std::string& out, const table::KeyColumn& k, const table::Row& r, const Resolver& res,
                bool& multiline) {
  const char* name = k.name.c_str();
  const uint64_t v = key_u64(r, k.offset);
  switch (k.display) {
    case table::KeyDisplay::Decimal:
      out += fmt::sprintf("%s: %10llu", name, static_cast<unsigned long long>(v));
      return;
    case table::KeyDisplay::Hex:
      out += fmt::sprintf("%s: %llx", name, static_cast<unsigned long long>(v));
      return;
    case table::KeyDisplay::Sym:
      out += fmt::sprintf("%s: [%llx] %-45s", name, static_cast<unsigned long long>(v), or_address(res.symbol(v), v));
      return;
    case table::KeyDisplay::SymOffset:
      out += fmt::sprintf("%s: [%llx] %-55s", name, static_cast<unsigned long long>(v),
                          or_address(res.symbol_offset(v), v));
      return;
    case table::KeyDisplay::Execname:
      out += fmt::sprintf("%s: %-16s[%10llu]", name, r.comm, static_cast<unsigned long long>(v));
      return;
    case table::KeyDisplay::Syscall: {
      std::string sc = res.syscall_name(v);
      out += fmt::sprintf("%s: %-30s[%3llu]", name, sc.empty() ? "unknown_syscall" : sc,
                          static_cast<unsigned long long>(v));
      return;
    }
    case table::KeyDisplay::Log2:
      out += fmt::sprintf("%s: ~ 2^%-2llu", name, static_cast<unsigned long long>(v));
      return;
    case table::KeyDisplay::Buckets:
      out += fmt::sprintf("%s: ~ %llu-%llu", name, static_cast<unsigned long long>(v),
                          static_cast<unsigned long long>(v + k.buckets - 1));
      return;
    case table::KeyDisplay::String: {
      const size_t end = std::min<size_t>(k.offset + k.size, r.key.size());
      const char* s = reinterpret_cast<const char*>(r.key.data() + k.offset);
      out += fmt::sprintf("%s: %-50s", name, std::string(s, strnlen(s, end - k.offset)));
      return;
    }
    case table::KeyDisplay::Stacktrace: {
      out += fmt::format("{}:\n", k.name);
      for (uint32_t off = k.offset; off + 8 <= k.offset + k.size && off + 8 <= r.key.size(); off += 8) {
        const uint64_t frame = key_u64(r, off);
        if (!frame) break;
        out += fmt::format("         {}\n", or_address(res.symbol_offset(frame), frame));
      }
      multiline = true;
      return;
    }
  }
}

void append_value(std::string& out, const table::ValColumn& c, uint64_t v, uint64_t total, uint64_t max) {
  const char* name = c.name.c_str();
  switch (c.display) {
    case table::ValDisplay::Decimal:
      out += fmt::sprintf(" %s: %10llu", name, static_cast<unsigned long long>(v));
      return;
    case table::ValDisplay::Hex:
      out += fmt::sprintf(" %s: %10llx", name, static_cast<unsigned long long>(v));
      return;
    case table::ValDisplay::Percent: {
      // The kernel's __get_percentage(): val * 10000 / total, ERROR when
      // the product overflows or the total is zero.
      if (total == 0 || v > std::numeric_limits<uint64_t>::max() / 10000) {
        out += fmt::sprintf(" %s (%%):[ERROR]", name);
        return;
      }
      const uint64_t pc = v * 10000 / total;
      out += fmt::sprintf(" %s (%%): %3u.%02u", name, static_cast<unsigned>(pc / 100), static_cast<unsigned>(pc % 100));
      return;
    }
    case table::ValDisplay::Graph: {
      size_t len = 0;
      if (max != 0) len = static_cast<size_t>(static_cast<unsigned __int128>(v) * 20 / max);
      out += fmt::sprintf(" %s: %20s", name, std::string(std::min<size_t>(len, 20), '#'));
      return;
    }
  }
}

std::string key_part(const table::Table& t, const table::Row& r, const Resolver& res) {
  std::string out = "{ ";
  bool multiline = false;
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (i) out += ", ";
    append_key(out, t.keys[i], r, res, multiline);
  }
  out += multiline ? "}" : " }";
  return out;
}

std::string row_line(const table::Table& t, const table::Row& r, const Resolver& res, const ColumnStats& stats) {
  std::string out = key_part(t, r, res);
  for (size_t i = 0; i < t.vals.size() && i < r.vals.size(); ++i) {
    if (i == 0) {
      if (!t.nohitcount) out += fmt::sprintf(" hitcount: %10llu", static_cast<unsigned long long>(r.vals[0]));
      continue;
    }
    if (!t.vals[i].printed) continue;
    out += ' ';
    append_value(out, t.vals[i], r.vals[i], stats.total[i], stats.max[i]);
  }
  return out;
}

}  // namespace

const Resolver& null_resolver() {
  static const NullResolver r;
  return r;
}

std::string render_key(const table::Table& table, const table::Row& row, const Resolver& resolver) {
  return key_part(table, row, resolver);
}

std::string render_row(const table::Table& table, const table::Row& row, const Resolver& resolver) {
  return row_line(table, row, resolver, column_stats(table));
}

std::string render_table(const Section& section, const Resolver& resolver) {
  const table::Table& t = *section.table;
  std::string out = "# event histogram\n#\n# trigger info: " + section.trigger_line + "\n#\n\n";
  const ColumnStats stats = column_stats(t);
  for (const table::Row& r : t.rows) {
    out += row_line(t, r, resolver, stats);
    out += r.tracking;
    out += '\n';
  }
  out += section.after_entries;
  out += fmt::format("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n", t.hits, t.rows.size(), t.drops);
  return out;
}

std::string render_event(const std::vector<Section>& sections, const Resolver& resolver) {
  std::string out;
  for (size_t n = 0; n < sections.size(); ++n) {
    if (n > 0) out += "\n\n";
    out += render_table(sections[n], resolver);
  }
  return out;
}

}  // namespace histd::render
