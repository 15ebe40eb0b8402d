// SPDX-License-Identifier: GPL-2.0-only
// HistPlan's printing and comparison: the trigger line the kernel prints
// (event_hist_trigger_print) and the key that matches a trigger (TriggerKey).
#include "histd/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace histd::plan {

namespace {

std::string trigger_text_with(const HistPlan& p, bool with_size) {
  std::string s = "hist:";
  if (p.name) s += "name=" + *p.name + ":";
  s += "keys=";
  for (size_t i = 0; i < p.keys.size(); ++i) {
    if (i) s += ',';
    s += p.keys[i].printed;
  }
  s += ":vals=";
  bool first = true;
  for (size_t i = 0; i < p.vals.size(); ++i) {
    if (i == 0 && p.nohitcount) continue;
    if (!first) s += ',';
    s += p.vals[i].printed;
    first = false;
  }
  for (size_t i = 0; i < p.vars.size(); ++i) {
    s += i == 0 ? ':' : ',';
    s += p.vars[i].name + "=" + p.vars[i].expr.text;
  }
  s += ":sort=";
  for (size_t i = 0; i < p.sort.size(); ++i) {
    if (i) s += ',';
    s += p.sort[i].printed;
  }
  if (with_size) s += fmt::format(":size={}", p.max_entries);
  if (p.uses_timestamp()) s += ":clock=" + p.clock;
  if (p.nohitcount) s += ":nohitcount";
  for (const ActionPlan& a : p.actions) s += ":" + a.printed;
  if (p.filter) s += " if " + p.filter_text;
  return s;
}

}  // namespace

std::string HistPlan::trigger_text() const { return trigger_text_with(*this, true); }

std::string HistPlan::identity() const { return trigger_text_with(*this, false); }

TriggerKey trigger_key(const HistPlan& p) {
  TriggerKey k;
  k.system = p.system;
  k.event = p.event;
  k.name = p.name;
  for (const KeyField& f : p.keys) k.keys.push_back({f.name, f.transform, f.buckets, f.display});
  // vals[0] is always the hitcount; nohitcount hides it.
  for (const ValField& v : p.vals) k.vals.push_back(v.printed);
  k.nohitcount = p.nohitcount;
  for (const Variable& v : p.vars) k.vars.emplace_back(v.name, v.expr.text);
  for (const SortKey& s : p.sort) k.sort.push_back(s.column);
  if (p.uses_timestamp()) k.clock = p.clock;
  for (const ActionPlan& a : p.actions) k.actions.push_back(a.printed);
  if (p.filter) k.filter = p.filter_text;
  return k;
}

namespace {

// "<length>:<bytes>", so that no string can end early or run into the next.
void put(std::string& out, std::string_view s) { out += fmt::format("{}:{}", s.size(), s); }
template <typename Number>
void put_number(std::string& out, Number n) {
  out += fmt::format("{};", static_cast<uint64_t>(n));
}

}  // namespace

RegisteredVar registered_var(const HistPlan& plan, const Variable& v, uint64_t owner) {
  RegisteredVar rv;
  rv.system = plan.system;
  rv.event = plan.event;
  rv.name = v.name;
  rv.owner = owner;
  rv.slot = v.slot;
  rv.key_size = plan.key_size;
  rv.record_size = plan.var_record_size;
  rv.record_offset = plan.record_offset();
  rv.blob_offset = v.blob_offset;
  rv.blob_size = v.blob_size;
  rv.sole = plan.sole_variable();
  rv.type = v.expr;
  rv.type.ops.clear();  // only the type facts travel
  rv.type.root = -1;
  rv.type.blob_ref = -1;
  return rv;
}

std::string encode(const TriggerKey& k) {
  // Each part behind a letter and each list behind its count: a field of
  // one part can never be read as another's.
  std::string out = "E";
  put(out, k.system);
  put(out, k.event);
  out += k.name ? "N" : "n";
  if (k.name) put(out, *k.name);
  out += "K";
  put_number(out, k.keys.size());
  for (const TriggerKey::Key& f : k.keys) {
    put(out, f.name);
    put_number(out, f.transform);
    put_number(out, f.buckets);
    put_number(out, f.display);
  }
  out += k.nohitcount ? "V!" : "V";
  put_number(out, k.vals.size());
  for (const std::string& v : k.vals) put(out, v);
  out += "R";
  put_number(out, k.vars.size());
  for (const auto& [name, expr] : k.vars) {
    put(out, name);
    put(out, expr);
  }
  out += "S";
  put_number(out, k.sort.size());
  for (const table::SortColumn& c : k.sort) {
    put_number(out, c.kind);
    put_number(out, c.index);
    put_number(out, c.descending);
  }
  out += "C";
  put(out, k.clock);
  out += "A";
  put_number(out, k.actions.size());
  for (const std::string& a : k.actions) put(out, a);
  out += k.filter ? "F" : "f";
  if (k.filter) put(out, *k.filter);
  return out;
}

table::AddressKind address_kind(const FieldAccess& field) {
  return field.kernel_address ? table::AddressKind::Pointer : table::address_kind(field.type);
}

