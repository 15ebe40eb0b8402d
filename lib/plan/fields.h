// SPDX-License-Identifier: GPL-2.0-only
// Field resolution shared by the planner's key, value and filter passes:
// maps a name to where its value comes from (record offset or special
// source), with the kernel's aliases.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "histd/catalog.h"
#include "histd/plan.h"

namespace histd::plan {

// Frames of a stacktrace key, as HIST_STACKTRACE_DEPTH.
inline constexpr uint32_t kStackDepth = 16;

struct ResolvedField {
  std::string name;  // canonical printed name ("common_cpu" for "cpu")
  FieldAccess access;
  bool readable = true;  // false for the record header fields BPF cannot read
};

std::optional<ResolvedField> resolve_field(const catalog::EventFormat& format, std::string_view name);

bool is_string_kind(catalog::FieldKind kind);

}  // namespace histd::plan
