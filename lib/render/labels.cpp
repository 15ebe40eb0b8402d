// SPDX-License-Identifier: GPL-2.0-only
// Keys as labels and histogram buckets, shared by the metrics and the page.
#include "render/labels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "histd/modifier.h"

namespace histd::render {

using table::KeyDisplay;

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

std::string key_label(const table::KeyColumn& k, const table::Row& r, const Resolver& res) {
  const Options hide{true};
  if (k.display == KeyDisplay::String) {
    const size_t end = std::min<size_t>(k.offset + k.size, r.key.size());
    const char* s = reinterpret_cast<const char*>(r.key.data() + k.offset);
    return std::string(s, strnlen(s, end - k.offset));
  }
  if (k.display == KeyDisplay::Stacktrace) {
    std::string out;
    for_each_shown_frame(res, k.size / 8, [&](size_t i) { return r.key_number(k.offset + 8 * i); },
                         [&](uint64_t f) {
                           const std::string s = res.symbol_offset(f);
                           if (!out.empty()) out += ';';
                           out += s.empty() ? "?" : s;
                         });
    return out;
  }
  const uint64_t addr = r.key_number(k.offset);
  const uint64_t v = shown(addr, k.address, hide);
  switch (k.display) {
    case KeyDisplay::Hex:
      return fmt::format("{:x}", v);
    case KeyDisplay::Sym:
    case KeyDisplay::SymOffset: {
      const std::string s = k.display == KeyDisplay::Sym ? res.symbol(addr) : res.symbol_offset(addr);
      return s.empty() ? "unknown" : s;
    }
    case KeyDisplay::Execname:
      return std::string(r.comm);
    case KeyDisplay::Syscall: {
      const std::string s = res.syscall_name(v);
      return s.empty() ? "unknown_syscall" : s;
    }
    case KeyDisplay::Log2:
    case KeyDisplay::Buckets:
      return bucket_label(k, v);
    default:
      return k.is_signed ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v);
  }
}

std::optional<size_t> histogram_key(const table::Table& t) {
  std::optional<size_t> found;
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (t.keys[i].display != KeyDisplay::Log2 && t.keys[i].display != KeyDisplay::Buckets) continue;
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

std::string bucket_label(const table::KeyColumn& k, uint64_t v) {
  if (k.display == KeyDisplay::Log2) return fmt::format("2^{}", v);
  return fmt::format("{}-{}", v, v + k.buckets - 1);
}

std::string bound_text(double v) {
  if (v < 9007199254740992.0) return fmt::format("{}", static_cast<uint64_t>(v));  // exact below 2^53
  return fmt::format("{}", v);
}

}  // namespace histd::render
