// SPDX-License-Identifier: GPL-2.0-only
// A unit's numeric record loads by field name instead of offset (the
// Emitter's texts spell HISTD_LOAD_<S|U><bits>(rec, <offset>u); here they
// become HISTD_FIELD_<S|U><bits>(rec, f<n>) over the unit's struct
// histd_rec). Done on the finished text, where every load is, rather than
// in each of the places that write one.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "codegen/emit.h"

namespace histd::codegen {

namespace detail {

namespace {

constexpr std::string_view kLoad = "HISTD_LOAD_";
constexpr std::string_view kBase = "(rec, ";

// Reads the decimal number at `s[pos]` on; npos when there is none.
size_t read_number(std::string_view s, size_t pos, uint32_t& value) {
  size_t end = pos;
  value = 0;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) && end - pos < 9)
    value = value * 10 + static_cast<uint32_t>(s[end++] - '0');
  return end == pos ? std::string_view::npos : end;
}

// One load at `pos` ("HISTD_LOAD_U64(rec, 32u)"): its field and the
// position after it, or nullopt for anything else.
std::optional<std::pair<RecordField, size_t>> parse_load(std::string_view s, size_t pos) {
  size_t p = pos + kLoad.size();
  if (p >= s.size() || (s[p] != 'S' && s[p] != 'U')) return std::nullopt;
  RecordField f;
  f.is_signed = s[p] == 'S';
  uint32_t bits = 0;
  p = read_number(s, p + 1, bits);
  if (p == std::string_view::npos || (bits != 8 && bits != 16 && bits != 32 && bits != 64)) return std::nullopt;
  f.size = bits / 8;
  if (s.substr(p, kBase.size()) != kBase) return std::nullopt;
  p = read_number(s, p + kBase.size(), f.offset);
  if (p == std::string_view::npos || s.substr(p, 2) != "u)") return std::nullopt;
  return std::make_pair(f, p + 2);
}

}  // namespace

std::vector<RecordField> lift_record_fields(std::string& text) {
  std::vector<RecordField> fields;
  std::string out;
  size_t done = 0;
  for (size_t pos = text.find(kLoad); pos != std::string::npos; pos = text.find(kLoad, pos + 1)) {
    auto load = parse_load(text, pos);
    if (!load) continue;
    const RecordField& f = load->first;
    auto same = [&](const RecordField& g) {
      return g.offset == f.offset && g.size == f.size && g.is_signed == f.is_signed;
    };
    size_t n = static_cast<size_t>(std::find_if(fields.begin(), fields.end(), same) - fields.begin());
    if (n == fields.size()) fields.push_back(f);
    out.append(text, done, pos - done);
    out += fmt::format("HISTD_FIELD_{}{}(rec, f{})", f.is_signed ? 'S' : 'U', f.size * 8, n);
    done = load->second;
    pos = done - 1;
  }
  if (fields.empty()) return fields;
  out.append(text, done, std::string::npos);
  text = std::move(out);
  return fields;
}

std::string record_struct(const std::vector<RecordField>& fields) {
  if (fields.empty()) return {};
  std::string out = "struct histd_rec {\n";
  for (size_t n = 0; n < fields.size(); ++n)
    out += fmt::format("  __{}{} f{};\n", fields[n].is_signed ? 's' : 'u', fields[n].size * 8, n);
  return out + "} __attribute__((preserve_access_index));\n\n";
}

}  // namespace detail

std::string record_fields_comment(const std::vector<RecordField>& fields) {
  if (fields.empty()) return {};
  std::string out = "/* histd: struct histd_rec:";
  for (size_t n = 0; n < fields.size(); ++n) out += fmt::format(" f{} at {}", n, fields[n].offset);
  return out + " */\n";
}

std::string values_comment(const GeneratedUnit& unit) {
  return constants_comment(unit.constants) + record_fields_comment(unit.fields);
}

}  // namespace histd::codegen
