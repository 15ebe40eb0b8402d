// SPDX-License-Identifier: GPL-2.0-only
// rebuild(): an event's programs from the deployer's state, and their place
// behind its dispatcher (docs/design/bpf.md, "Program chains"). The event
// program holds its controls, its record and its first triggers that are
// not plain (variables, references or actions); an attached tracepoint's
// other triggers go, Options::triggers_per_program at a time, into programs
// of their own, each tail-calling the next slot of the dispatcher's array.
// A new trigger compiles only the program it joins, so activation stays the
// cost of one small program however many triggers the event has, and no
// program nears the kernel's 64 maps.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "hist_shared.h"

namespace histd::deploy {

namespace {

constexpr size_t kMaxGroups = HISTD_CHAIN_SLOTS - 1;

// Whether `triggers` hold one that is not plain (whose place in the order matters).
bool holds_ordered(const std::vector<Trigger*>& triggers) {
  return std::any_of(triggers.begin(), triggers.end(), [](const Trigger* t) { return !plain(t->plan); });
}

std::vector<uint64_t> serials(const std::vector<Trigger*>& triggers) {
  std::vector<uint64_t> out;
  for (const Trigger* t : triggers) out.push_back(t->serial);
  return out;
}

// Values as a read-only section of the unit holds them: the host's order,
// which is the BPF program's.
template <class T>
std::vector<uint8_t> host_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace

EventPrograms::EventPrograms(State state)
    : catalog_(state.catalog),
      compiler_(state.compiler),
      kernel_(state.kernel),
      options_(state.options),
      events_(state.events),
      synths_(state.synths),
      eprobe_filters_(state.eprobe_filters),
      objects_(state.objects),
      ring_(state.ring),
      pids_(state.pids) {}

bool EventPrograms::chained(const EventState& ev) const {
  return options_.attach && pipeline::chained_entry(catalog_.source(ev.system, ev.event)) && !eprobe_attached(ev);
}

// Which program holds each trigger: the ones it was in stay there. A new
// plain trigger (nothing depends on it, it depends on nothing) joins the
// first group with room, or a new one at the end. The others run in the
// order they came, as the kernel runs an event's hist triggers: a later one
// may read a variable an earlier one set on the same event, and their
// actions' synthetic events go to the ring in that order. So a new one that
// is not plain goes to the event program while no group holds one and it
// has room, else to the last group holding one, or after it.
Expected<EventPrograms::Layout> EventPrograms::layout(const EventState& ev,
                                                      const std::vector<Trigger*>& triggers) const {
  Layout l;
  const size_t per = options_.triggers_per_program;
  // Pins an older histd left hold a one-slot array: no chain on them.
  const bool grouped = chained(ev) && per > 0 && (!ev.attachment || ev.attachment->slot_count() >= HISTD_CHAIN_SLOTS);
  if (!grouped) {
    l.event = triggers;
    return l;
  }
  l.groups.resize(ev.groups.size());
  std::vector<Trigger*> fresh;
  for (Trigger* t : triggers) {
    if (t->group >= 0 && size_t(t->group) < l.groups.size())
      l.groups[t->group].push_back(t);
    else if (!plain(t->plan) && std::ranges::count(ev.program_triggers, t->serial))
      l.event.push_back(t);
    else
      fresh.push_back(t);
  }
  // The program the last trigger that is not plain is in: -1 the event
  // program, -2 none.
  int last = l.event.empty() ? -2 : -1;
  for (size_t g = 0; g < l.groups.size(); ++g)
    if (holds_ordered(l.groups[g])) last = int(g);
  for (Trigger* t : fresh) {
    const bool ordered = !plain(t->plan);
    if (ordered && last < 0 && l.event.size() < per) {
      l.event.push_back(t);
      last = -1;
      continue;
    }
    const size_t from = ordered ? size_t(std::max(last, 0)) : 0;
    size_t g = from;
    while (g < l.groups.size() && l.groups[g].size() >= per) ++g;
    if (g == l.groups.size()) l.groups.emplace_back();
    l.groups[g].push_back(t);
    if (ordered) last = int(g);
  }
  while (!l.groups.empty() && l.groups.back().empty()) l.groups.pop_back();
  if (l.groups.size() > kMaxGroups)
    return fail(ErrorKind::Busy, EMLINK,
                fmt::format("{}:{} would need {} programs of {} trigger{} each after its event program (at most {})",
                            ev.system, ev.event, l.groups.size(), per, per == 1 ? "" : "s", kMaxGroups));
  return l;
}

// The new programs of one rebuild, loaded, not yet installed.
struct EventPrograms::Loaded {
  std::optional<Built> event;
  std::unique_ptr<Kernel::Program> event_program;
  std::map<size_t, Built> groups;
  std::map<size_t, std::unique_ptr<Kernel::Program>> group_programs;
};

// Compiles and loads the event's programs holding `triggers`, then installs
// them behind its dispatcher. Nothing observable changes unless every step
// succeeds. In a batch, an event of plain triggers is only compiled (every
// check but the verifier's): end_batch() loads its programs.
namespace {

// An event with nothing left to run: its programs and dispatcher go.
void drop_programs(EventState& ev) {
  ev.attachment.reset();
  ev.syscall.reset();
  ev.btf.reset();
  ev.program.reset();
  ev.program_triggers.clear();
  ev.groups.clear();
  ev.source.clear();
  ev.maps_used = 0;
  ev.deferred = false;
}

}  // namespace

Expected<EventPrograms::Loaded> EventPrograms::build_changed(EventState& ev, const Layout& lay,
                                                             const std::vector<DeployedControl*>& enables,
                                                             bool event_dirty, const std::vector<size_t>& dirty) {
  Loaded loaded;
  if (event_dirty) {
    auto b = build(ev, lay.event, enables, false);
    if (!b) return unexpected(std::move(b).error());
    loaded.event = std::move(*b);
  }
  for (size_t g : dirty) {
    auto b = build(ev, lay.groups[g], {}, true);
    if (!b) return unexpected(std::move(b).error());
    loaded.groups.emplace(g, std::move(*b));
  }
  return loaded;
}

Status EventPrograms::rebuild(EventState& ev, const std::vector<Trigger*>& triggers,
                              const std::vector<DeployedControl*>& enables) {
  // Only this rebuild's builds may stop before a compile, before anything
  // of it is loaded.
  const bool stop = std::exchange(stop_next_, false);
  const bool has_record = ev.recorded() && ev.record_slot;
  if (triggers.empty() && enables.empty() && !has_record) {
    drop_programs(ev);
    return ok_status();
  }
  auto lay = layout(ev, triggers);
  if (!lay) return unexpected(std::move(lay).error());
  std::vector<size_t> dirty;
  for (size_t g = 0; g < lay->groups.size(); ++g)
    if (g >= ev.groups.size() || !ev.groups[g].program || ev.groups[g].members != serials(lay->groups[g]))
      dirty.push_back(g);
  const bool groups_changed = !dirty.empty() || lay->groups.size() < ev.groups.size();
  const bool event_changed = serials(lay->event) != ev.program_triggers;
  const bool event_has = !lay->event.empty() || !enables.empty() || has_record;
  // A change of the groups' triggers alone leaves the event program as it is.
  const bool event_dirty = event_has && (!ev.program || event_changed || !groups_changed);
  // No trigger came or went: the rebuild is for what the programs compile
  // in besides their triggers (a synthetic event's triggers that their
  // actions run, a control's targets, the record), so every group holding
  // a trigger that is not plain is built again too.
  if (!groups_changed && !event_changed)
    for (size_t g = 0; g < lay->groups.size(); ++g)
      if (holds_ordered(lay->groups[g])) dirty.push_back(g);
  stopping_ = stop && !batching_;
  if (batching_ && deferrable(ev, triggers, enables)) return defer(ev, *lay);

  auto built = build_changed(ev, *lay, enables, event_dirty, dirty);
  stopping_ = false;
  if (!built) return unexpected(std::move(built).error());
  Loaded& loaded = *built;
  const Built* any = loaded.event ? &*loaded.event : loaded.groups.empty() ? nullptr : &loaded.groups.begin()->second;
  const bool fresh_attachment = !ev.attachment;
  if (any && any->attaches) {
    auto st = attach(ev, any->parts);
    if (!st) return st;
  }
  // Nothing of the event runs yet, so no dispatcher either. One a dead
  // histd left pinned stays as it was, running its program, for the next try.
  auto unattach = [&](Status st) {
    const bool runs = ev.program || std::any_of(ev.groups.begin(), ev.groups.end(),
                                                [](const ProgramGroup& g) { return g.program != nullptr; });
    if (fresh_attachment && ev.attachment && !runs) {
      if (ev.attachment->adopted()) ev.attachment->let_go();
      ev.attachment.reset();
    }
    return st;
  };
  // Adopted pins of an older histd: one slot, no chain. Laid out again.
  if (!lay->groups.empty() && ev.attachment && ev.attachment->slot_count() < HISTD_CHAIN_SLOTS)
    return unattach(rebuild(ev, triggers, enables));
  if (auto st = load(ev, loaded); !st) return unattach(std::move(st));
  if (!restoring_ && ev.attachment) {
    auto st = install(ev, *lay, loaded, event_has);
    if (!st) return unattach(std::move(st));
  }
  commit(ev, *lay, loaded, event_has);
  return ok_status();
}

// A batch: the programs that changed are compiled now, loaded by end_batch().
// Not for the batch's own commands (set_batch_command): each program is
// compiled once, by end_batch(), rather than again with each member it
// gains. A program that then fails is built trigger by trigger
// (build_one_by_one), which names the one at fault.
Status EventPrograms::defer(EventState& ev, const Layout& lay) {
  if (ev.groups.size() < lay.groups.size()) ev.groups.resize(lay.groups.size());
  for (size_t g = 0; g < lay.groups.size() && !batch_command_; ++g) {
    ProgramGroup& group = ev.groups[g];
    const std::vector<uint64_t> members = serials(lay.groups[g]);
    if (group.built == members || (group.program && group.members == members)) continue;
    auto b = build(ev, lay.groups[g], {}, true);
    if (!b) return unexpected(std::move(b).error());
    group.built = members;
  }
  if (lay.groups.empty() && !batch_command_) {
    auto b = build(ev, lay.event, {}, false);
    if (!b) return unexpected(std::move(b).error());
  }
  for (size_t g = 0; g < lay.groups.size(); ++g)
    for (Trigger* t : lay.groups[g]) t->group = int(g);
  ev.deferred = true;
  return ok_status();
}

// The dispatcher, attached (or adopted from pins) before the first load: a
// chained program's tail calls name its array.
Status EventPrograms::attach(EventState& ev, const pipeline::EventParts& parts) {
  if (ev.attachment) return ok_status();
  // An eprobe's program runs at the tracepoint of the event it is attached to.
  const std::optional<catalog::EventId> attached = eprobe_attached(ev);
  const bool probe = parts.probe.has_value() && !attached;
  auto attachment = kernel_.attach({attached ? attached->system : ev.system, attached ? attached->name : ev.event,
                                    objects_.event_pin_base(ev, parts.syscall, parts.btf.has_value()), parts.syscall,
                                    probe, parts.btf ? parts.btf->target : std::string()});
  if (!attachment) return unexpected(std::move(attachment).error());
  ev.attachment = std::move(*attachment);
  ev.syscall = parts.syscall;
  ev.btf = parts.btf;
  return ok_status();
}

Status EventPrograms::load(EventState& ev, Loaded& loaded) {
  auto load_one = [&](const Built& b, uint32_t next_slot) -> Expected<std::unique_ptr<Kernel::Program>> {
    std::map<std::string, int> maps = b.maps;
    std::map<std::string, std::vector<uint8_t>> rodata;
    if (b.chained) {
      maps[codegen::kChainMap] = ev.attachment->slots_fd();
      rodata[codegen::kChainNextSlot] = host_bytes(std::vector<uint32_t>{next_slot});
    }
    if (!b.unit.constants.empty()) rodata[codegen::kConstantsSection] = host_bytes(b.unit.constants);
    auto program = kernel_.load(b.object, maps, rodata, b.unit.fields);
    if (!program) compiler_.evict(b.unit.source);
    return program;
  };
  if (loaded.event) {
    auto p = load_one(*loaded.event, 1);
    if (!p) return unexpected(std::move(p).error());
    loaded.event_program = std::move(*p);
  }
  for (const auto& [g, b] : loaded.groups) {
    auto p = load_one(b, uint32_t(g + 2));
    if (!p) return unexpected(std::move(p).error());
    loaded.group_programs.emplace(g, std::move(*p));
  }
  return ok_status();
}

// Group g in slot g + 1 first, the head (slot 0) next, the slots of groups
// that went last: each step leaves a chain that runs every trigger once.
// When the kernel refuses a step, the groups' slots written before it get
// their programs back: the chain runs as before the rebuild.
Status EventPrograms::install(EventState& ev, const Layout& lay, const Loaded& loaded, bool event_has) {
  Kernel::Attachment& a = *ev.attachment;
  std::vector<size_t> replaced;
  auto undo = [&](Status st) {
    for (size_t g : replaced) {
      if (g < ev.groups.size() && ev.groups[g].program)
        (void)a.install(ev.groups[g].program->event_fd(), uint32_t(g + 1));
      else
        a.clear(uint32_t(g + 1));
    }
    return st;
  };
  for (const auto& [g, p] : loaded.group_programs) {
    if (auto st = a.install(p->event_fd(), uint32_t(g + 1)); !st) return undo(std::move(st));
    replaced.push_back(g);
  }
  Status st = ok_status();
  if (event_has) {
    if (loaded.event_program) st = a.install(loaded.event_program->event_fd(), 0);
  } else if (lay.groups.empty()) {
    a.clear(0);
  } else if (ev.program || loaded.group_programs.count(0)) {
    st = a.install(
        loaded.group_programs.count(0) ? loaded.group_programs.at(0)->event_fd() : ev.groups[0].program->event_fd(), 0);
  }
  if (!st) return undo(std::move(st));
  for (size_t g = lay.groups.size(); g < ev.groups.size(); ++g) a.clear(uint32_t(g + 1));
  return ok_status();
}

void EventPrograms::commit(EventState& ev, const Layout& lay, Loaded& loaded, bool event_has) {
  if (!event_has) {
    ev.program.reset();
    ev.source.clear();
    ev.maps_used = 0;
  } else if (loaded.event_program) {
    ev.program = std::move(loaded.event_program);
    ev.source = loaded.event->unit.source + codegen::values_comment(loaded.event->unit);
    ev.maps_used = loaded.event->maps_used;
  }
  ev.program_triggers = serials(lay.event);
  ev.groups.resize(lay.groups.size());
  for (auto& [g, p] : loaded.group_programs) {
    ProgramGroup& group = ev.groups[g];
    group.program = std::move(p);
    group.members = serials(lay.groups[g]);
    const codegen::GeneratedUnit& unit = loaded.groups.at(g).unit;
    group.source = unit.source + codegen::values_comment(unit);
    group.maps_used = loaded.groups.at(g).maps_used;
  }
  for (ProgramGroup& group : ev.groups) group.built.clear();
  for (Trigger* t : lay.event) t->group = -1;
  for (size_t g = 0; g < lay.groups.size(); ++g)
    for (Trigger* t : lay.groups[g]) t->group = int(g);
  ev.deferred = false;
}

// Every program of the event's chain in its slot, and none past it: after a
// restore, which loaded them without installing (see install_restored).
Status EventPrograms::install_all(EventState& ev) {
  Kernel::Attachment& a = *ev.attachment;
  for (size_t g = 0; g < ev.groups.size(); ++g)
    if (ev.groups[g].program)
      if (auto st = a.install(ev.groups[g].program->event_fd(), uint32_t(g + 1)); !st) return st;
  Status st = ok_status();
  if (ev.program)
    st = a.install(ev.program->event_fd(), 0);
  else if (!ev.groups.empty() && ev.groups[0].program)
    st = a.install(ev.groups[0].program->event_fd(), 0);
  if (!st) return st;
  for (size_t slot = ev.groups.size() + 1; slot < a.slot_count(); ++slot) a.clear(uint32_t(slot));
  return ok_status();
}

std::vector<int> EventPrograms::test_fds(const EventState& ev) const {
  std::vector<int> fds;
  // An attached event's programs have no test entry (-1).
  auto add = [&fds](const Kernel::Program& p) {
    if (const int fd = p.test_fd(); fd >= 0) fds.push_back(fd);
  };
  if (ev.program) add(*ev.program);
  for (const ProgramGroup& g : ev.groups)
    if (g.program && !g.members.empty()) add(*g.program);
  return fds;
}

bool EventPrograms::deferrable(const EventState& ev, const std::vector<Trigger*>& triggers,
                               const std::vector<DeployedControl*>& enables) const {
  if (!catalog::source_traits(catalog_.source(ev.system, ev.event)).kernel_tracepoint) return false;
  if (!enables.empty() || ev.recorded() || eprobe_attached(ev)) return false;
  return std::all_of(triggers.begin(), triggers.end(), [](const Trigger* t) { return plain(t->plan); });
}

}  // namespace histd::deploy
