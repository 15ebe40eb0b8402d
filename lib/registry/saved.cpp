// SPDX-License-Identifier: GPL-2.0-only
// The state file: the registry as the commands that restore it (the
// canonical printed lines, whose round trip tests/bpf/restore_corpus_test
// checks), with what only the kernel side knows. Pure: the engine reads and
// writes the file.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "histd/digest.h"
#include "histd/registry.h"

namespace histd::registry {

namespace {

using nlohmann::json;

constexpr const char* kChecksum = "sha256";

// A member of a saved entry, or "" when absent or of another type (a
// hand-edited file must not throw).
std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json live_triggers(const Registry& registry, const KernelFacts& kernel) {
  // Hist triggers in creation order: a trigger's $references need their
  // owners back first. Enables after them, oldest first per event.
  std::vector<std::pair<uint64_t, json>> hist;
  for (const auto& [id, triggers] : registry.events()) {
    const std::string event = id.system + ":" + id.name;
    for (const HistTrigger& t : triggers.hist) {
      json entry{{"event", event}, {"command", t.plan.trigger_text()}, {"paused", kernel.paused(t.uid)}};
      // Where its Missed count starts on the pinned dispatcher's counter.
      if (const uint64_t base = kernel.missed_base(t.uid)) entry["missed_base"] = base;
      // The configuration directory's own (a reload may change or remove
      // it); an older histd ignores the member.
      if (!t.config.empty()) entry["config"] = t.config;
      hist.emplace_back(t.uid, std::move(entry));
    }
  }
  std::sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json list = json::array();
  for (auto& [uid, entry] : hist) list.push_back(std::move(entry));
  for (const auto& [id, triggers] : registry.events())
    for (auto it = triggers.controls.rbegin(); it != triggers.controls.rend(); ++it) {
      json entry{{"event", id.system + ":" + id.name}, {"command", kernel.control_line(id, *it)}};
      if (!it->config.empty()) entry["config"] = it->config;
      list.push_back(std::move(entry));
    }
  return list;
}

// The events' filter files, each {"event": "system:event", "filter": text}.
json filters_json(const Registry& registry) {
  json filters = json::array();
  for (const auto& [id, f] : registry.filters())
    filters.push_back(json{{"event", id.system + ":" + id.name}, {"filter", f.text}});
  return filters;
}

// set_event_pid: {"boot_id": ..., "pids": [...], "event_fork": bool}.
json pids_json(const SavedPids& p) {
  return json{{"boot_id", p.boot_id}, {"pids", p.pids}, {"event_fork", p.event_fork}};
}

std::optional<SavedPids> pids_of(const json& j) {
  if (!j.is_object()) return std::nullopt;
  SavedPids p;
  p.boot_id = string_at(j, "boot_id");
  auto pids = j.find("pids");
  if (p.boot_id.empty() || pids == j.end() || !pids->is_array()) return std::nullopt;
  for (const json& pid : *pids) {
    if (!pid.is_number_unsigned() || pid.get<uint64_t>() > UINT32_MAX) return std::nullopt;
    p.pids.push_back(pid.get<uint32_t>());
  }
  auto fork = j.find("event_fork");
  p.event_fork = fork != j.end() && fork->is_boolean() && fork->get<bool>();
  return p;
}

// The state file's members, each as it is built: the live state, then
// what did not restore.
struct Members {
  json list, synthetic = json::array(), enabled = json::array(), config_synthetic = json::array(),
             events = json::array(), eprobes = json::array(), filters;
  json pids;  // set_event_pid (null: none)
};

// What did not restore follows as it was saved, in its order: what it
// depends on is either restored (before it) or among it.
void add_kept(Members& m, const std::vector<SavedEntry>& kept) {
  for (const SavedEntry& e : kept) {
    if (e.applying) continue;
    json raw = json::parse(e.raw, nullptr, false);
    switch (e.kind) {
      case SavedEntry::Kind::Synthetic:
        if (!e.config.empty()) m.config_synthetic.push_back(e.config);
        m.synthetic.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::Trigger:
        m.list.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::Enabled:
        m.enabled.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::EventEnabled:
        m.events.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::Eprobe:
        m.eprobes.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::EventFilter:
        m.filters.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::EventPids:
        if (m.pids.is_null()) m.pids = std::move(raw);
        break;
    }
  }
}

}  // namespace

std::string saved_text(const Registry& registry, const KernelFacts& kernel, const std::vector<SavedEntry>& kept) {
  Members m;
  m.list = live_triggers(registry, kernel);
  // Definitions stay plain strings (what older histds read); the names of
  // the configuration's own are listed beside them.
  for (const auto& [name, s] : registry.synthetics()) {
    m.synthetic.push_back(synth::list_line(s.def));
    if (s.enabled) m.enabled.push_back(name);
    if (s.config) m.config_synthetic.push_back(name);
  }
  for (const catalog::EventId& id : registry.enabled_events()) m.events.push_back(id.system + ":" + id.name);
  // histd's eprobes, as dynamic_events lists them.
  for (const auto& [id, k] : registry.eprobes()) m.eprobes.push_back(probe::defining_line(k.def));
  m.filters = filters_json(registry);
  if (kernel.event_pids)
    if (const std::optional<SavedPids> p = kernel.event_pids()) m.pids = pids_json(*p);
  add_kept(m, kept);
  json doc{
      {"version", 1}, {"synthetic_events", m.synthetic}, {"enabled_synthetic_events", m.enabled}, {"triggers", m.list}};
  if (!m.config_synthetic.empty()) doc["config_synthetic_events"] = std::move(m.config_synthetic);
  // The members an older histd ignores: kernel events whose `enable` is 1,
  // histd's eprobes, events' filter files, set_event_pid and
  // options/event-fork.
  if (!m.events.empty()) doc["enabled_events"] = std::move(m.events);
  if (!m.eprobes.empty()) doc["eprobes"] = std::move(m.eprobes);
  if (!m.filters.empty()) doc["event_filters"] = std::move(m.filters);
  if (!m.pids.is_null()) doc["event_pids"] = std::move(m.pids);
  // A checksum of the rest, as one line of JSON (keys sorted, no blanks:
  // the same whoever parses and prints it again), so that a byte changed
  // since (a flipped bit, a hand's slip) is caught however valid the JSON
  // it leaves (an older histd ignores the member).
  doc[kChecksum] = sha256_hex(doc.dump());
  return doc.dump(2) + "\n";
}

namespace {

// The state file's document, checked: a JSON object with its triggers, its
// checksum matching, a version this histd reads.
Result<json, std::string> checked_document(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("triggers") || !doc["triggers"].is_array())
    return unexpected(std::string("not a histd state file"));
  // Without one: written by a histd older than the checksum.
  if (auto sum = doc.find(kChecksum); sum != doc.end()) {
    const std::string written = sum->is_string() ? sum->get<std::string>() : std::string();
    doc.erase(kChecksum);
    if (written != sha256_hex(doc.dump()))
      return unexpected(std::string("its checksum does not match its contents: changed since histd wrote it"));
  }
  if (auto v = doc.find("version"); v != doc.end() && *v != 1)
    return unexpected("state file version " + v->dump() + ", this histd reads version 1");
  return doc;
}

// One entry as written (`raw`); `config_synthetic`: the configuration's own
// synthetic events, by name.
SavedEntry saved_entry(SavedEntry::Kind kind, const json& raw, std::string event, std::string command,
                       const std::set<std::string>& config_synthetic) {
  SavedEntry e;
  e.kind = kind;
  e.raw = raw.dump();
  e.event = std::move(event);
  e.command = std::move(command);
  if (kind == SavedEntry::Kind::Synthetic) {
    const std::string name = e.command.substr(0, e.command.find_first_of(" \t"));
    if (config_synthetic.count(name)) e.config = name;
  }
  if (kind == SavedEntry::Kind::Trigger && raw.is_object()) {
    e.config = string_at(raw, "config");
    auto paused = raw.find("paused");
    e.paused = paused != raw.end() && paused->is_boolean() && paused->get<bool>();
    auto base = raw.find("missed_base");
    if (base != raw.end() && base->is_number_unsigned()) e.missed_base = base->get<uint64_t>();
  }
  return e;
}

}  // namespace