table::AddressKind address_kind(const TypedExpr& value) {
  return value.kernel_address ? table::AddressKind::Pointer : table::address_kind(value.type);
}

table::Table HistPlan::columns() const {
  table::Table t;
  for (const KeyField& k : keys) {
    table::KeyColumn c;
    c.name = k.name;
    c.offset = k.offset;
    c.size = k.size;
    c.is_signed = k.access.is_signed && k.transform == KeyTransform::None;
    c.display = k.display;
    c.buckets = k.buckets;
    c.field_bits = std::clamp<uint32_t>(k.access.size * 8, 8, 64);
    // A stack, or a code address shown as a symbol, is a kernel address
    // whatever its field's type; a log2 of one is not.
    const modifier::ModifierInfo* shown_as = modifier::by_key_display(k.display);
    if (k.display == table::KeyDisplay::Stacktrace || (shown_as && shown_as->key_is_address))
      c.address = table::AddressKind::Pointer;
    else if (k.transform == KeyTransform::None || k.transform == KeyTransform::Buckets)
      c.address = address_kind(k.access);
    t.keys.push_back(std::move(c));
  }
  for (const ValField& v : vals) {
    // As the kernel, computed values are summed but not printed; a
    // variable's value is.
    const bool printed = !v.expr || v.expr->ops.at(static_cast<size_t>(v.expr->root)).kind == ExprOp::Kind::Ref ||
                         v.expr->ops.at(static_cast<size_t>(v.expr->root)).kind == ExprOp::Kind::Field;
    t.vals.push_back(
        table::ValColumn{v.name, v.display, printed, v.expr ? address_kind(*v.expr) : address_kind(v.access)});
  }
  for (const SortKey& s : sort) t.sort.push_back(s.column);
  t.key_size = key_size;
  t.nohitcount = nohitcount;
  return t;
}

bool HistPlan::saves_comm() const {
  for (const KeyField& k : keys)
    if (table::key_traits(k.display).needs_comm) return true;
  return false;
}

bool HistPlan::uses_timestamp() const {
  for (const KeyField& k : keys)
    if (k.access.source == Source::Timestamp) return true;
  for (const ValField& v : vals)
    if (v.access.source == Source::Timestamp || (v.expr && v.expr->timestamp)) return true;
  for (const Variable& v : vars)
    if (v.expr.timestamp) return true;
  for (const ActionPlan& a : actions)
    for (const ActionParam& p : a.params)
      if (p.value.timestamp) return true;
  return false;
}

bool HistPlan::table_compatible(const HistPlan& other) const {
  if (keys.size() != other.keys.size() || vals.size() != other.vals.size()) return false;
  for (size_t i = 0; i < keys.size(); ++i) {
    const KeyField& a = keys[i];
    const KeyField& b = other.keys[i];
    if (a.name != b.name || a.size != b.size || a.display != b.display || a.access.is_signed != b.access.is_signed ||
        a.transform != b.transform || a.buckets != b.buckets)
      return false;
  }
  for (size_t i = 0; i < vals.size(); ++i)
    if (vals[i].name != other.vals[i].name || vals[i].display != other.vals[i].display) return false;
  // Sizes need not agree: a named table keeps the size of its first trigger.
  return sort == other.sort && nohitcount == other.nohitcount;
}

std::string describe(const HistPlan& p) {
  std::string s = fmt::format("trigger: {}\nevent: {}:{}\n", p.trigger_text(), p.system, p.event);
  s += fmt::format("table: {} entries, key {} bytes, value {} bytes{}\n", p.max_entries, p.key_size, p.value_size(),
                   p.name ? " (named " + *p.name + ")" : "");
  auto source = [](const FieldAccess& a) -> std::string {
    switch (a.source) {
      case Source::Record:
        return fmt::format("record offset {} size {} {}", a.offset, a.size, a.is_signed ? "signed" : "unsigned");
      case Source::CommonPid:
        return "current pid";
      case Source::CommonCpu:
        return "current cpu";
      case Source::Timestamp:
        return "timestamp";
      case Source::Hitcount:
        return "hitcount";
      case Source::CurrentComm:
        return "current comm";
      case Source::Stacktrace:
        return "kernel stack";
    }
    return "?";
  };
  for (size_t i = 0; i < p.keys.size(); ++i)
    s += fmt::format("key {}: {} <- {}; key offset {} size {}\n", i, p.keys[i].printed, source(p.keys[i].access),
                     p.keys[i].offset, p.keys[i].size);
  for (size_t i = 0; i < p.vals.size(); ++i)
    s += fmt::format("val {}: {} <- {}\n", i, p.vals[i].printed, source(p.vals[i].access));
  for (const SortKey& k : p.sort) s += fmt::format("sort: {}\n", k.printed);
  if (p.hot_slots > 0) s += fmt::format("hot slots: {} per CPU, in front of the table\n", p.hot_slots);
  if (p.filter) s += fmt::format("filter: {} ({} terms)\n", p.filter_text, p.filter->terms.size());
  return s;
}

}  // namespace histd::plan
