// SPDX-License-Identifier: GPL-2.0-only
// Where the unit and BPF tests find their data: known to one source file
// (test_paths.cpp) alone, as compile definitions, so that no other test's
// object, nor the tests' precompiled header, depends on the checkout's
// path, and another clone's build reuses them (scripts/ccache.sh).
#pragma once

#include <filesystem>

namespace histd::testing {

// tests/unit of this checkout: fixtures, goldens (and ../fuzz/corpus).
std::filesystem::path test_data_dir();
// <build>/tests: the BPF objects the tests load as they are.
std::filesystem::path test_objects_dir();

}  // namespace histd::testing
