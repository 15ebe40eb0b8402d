// SPDX-License-Identifier: GPL-2.0-only
// Keys as labels and histogram buckets, shared by the metrics and the page.
#include "render/labels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "histd/modifier.h"
#include "render/key_formats.h"

namespace histd::render {

std::string valid_utf8(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string key_caption(const table::KeyColumn& k, const table::Row& r, const Resolver& res) {
  const KeyValue v(k, r, res, Options{true});
  const KeyFormat& f = key_format(k.display);
  return f.companion ? fmt::format("{} [{}]", f.companion(v), f.label(v)) : f.label(v);
}

std::optional<size_t> histogram_key(const table::Table& t) {
  std::optional<size_t> found;
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (!table::key_traits(t.keys[i].display).bucketed) continue;
    if (found) return std::nullopt;
    found = i;
  }
  return found;
}

// One definition of what a bucket holds: modifier::key_bounds.
BucketBounds bucket_bounds(const table::KeyColumn& k, uint64_t v) {
  const modifier::ModifierInfo* m = modifier::by_key_display(k.display);
  const modifier::KeyBounds b = modifier::key_bounds(m ? m->transform : modifier::KeyTransform::None, k.buckets, v);
  return {static_cast<double>(b.lower), static_cast<double>(b.upper)};
}

std::string bucket_label(const table::KeyColumn& k, uint64_t v) { return key_format(k.display).bucket(k, v); }

std::string bound_text(double v) {
  if (v < 9007199254740992.0) return fmt::format("{}", static_cast<uint64_t>(v));  // exact below 2^53
  return fmt::format("{}", v);
}

uint32_t fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

}  // namespace histd::render
