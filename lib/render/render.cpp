// SPDX-License-Identifier: GPL-2.0-only
// The kernel's hist_trigger_show() and hist_trigger_entry_print(), byte for
// byte: each format is the equivalent of the kernel's printf format quoted
// beside it.
#include "histd/render.h"
#include "histd/populate.h"

#include <fmt/format.h>
#include <fmt/compile.h>

#include <cstring>
#include <iterator>
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
  for (size_t e = 0; e < t.entries(); ++e) {
    const table::Row r = t.row(e);
    for (size_t i = 0; i < t.vals.size() && i < r.vals.size(); ++i) {
      s.total[i] += r.vals[i];
      s.max[i] = std::max(s.max[i], r.vals[i]);
    }
  }
  return s;
}

// %ps / %pS of an address the resolver does not know: the raw address.
std::string or_address(std::string s, uint64_t addr) { return s.empty() ? fmt::format("0x{:x}", addr) : s; }

// The formats below are compiled fmt equivalents of the kernel's printf
// formats quoted beside them: a big table is mostly these few lines.
template <typename... Args>
void put(std::string& out, const auto& format, const Args&... args) {
  fmt::format_to(std::back_inserter(out), format, args...);
}

// "%<width>llu": the hot path of every table (keys, hitcounts, sums).
void put_right(std::string& out, uint64_t v, size_t width) {
  const fmt::format_int digits(v);
  if (digits.size() < width) out.append(width - digits.size(), ' ');
  out.append(digits.data(), digits.size());
}

void append_key(std::string& out, const table::KeyColumn& k, const table::Row& r, const Resolver& res,
                const Options& opt, bool& multiline) {
  const std::string_view name = k.name;
  // Symbols resolve from the address; what is printed of it is `v`.
  const uint64_t addr = r.key_number(k.offset);
  const uint64_t v = shown(addr, k.address, opt);
  switch (k.display) {
    case table::KeyDisplay::Decimal:  // "%s: %10llu"
      out += name;
      out += ": ";
      put_right(out, v, 10);
      return;
    case table::KeyDisplay::Hex:  // "%s: %llx"
      put(out, FMT_COMPILE("{}: {:x}"), name, v);
      return;
    case table::KeyDisplay::Sym:  // "%s: [%llx] %-45s"
      put(out, FMT_COMPILE("{}: [{:x}] {:<45}"), name, v, or_address(res.symbol(addr), v));
      return;
    case table::KeyDisplay::SymOffset:  // "%s: [%llx] %-55s"
      put(out, FMT_COMPILE("{}: [{:x}] {:<55}"), name, v, or_address(res.symbol_offset(addr), v));
      return;
    case table::KeyDisplay::Execname:  // "%s: %-16s[%10llu]"
      put(out, FMT_COMPILE("{}: {:<16}[{:>10}]"), name, r.comm, v);
      return;
    case table::KeyDisplay::Syscall: {  // "%s: %-30s[%3llu]"
      std::string sc = res.syscall_name(v);
      put(out, FMT_COMPILE("{}: {:<30}[{:>3}]"), name, sc.empty() ? std::string_view("unknown_syscall") : sc, v);
      return;
    }
    case table::KeyDisplay::Log2:  // "%s: ~ 2^%-2llu"
      put(out, FMT_COMPILE("{}: ~ 2^{:<2}"), name, v);
      return;
    case table::KeyDisplay::Buckets:  // "%s: ~ %llu-%llu"
      put(out, FMT_COMPILE("{}: ~ {}-{}"), name, v, v + k.buckets - 1);
      return;
    case table::KeyDisplay::String: {  // "%s: %-50s"
      const size_t end = std::min<size_t>(k.offset + k.size, r.key.size());
      const char* s = reinterpret_cast<const char*>(r.key.data() + k.offset);
      put(out, FMT_COMPILE("{}: {:<50}"), name, std::string_view(s, strnlen(s, end - k.offset)));
      return;
    }
    case table::KeyDisplay::Stacktrace: {
      put(out, FMT_COMPILE("{}:\n"), name);
      for_each_shown_frame(res, k.size / 8, [&](size_t i) { return r.key_number(k.offset + 8 * i); },
                           [&](uint64_t frame) {
                             put(out, FMT_COMPILE("         {}\n"),
                                 or_address(res.symbol_offset(frame), shown(frame, k.address, opt)));
                           });
      multiline = true;
      return;
    }
  }
}

