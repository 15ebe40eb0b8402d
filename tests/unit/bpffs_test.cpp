// SPDX-License-Identifier: GPL-2.0-only
// runtime::ensure_bpffs() off /sys/fs/bpf: a pin directory on another file
// system is refused with why, and nothing is mounted. No root needed.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "histd/runtime.h"

namespace histd::runtime {
namespace {

TEST(Bpffs, APinDirectoryOnAnotherFileSystemIsRefusedSayingWhy) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "histd-bpffs-test" / "pins";
  auto r = ensure_bpffs(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Invalid);
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_EQ(r.error().context,
            "the pin directory " + dir.string() + " is not on bpffs, which histd mounts only at /sys/fs/bpf");
  EXPECT_FALSE(std::filesystem::exists(dir.parent_path()));
}

}  // namespace
}  // namespace histd::runtime
