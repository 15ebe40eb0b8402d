// SPDX-License-Identifier: GPL-2.0-only
#include "histd/diagnostic.h"

#include <gtest/gtest.h>

namespace histd {
namespace {

TEST(Diagnostic, KernelTextsKeepTheirWording) {
  EXPECT_EQ(error_text(ErrorCode::FieldNotFound), "Couldn't find field");
  EXPECT_EQ(error_text(ErrorCode::TooManySortFields), "Too many sort fields (Max = 2)");
  EXPECT_EQ(error_name(ErrorCode::InvalidSortModifier), "InvalidSortModifier");
}

TEST(Diagnostic, ErrorLogEntryPutsCaretUnderToken) {
  Diagnostic d{ErrorCode::FieldNotFound, Span{10, 14}, "hist:keys=junk", ""};
  EXPECT_EQ(format_error_log_entry("hist:sched:sched_switch", d),
            "hist:sched:sched_switch: error: Couldn't find field\n"
            "  Command: hist:keys=junk\n"
            "                     ^\n");
}

}  // namespace
}  // namespace histd