Result<std::vector<SavedEntry>, std::string> read_saved(std::string_view text) {
  auto checked = checked_document(text);
  if (!checked) return unexpected(std::move(checked).error());
  json& doc = *checked;
  // The configuration's own synthetic events, by name (absent from files
  // older histds wrote: everything there is the users').
  std::set<std::string> config_synthetic;
  if (auto c = doc.find("config_synthetic_events"); c != doc.end() && c->is_array())
    for (const json& n : *c)
      if (n.is_string()) config_synthetic.insert(n.get<std::string>());
  std::vector<SavedEntry> entries;
  auto add = [&](SavedEntry::Kind kind, const json& raw, std::string event, std::string command) {
    entries.push_back(saved_entry(kind, raw, std::move(event), std::move(command), config_synthetic));
  };
  // set_event_pid first: it decides which tasks' events the rest sees.
  if (auto p = doc.find("event_pids"); p != doc.end()) {
    add(SavedEntry::Kind::EventPids, *p, "set_event_pid", "");
    entries.back().pids = pids_of(*p);
  }
  // Probe events first: a synthetic event never needs one, their triggers do.
  if (auto s = doc.find("eprobes"); s != doc.end() && s->is_array())
    for (const json& d : *s)
      add(SavedEntry::Kind::Eprobe, d, "dynamic_events", d.is_string() ? d.get<std::string>() : "");
  if (auto s = doc.find("synthetic_events"); s != doc.end() && s->is_array())
    for (const json& d : *s)
      add(SavedEntry::Kind::Synthetic, d, "synthetic_events", d.is_string() ? d.get<std::string>() : "");
  for (const json& t : doc["triggers"])
    add(SavedEntry::Kind::Trigger, t, string_at(t, "event"), string_at(t, "command"));
  if (auto s = doc.find("enabled_synthetic_events"); s != doc.end() && s->is_array())
    for (const json& n : *s) add(SavedEntry::Kind::Enabled, n, n.is_string() ? n.get<std::string>() : "", "enable");
  if (auto s = doc.find("enabled_events"); s != doc.end() && s->is_array())
    for (const json& n : *s)
      add(SavedEntry::Kind::EventEnabled, n, n.is_string() ? n.get<std::string>() : "", "enable");
  // Filters before nothing they need: an event's filter needs only its format.
  if (auto s = doc.find("event_filters"); s != doc.end() && s->is_array())
    for (const json& f : *s) add(SavedEntry::Kind::EventFilter, f, string_at(f, "event"), string_at(f, "filter"));
  return entries;
}

}  // namespace histd::registry
