// SPDX-License-Identifier: GPL-2.0-only
// What a reload changes: the files' declarations against what histd holds
// from the configuration (histd/config.h). Pure: the engine is not
// consulted, so the plan is the same for the same input.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "histd/config.h"

namespace histd::config {

namespace {

using engine::ConfigItem;

// What happens to one held item. Retry: saved but not restored, declared
// the same: applied again from the saved entry (its pins, its pause).
enum class Fate { Unchanged, Update, Replace, Remove, Keep, Retry };

struct Held {
  ConfigItem item;
  Declaration decl;  // as it was declared (its origin unknown)
  Fate fate = Fate::Remove;
  const Declaration* declared = nullptr;  // the declaration of the same key
};

bool intersects(const std::vector<std::string>& uses, const std::set<std::string>& gone) {
  return std::any_of(uses.begin(), uses.end(), [&](const std::string& u) { return gone.count(u) > 0; });
}

// What makes two declarations one: the identity when the engine gave one.
// The prefix cannot begin a key (an event's name, "synthetic:", "held:").
std::string same_as(const Declaration& d) { return d.identity.empty() ? d.key : "(identity) " + d.identity; }

// Later declarations of a trigger are problems; the first stands.
std::vector<const Declaration*> first_of_each_key(const std::vector<Declaration>& declared, Plan& plan) {
  std::vector<const Declaration*> out;
  std::map<std::string, const Declaration*> seen;
  for (const Declaration& d : declared) {
    auto [it, fresh] = seen.emplace(same_as(d), &d);
    if (fresh) {
      out.push_back(&d);
      continue;
    }
    Problem p;
    p.origin = d.origin;
    p.diagnostic = Diagnostic{ErrorCode::ConfigDuplicate, Span{0, static_cast<uint32_t>(d.item.text.size())},
                              d.item.text, "first at " + it->second->origin.where()};
    p.line = d.line;
    p.column = d.column;
    plan.problems.push_back(std::move(p));
  }
  return out;
}

// The declaration of each held item: the one of its identity, then, for
// those left, the one of its key (a held item or a declaration without an
// identity: the words are all that can be compared). Each declaration is
// one held item's at most; a second item of it goes.
void match(std::vector<Held>& held, const std::vector<const Declaration*>& wanted) {
  std::map<std::string, const Declaration*> by_identity, by_key;
  for (const Declaration* d : wanted) {
    if (!d->identity.empty()) by_identity.emplace(d->identity, d);
    by_key.emplace(d->key, d);
  }
  std::set<const Declaration*> taken;
  for (bool by_words : {false, true})
    for (Held& h : held) {
      if (h.declared || (!by_words && h.decl.identity.empty())) continue;
      const auto& index = by_words ? by_key : by_identity;
      auto d = index.find(by_words ? h.decl.key : h.decl.identity);
      if (d != index.end() && taken.insert(d->second).second) h.declared = d->second;
    }
}

// A held item whose declaration depends on something removed or replaced
// is replaced too (when still declared): its program was built against it.
void replace_dependents(std::vector<Held>& held) {
  for (bool grew = true; grew;) {
    grew = false;
    std::set<std::string> gone;
    for (const Held& h : held)
      if (h.fate == Fate::Replace || h.fate == Fate::Remove)
        gone.insert(h.decl.provides.begin(), h.decl.provides.end());
    for (Held& h : held) {
      if ((h.fate != Fate::Unchanged && h.fate != Fate::Update) || !intersects(h.decl.uses, gone)) continue;
      h.fate = Fate::Replace;
      grew = true;
    }
  }
}

// Each held item with the declaration it was made from.
std::vector<Held> held_of(const std::vector<ConfigItem>& held_items) {
  std::vector<Held> held;
  for (const ConfigItem& item : held_items) {
    Held h;
    h.item = item;
    auto decl = declaration_of(item);
    if (decl) {
      h.decl = std::move(*decl);
    } else {
      // Text histd did not write (a hand-edited state file): it cannot be
      // declared by anything, so it goes.
      h.decl.item = item;
      h.decl.line = item.text;
      h.decl.key = "held:" + item.text;
    }
    held.push_back(std::move(h));
  }
  return held;
}

Fate fate_of(const Held& h, bool remove_undeclared) {
  const ConfigItem& item = h.item;
  if (!h.declared) return remove_undeclared ? Fate::Remove : Fate::Keep;
  const Declaration* d = h.declared;
  const bool same = h.decl.shape == d->shape && item.text == d->item.text;
  if (!item.restored) return same ? Fate::Retry : Fate::Replace;
  if (h.decl.shape != d->shape) return Fate::Replace;
  return same ? Fate::Unchanged : Fate::Update;
}

// Removals: triggers newest first (the users of a variable before its
// owner; enables and saved entries are listed after hist triggers), then
// synthetic events, once nothing sits on or generates them.
void plan_removals(const std::vector<Held>& held, Plan& plan) {
  for (bool synthetic : {false, true})
    for (auto h = held.rbegin(); h != held.rend(); ++h) {
      if ((h->item.kind == ConfigItem::Kind::Synthetic) != synthetic) continue;
      if (h->fate == Fate::Remove || h->fate == Fate::Replace)
        plan.steps.push_back(Step{Step::Op::Remove, h->item, h->decl, h->fate == Fate::Replace, false});
    }
}

// Counts what stays and plans the updates; returns the declarations that
// are held already, after them.
std::set<const Declaration*> plan_updates(const std::vector<Held>& held, Plan& plan) {
  std::set<const Declaration*> present;
  for (const Held& h : held) {
    if (h.fate == Fate::Unchanged) ++plan.unchanged;
    if (h.fate == Fate::Keep) ++plan.kept;
    if (h.fate == Fate::Update)
      plan.steps.push_back(Step{Step::Op::Update, h.item, *h.declared, false, h.decl.paused == h.declared->paused});
    if (h.fate == Fate::Unchanged || h.fate == Fate::Update) present.insert(h.declared);
  }
  return present;
}

// Additions in the files' order, definitions first: triggers on or
// generating a synthetic event need it defined.
void plan_additions(const std::vector<Held>& held, const std::vector<const Declaration*>& wanted,
                    const std::set<const Declaration*>& present, Plan& plan) {
  std::set<const Declaration*> replaced;
  for (const Held& h : held)
    if (h.fate == Fate::Replace) replaced.insert(h.declared);
  for (bool synthetic : {true, false})
    for (const Declaration* d : wanted) {
      if ((d->item.kind == ConfigItem::Kind::Synthetic) != synthetic || present.count(d)) continue;
      plan.steps.push_back(Step{Step::Op::Add, {}, *d, replaced.count(d) > 0, false});
    }
}

}  // namespace

Plan diff(const std::vector<Declaration>& declared, const std::vector<ConfigItem>& held_items, bool remove_undeclared) {
  Plan plan;
  const std::vector<const Declaration*> wanted = first_of_each_key(declared, plan);
  std::vector<Held> held = held_of(held_items);
  match(held, wanted);
  for (Held& h : held) h.fate = fate_of(h, remove_undeclared);
  replace_dependents(held);
  plan_removals(held, plan);
  const std::set<const Declaration*> present = plan_updates(held, plan);
  plan_additions(held, wanted, present, plan);
  return plan;
}

}  // namespace histd::config
