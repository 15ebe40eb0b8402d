// The fixture tracefs's catalog and the command corpus (the trigger fuzzer's
// seeds): what the tests that walk every command or every fixture event share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "test_paths.h"

namespace histd::testing {

// Opened once: every test reads the same fixture files.
inline const catalog::Catalog& fixtures() {
  static const catalog::Catalog c = [] {
    auto opened = catalog::Catalog::open(histd::testing::test_data_dir() / "fixtures" / "tracefs");
    EXPECT_TRUE(opened.ok());
    return std::move(*opened);
  }();
  return c;
}

inline std::shared_ptr<const catalog::EventFormat> fixture_format(const std::string& system, const std::string& event) {
  auto f = fixtures().event(system, event);
  EXPECT_TRUE(f.ok()) << system << ":" << event;
  return f.ok() ? *f : nullptr;
}

// Every input of fuzz/corpus/<dir> (a fuzzer's seeds), sorted; the commands
// by default.
inline std::vector<std::string> command_corpus(const std::string& dir = "trigger") {
  std::vector<std::string> out;
  const auto path = histd::testing::test_data_dir() / ".." / "fuzz" / "corpus" / dir;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back(ss.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace histd::testing
