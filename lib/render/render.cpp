// SPDX-License-Identifier: GPL-2.0-only
// The kernel's hist_trigger_show() and hist_trigger_entry_print(), byte for
// byte: each format is the equivalent of the kernel's printf format quoted
// beside it.
#include "histd/render.h"
#include "histd/populate.h"
#include "render/key_formats.h"

#include <fmt/compile.h>
#include <fmt/format.h>

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

void append_key(std::string& out, const table::KeyColumn& k, const table::Row& r, const Resolver& res,
                const Options& opt, bool& multiline) {
  key_format(k.display).text(out, k.name, KeyValue(k, r, res, opt));
  if (table::key_traits(k.display).holds == table::KeyHolds::Stack) multiline = true;
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

void append_row(std::string& out, const table::Table& t, const table::Row& r, const Resolver& res, const Options& opt,
                const ColumnStats& stats) {
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
