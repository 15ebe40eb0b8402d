#include <nlohmann/json.hpp>

#include <cstring>

#include "histd/render.h"

namespace histd::render {

namespace {

using nlohmann::json;

uint64_t key_u64(const table::Row& r, uint32_t offset) {
  uint64_t v = 0;
  if (offset + 8 <= r.key.size()) std::memcpy(&v, r.key.data() + offset, 8);
  return v;
}

void add_key(json& keys, const table::KeyColumn& k, const table::Row& r, const Resolver& res) {
  using table::KeyDisplay;
  if (k.display == KeyDisplay::String) {
    const size_t end = std::min<size_t>(k.offset + k.size, r.key.size());
    const char* s = reinterpret_cast<const char*>(r.key.data() + k.offset);
    keys[k.name] = std::string(s, strnlen(s, end - k.offset));
    return;
  }
  if (k.display == KeyDisplay::Stacktrace) {
    json frames = json::array();
    for (uint32_t off = k.offset; off + 8 <= k.offset + k.size && off + 8 <= r.key.size(); off += 8) {
      const uint64_t f = key_u64(r, off);
      if (!f) break;
      const std::string s = res.symbol_offset(f);
      frames.push_back(s.empty() ? json(f) : json(s));
    }
    keys[k.name] = std::move(frames);
    return;
  }
  const uint64_t v = key_u64(r, k.offset);
  keys[k.name] = k.is_signed ? json(static_cast<int64_t>(v)) : json(v);
  switch (k.display) {
    case KeyDisplay::Hex: {
      char buf[32];
      snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
      keys[k.name + ".hex"] = buf;
      break;
    }
    case KeyDisplay::Sym:
      keys[k.name + ".sym"] = res.symbol(v);
      break;
    case KeyDisplay::SymOffset:
      keys[k.name + ".sym-offset"] = res.symbol_offset(v);
      break;
    case KeyDisplay::Execname:
      keys[k.name + ".execname"] = std::string(r.comm);
      break;
    case KeyDisplay::Syscall: {
      const std::string s = res.syscall_name(v);
      keys[k.name + ".syscall"] = s.empty() ? "unknown_syscall" : s;
      break;
    }
    case KeyDisplay::Log2:
      keys[k.name + ".log2"] = "2^" + std::to_string(v);
      break;
    case KeyDisplay::Buckets:
      keys[k.name + ".buckets"] = std::to_string(v) + "-" + std::to_string(v + k.buckets - 1);
      break;
    default:
      break;
  }
}

}  // namespace

std::string render_json(const std::string& event, const std::vector<Section>& sections, const Resolver& resolver) {
  json doc{{"event", event}, {"tables", json::array()}};
  for (const Section& s : sections) {
    const table::Table& t = *s.table;
    json entries = json::array();
    for (size_t e = 0; e < t.entries(); ++e) {
      const table::Row r = t.row(e);
      json keys = json::object();
      for (const auto& k : t.keys) add_key(keys, k, r, resolver);
      json values = json::object();
      for (size_t i = 0; i < t.vals.size() && i < r.vals.size(); ++i) {
        if (i == 0 && t.nohitcount) continue;
        if (i > 0 && !t.vals[i].printed) continue;
        values[t.vals[i].name] = r.vals[i];
      }
      entries.push_back(json{{"keys", std::move(keys)}, {"values", std::move(values)}});
    }
    json table{{"trigger", s.trigger_line},
               {"totals", {{"hits", t.hits}, {"entries", t.entries()}, {"dropped", t.drops}}},
               {"entries", std::move(entries)}};
    if (s.memory)
      table["map_memory"] = {{"table", s.memory->table},
                             {"stats", s.memory->stats},
                             {"vars", s.memory->vars},
                             {"total", s.memory->total()}};
    doc["tables"].push_back(std::move(table));
  }
  return doc.dump(2) + "\n";
}

}  // namespace histd::render
