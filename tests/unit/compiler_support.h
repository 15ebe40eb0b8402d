// SPDX-License-Identifier: GPL-2.0-only
// Shared by the compiler tests: generated units, and the paths of this
// build with another (or no) resident compiler.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "histd/pipeline.h"
#include "histd/runtime.h"
#include "test_support.h"

namespace histd::runtime {

// The unit histd generates for `cmd` on syscalls:sys_enter_write.
inline std::string unit(const std::string& cmd) {
  auto r = pipeline::compile(cmd, testing::sys_enter_write());
  EXPECT_TRUE(r.ok()) << cmd;
  return r.ok() ? r->unit.source : "";
}

// This build's paths; `server` replaces histd-cc (an empty path: none).
inline BpfPaths paths_with(std::optional<std::filesystem::path> server = std::nullopt) {
  auto p = find_bpf_paths();
  EXPECT_TRUE(p.ok());
  BpfPaths paths = p.ok() ? *p : BpfPaths{};
  if (server) paths.cc_server = *server;
  return paths;
}

// A temporary directory, removed with what is in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/histd-cc-test-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace histd::runtime
