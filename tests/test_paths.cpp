// SPDX-License-Identifier: GPL-2.0-only
#include "test_paths.h"

namespace histd::testing {

std::filesystem::path test_data_dir() { return HISTD_TEST_DATA; }

std::filesystem::path test_objects_dir() {
#ifdef HISTD_TEST_OBJECTS
  return HISTD_TEST_OBJECTS;
#else
  return {};  // the unit tests load none
#endif
}

}  // namespace histd::testing
