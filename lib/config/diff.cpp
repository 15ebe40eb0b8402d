// What a reload changes: the files' declarations against what histd holds
// from the configuration (include/histd/config.h). Pure: the engine is not
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

// Later declarations of a key are problems; the first stands.
std::vector<const Declaration*> first_of_each_key(const std::vector<Declaration>& declared, Plan& plan) {
  std::vector<const Declaration*> out;
  std::map<std::string, const Declaration*> seen;
  for (const Declaration& d : declared) {
    auto [it, fresh] = seen.emplace(d.key, &d);
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

}  // namespace

Plan diff(const std::vector<Declaration>& declared, const std::vector<ConfigItem>& held_items,
          bool remove_undeclared) {
  Plan plan;
  const std::vector<const Declaration*> wanted = first_of_each_key(declared, plan);
  std::map<std::string, const Declaration*> by_key;
  for (const Declaration* d : wanted) by_key[d->key] = d;

  std::vector<Held> held;
  std::set<std::string> held_keys;
  for (const ConfigItem& item : held_items) {
    Held h;
    h.item = item;
    auto decl = declaration_of(item);
    // Text histd did not write (a hand-edited state file): it cannot be
    // declared by anything, so it goes.
    h.decl = decl ? std::move(*decl) : Declaration{item, {}, item.text, 0, "held:" + item.text, "", false, {}, {}};
    auto d = by_key.find(h.decl.key);
    if (d == by_key.end() || !held_keys.insert(h.decl.key).second) {
      h.fate = remove_undeclared ? Fate::Remove : Fate::Keep;
    } else {
      h.declared = d->second;
      const bool same = h.decl.shape == d->second->shape && item.text == d->second->item.text;
      if (!item.restored)
        h.fate = same ? Fate::Retry : Fate::Replace;
      else if (h.decl.shape != d->second->shape)
        h.fate = Fate::Replace;
      else
        h.fate = same ? Fate::Unchanged : Fate::Update;
    }
    held.push_back(std::move(h));
  }
  replace_dependents(held);

  // Removals: triggers newest first (the users of a variable before its
  // owner; enables and saved entries are listed after hist triggers), then
  // synthetic events, once nothing sits on or generates them.
  for (bool synthetic : {false, true})
    for (auto h = held.rbegin(); h != held.rend(); ++h) {
      if ((h->item.kind == ConfigItem::Kind::Synthetic) != synthetic) continue;
      if (h->fate == Fate::Remove || h->fate == Fate::Replace)
        plan.steps.push_back(Step{Step::Op::Remove, h->item, h->decl, h->fate == Fate::Replace});
    }
  std::set<const Declaration*> present;  // declared and kept as held
  for (const Held& h : held) {
    if (h.fate == Fate::Unchanged) ++plan.unchanged;
    if (h.fate == Fate::Keep) ++plan.kept;
    if (h.fate == Fate::Update) plan.steps.push_back(Step{Step::Op::Update, h.item, *h.declared, false});
    if (h.fate == Fate::Unchanged || h.fate == Fate::Update) present.insert(h.declared);
  }
  std::set<const Declaration*> replaced;
  for (const Held& h : held)
    if (h.fate == Fate::Replace) replaced.insert(h.declared);
  // Additions in the files' order, definitions first: triggers on or
  // generating a synthetic event need it defined.
  for (bool synthetic : {true, false})
    for (const Declaration* d : wanted) {
      if ((d->item.kind == ConfigItem::Kind::Synthetic) != synthetic || present.count(d)) continue;
      plan.steps.push_back(Step{Step::Op::Add, {}, *d, replaced.count(d) > 0});
    }
  return plan;
}

}  // namespace histd::config
