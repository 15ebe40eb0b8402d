// SPDX-License-Identifier: GPL-2.0-only
// Shared by the synthetic event tests: definitions parsed as they must.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "histd/synth.h"

namespace histd::synth {

inline SynthDefinition define(const std::string& line) {
  auto r = parse_synth_command(line);
  EXPECT_TRUE(r.ok()) << line << ": " << (r.ok() ? "" : r.error().message());
  if (!r.ok()) return {};
  EXPECT_FALSE(r->remove) << line;
  return r->definition;
}

// The one field of "e <decl>".
inline SynthField field_of(const std::string& decl) {
  SynthDefinition d = define("e " + decl);
  EXPECT_EQ(d.fields.size(), 1u) << decl;
  return d.fields.empty() ? SynthField{} : d.fields[0];
}

// A definition of `n` u64 fields.
inline std::string many_fields(size_t n) {
  std::string s = "wide";
  for (size_t i = 0; i < n; ++i) s += (i ? "; u64 f" : " u64 f") + std::to_string(i);
  return s;
}

}  // namespace histd::synth
