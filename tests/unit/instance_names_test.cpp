// SPDX-License-Identifier: GPL-2.0-only
// The directories an instance is saved and pinned in are named after its
// name's bytes in hex (lib/instances): any name the tree takes has one,
// bpffs takes it (no dot), and it reads back as the same name; nothing
// else in those directories is taken for an instance.
#include <gtest/gtest.h>

#include "histd/instances.h"

namespace histd {
namespace {

using instances::directory_name;
using instances::name_of_directory;

TEST(InstanceNames, DirectoryIsTheNameInHex) {
  EXPECT_EQ(directory_name("foo"), "i-666f6f");
  EXPECT_EQ(directory_name("ftracetest.AbC123"), "i-667472616365746573742e416243313233");
  EXPECT_EQ(directory_name("a.b"), "i-612e62");
}

TEST(InstanceNames, EveryByteRoundTrips) {
  std::string all;
  for (int c = 1; c < 256; ++c)
    if (c != '/') all += static_cast<char>(c);
  for (const std::string& name :
       {std::string("x"), std::string("ftracetest.Ab12Cd"), std::string("new\nline"), std::string(" lead and trail "),
        all.substr(0, 120), all.substr(120, 120), all.substr(240)}) {
    const std::string dir = directory_name(name);
    EXPECT_EQ(dir.find('.'), std::string::npos) << "bpffs refuses a dot: " << dir;
    EXPECT_LE(dir.size(), 255u);
    EXPECT_EQ(name_of_directory(dir), name);
  }
  EXPECT_EQ(directory_name(std::string(instances::kMaxNameBytes, 'z')).size(), 2 + 2 * instances::kMaxNameBytes);
}

TEST(InstanceNames, OtherEntriesAreNotInstances) {
  for (const char* dir : {"i-", "i-6", "i-6g", "i-6F", "x-666f6f", "triggers.json", "cache", "i-2e", "i-2e2e", "i-2f",
                          "i-612f62", "i-6100"})
    EXPECT_EQ(name_of_directory(dir), std::nullopt) << dir;
}

}  // namespace
}  // namespace histd
