// SPDX-License-Identifier: GPL-2.0-only
#include "fs/enable_files.h"

#include <cerrno>
#include <set>
#include <vector>

#include "histd/text.h"

namespace histd::fs {

namespace {

// Events whose enable file the kernel does not have (ftrace's own, such as
// trace_marker's ftrace:print): never enabled, skipped by wildcards.
bool has_enable(const engine::Engine& engine, const std::string& system, const std::string& event) {
  return catalog::source_traits(engine.catalog().source(system, event)).has_enable_file;
}

// Every event an enable file or a set_event word may name.
std::vector<catalog::EventId> all_events(const Namespace& ns, engine::Engine& engine) {
  std::vector<catalog::EventId> out;
  for (const std::string& system : ns.systems(engine))
    for (const std::string& event : ns.events_of(engine, system))
      if (has_enable(engine, system, event)) out.push_back(catalog::EventId{system, event});
  return out;
}

// Sets each of `events`; the first refusal is the answer, the others are
// still set (as the kernel's __ftrace_set_clr_event_nolock()).
int set_all(engine::Engine& engine, const std::vector<catalog::EventId>& events, bool on) {
  int first = 0;
  for (const catalog::EventId& id : events) {
    if (engine.reads().enabled(id.system, id.name) == on) continue;
    auto r = engine.set_enabled(id.system, id.name, on);
    if (!r && first == 0) first = -r.error().error.err;
  }
  return first;
}

std::vector<catalog::EventId> named_by(const Namespace& ns, engine::Engine& engine, const Node& n) {
  if (!n.event.empty()) return {catalog::EventId{n.system, n.event}};
  std::vector<catalog::EventId> out;
  for (const catalog::EventId& id : all_events(ns, engine))
    if (n.system.empty() || id.system == n.system) out.push_back(id);
  return out;
}

}  // namespace

std::string enable_state(const Namespace& ns, const Node& n) {
  const auto engine = ns.engine(n);
  if (!engine) return "0\n";  // its instance was removed
  if (!n.event.empty()) {
    // "1" or "0", and a '*' while enable_event/disable_event triggers turn
    // it on and off (the kernel's soft mode).
    const deploy::EventEnableState st = engine->reads().enable_state(n.system, n.event);
    return std::string(st.on ? "1" : "0") + (st.soft ? "*" : "") + "\n";
  }
  size_t on = 0, total = 0;
  const std::set<catalog::EventId> enabled = [&] {
    const auto list = engine->reads().enabled_events();
    return std::set<catalog::EventId>(list.begin(), list.end());
  }();
  for (const catalog::EventId& id : named_by(ns, *engine, n)) {
    ++total;
    on += enabled.count(id);
  }
  if (on == 0) return "0\n";
  return on == total ? "1\n" : "X\n";
}

int write_enable(const Namespace& ns, const Node& n, bool on) {
  const auto engine = ns.engine(n);
  if (!engine) return -ENOENT;
  if (!n.event.empty() && !has_enable(*engine, n.system, n.event)) return -EINVAL;
  return set_all(*engine, named_by(ns, *engine, n), on);
}

std::string set_event_text(engine::Engine& engine) {
  std::string out;
  for (const catalog::EventId& id : engine.reads().enabled_events()) out += id.system + ":" + id.name + "\n";
  return out;
}

namespace {

// The blank-separated words of a write, as trace_get_user() takes them.
std::vector<std::string_view> words(std::string_view data) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < data.size()) {
    while (i < data.size() && is_space(data[i])) ++i;
    const size_t start = i;
    while (i < data.size() && !is_space(data[i])) ++i;
    if (i > start) out.push_back(data.substr(start, i - start));
  }
  return out;
}

}  // namespace

int write_set_event(const Namespace& ns, const Node& n, std::string_view data) {
  const auto engine = ns.engine(n);
  if (!engine) return -ENOENT;
  const std::vector<catalog::EventId> events = all_events(ns, *engine);
  for (std::string_view word : words(data)) {
    const bool on = !word.starts_with('!');
    if (!on) word.remove_prefix(1);
    // <system>:<event>, either part empty or "*" for any; a bare name
    // matches an event or a system of that name.
    std::string_view match = word, sub, event;
    bool any_sub = true, any_event = true;
    if (const size_t colon = word.find(':'); colon != std::string_view::npos) {
      match = {};
      sub = word.substr(0, colon);
      event = word.substr(colon + 1);
      any_sub = sub.empty() || sub == "*";
      any_event = event.empty() || event == "*";
    }
    std::vector<catalog::EventId> named;
    for (const catalog::EventId& id : events) {
      if (!match.empty() && match != id.name && match != id.system) continue;
      if (!any_sub && sub != id.system) continue;
      if (!any_event && event != id.name) continue;
      named.push_back(id);
    }
    // The first word that fails ends the write, as ftrace_event_write().
    const int r = named.empty() ? -EINVAL : set_all(*engine, named, on);
    if (r < 0) return r;
  }
  return 0;
}

int clear_set_event(const Namespace& ns, const Node& n) {
  const auto engine = ns.engine(n);
  if (!engine) return -ENOENT;
  const auto enabled = engine->reads().enabled_events();
  return set_all(*engine, enabled, false);
}

}  // namespace histd::fs
