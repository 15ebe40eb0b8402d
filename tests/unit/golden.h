// Golden files under tests/unit/golden/<dir>/<name>. HISTD_UPDATE_GOLDEN=1
// rewrites them from the actual output (then review the diff).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace histd::testing {

inline void expect_golden(const std::string& dir, const std::string& name, const std::string& actual) {
  const auto path = histd::testing::test_data_dir() / "golden" / dir / name;
  if (std::getenv("HISTD_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << actual;
  }
  std::ifstream in(path);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden " << path << " differs; HISTD_UPDATE_GOLDEN=1 regenerates it";
}

}  // namespace histd::testing