void append_value(std::string& out, const table::ValColumn& c, uint64_t v, uint64_t total, uint64_t max) {
  const std::string_view name = c.name;
  switch (c.display) {
    case table::ValDisplay::Decimal:  // " %s: %10llu"
      out += ' ';
      out += name;
      out += ": ";
      put_right(out, v, 10);
      return;
    case table::ValDisplay::Hex:  // " %s: %10llx"
      put(out, FMT_COMPILE(" {}: {:>10x}"), name, v);
      return;
    case table::ValDisplay::Percent: {
      // The kernel's __get_percentage(): val * 10000 / total, ERROR when
      // the product overflows or the total is zero.
      if (total == 0 || v > std::numeric_limits<uint64_t>::max() / 10000) {
        put(out, FMT_COMPILE(" {} (%):[ERROR]"), name);
        return;
      }
      const uint64_t pc = v * 10000 / total;  // " %s (%%): %3u.%02u"
      put(out, FMT_COMPILE(" {} (%): {:>3}.{:02}"), name, static_cast<unsigned>(pc / 100),
          static_cast<unsigned>(pc % 100));
      return;
    }
    case table::ValDisplay::Graph: {  // " %s: %20s"
      size_t len = 0;
      if (max != 0) len = static_cast<size_t>(static_cast<unsigned __int128>(v) * 20 / max);
      len = std::min<size_t>(len, 20);
      put(out, FMT_COMPILE(" {}: {:>20}"), name, std::string_view("####################", len));
      return;
    }
  }
}

void append_key_part(std::string& out, const table::Table& t, const table::Row& r, const Resolver& res,
                     const Options& opt) {
  out += "{ ";
  bool multiline = false;
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (i) out += ", ";
    append_key(out, t.keys[i], r, res, opt, multiline);
  }
  out += multiline ? "}" : " }";
}

void append_row(std::string& out, const table::Table& t, const table::Row& r, const Resolver& res,
                const Options& opt, const ColumnStats& stats) {
  append_key_part(out, t, r, res, opt);
  for (size_t i = 0; i < t.vals.size() && i < r.vals.size(); ++i) {
    if (i == 0) {
      if (!t.nohitcount) {  // " hitcount: %10llu"
        out += " hitcount: ";
        put_right(out, r.vals[0], 10);
      }
      continue;
    }
    if (!t.vals[i].printed) continue;
    out += ' ';
    append_value(out, t.vals[i], shown(r.vals[i], t.vals[i].address, opt, true), stats.total[i], stats.max[i]);
  }
}

}  // namespace

const Resolver& null_resolver() {
  static const NullResolver r;
  return r;
}

std::string render_key(const table::Table& table, const table::Row& row, const Resolver& resolver,
                       const Options& options) {
  std::string out;
  append_key_part(out, table, row, resolver, options);
  return out;
}

std::string render_row(const table::Table& table, size_t entry, const Resolver& resolver, const Options& options) {
  std::string out;
  append_row(out, table, table.row(entry), resolver, options, column_stats(table));
  return out;
}

namespace {

void append_table(std::string& out, const Section& section, const Resolver& resolver, const Options& opt) {
  const table::Table& t = *section.table;
  out += "# event histogram\n#\n# trigger info: ";
  out += section.trigger_line;
  out += "\n#\n\n";
  const size_t before = out.size();
  const ColumnStats stats = column_stats(t);
  for (size_t e = 0; e < t.entries(); ++e) {
    // Room for every line at the first line's length (+1/8): growing a
    // multi-MB string copies it, and reserving much more than it needs
    // takes fresh pages where the memory the sort just freed would do.
    if (e == 1) {
      out.reserve(out.size() + (out.size() - before) * (t.entries() + t.entries() / 8) + 256);
      populate_now(out.data() + out.size(), out.capacity() - out.size());
    }
    const table::Row r = t.row(e);
    append_row(out, t, r, resolver, opt, stats);
    if (section.tracking) out += render_tracking(*section.tracking, r.record, opt);
    out += '\n';
  }
  out += section.after_entries;
  put(out, FMT_COMPILE("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n"), t.hits, t.entries(), t.drops);
  if (section.missed > 0) put(out, FMT_COMPILE("    Missed: {}\n"), section.missed);
}

}  // namespace

std::string render_table(const Section& section, const Resolver& resolver, const Options& options) {
  std::string out;
  append_table(out, section, resolver, options);
  return out;
}

std::string render_event(const std::vector<Section>& sections, const Resolver& resolver, const Options& options) {
  std::string out;
  for (size_t n = 0; n < sections.size(); ++n) {
    if (n > 0) out += "\n\n";
    append_table(out, sections[n], resolver, options);
  }
  return out;
}

}  // namespace histd::render
