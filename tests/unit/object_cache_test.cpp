// SPDX-License-Identifier: GPL-2.0-only
// The object cache loads only what histd wrote: an object modified or
// planted in it, a symlink in place of one, a file of another user are
// refused, evicted and compiled again; the unit still compiles.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler_support.h"
#include "histd/digest.h"
#include "histd/runtime.h"
#include "runtime/object_cache.h"

namespace histd::runtime {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The one cached entry's name (the .o without its extension).
fs::path only_object(const fs::path& cache) {
  fs::path found;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".o") {
      EXPECT_TRUE(found.empty()) << "more than one object";
      found = e.path();
    }
  return found;
}

class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Clang only: every compile is counted in one place.
    src_ = unit("hist:keys=fd:vals=count");
    Compiler c(paths_with(fs::path()), cache());
    auto obj = c.compile(src_);
    ASSERT_TRUE(obj.ok()) << obj.error().context;
    good_ = *obj;
    obj_path_ = only_object(cache());
    ASSERT_FALSE(obj_path_.empty());
  }
  fs::path cache() const { return dir_.path() / "cache"; }
  // Compiles src_ again; how many compiles that took (0: a cache hit). What
  // it hands back is never the bytes a test put in the cache (`tampered`),
  // and is what the cache holds afterwards. (Each clang run makes other
  // bytes: its temporary file's name is in the debug info.)
  uint64_t compiles_for_next(bool stored = true) {
    Compiler c(paths_with(fs::path()), cache());
    auto obj = c.compile(src_);
    EXPECT_TRUE(obj.ok()) << obj.error().context;
    if (obj.ok()) {
      EXPECT_EQ(obj->rfind("\x7f"
                           "ELF",
                           0),
                0u);
      EXPECT_FALSE(*obj == tampered_) << "the tampered object was handed back";
      if (stored) {
        EXPECT_TRUE(*obj == slurp(obj_path_)) << "the cache does not hold what was handed back";
      }
    }
    return c.stats().by_clang;
  }
  TempDir dir_;
  std::string src_, good_, tampered_;
  fs::path obj_path_;
};

TEST_F(ObjectCacheTest, HitIsVerifiedAndUsed) {
  EXPECT_EQ(slurp(fs::path(obj_path_).replace_extension(".sha256")), sha256_hex(good_) + "\n");
  struct stat st {};
  ASSERT_EQ(stat(cache().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(compiles_for_next(), 0u);
}

TEST_F(ObjectCacheTest, ModifiedObjectIsCompiledAgain) {
  tampered_ = good_;
  tampered_[tampered_.size() / 2] ^= 0x5a;
  std::ofstream(obj_path_, std::ios::binary | std::ios::trunc) << tampered_;
  EXPECT_EQ(compiles_for_next(), 1u);
  // The entry was rewritten with the compiler's object: the next is a hit.
  EXPECT_EQ(compiles_for_next(), 0u);
}

TEST_F(ObjectCacheTest, PlantedEntryWithoutHistdsHashIsCompiledAgain) {
  // Someone writes an object and its source, as the cache looked before
  // hashes were recorded: no hash of histd's, no load.
  fs::remove(fs::path(obj_path_).replace_extension(".sha256"));
  tampered_ =
      "\x7f"
      "ELF planted";
  std::ofstream(obj_path_, std::ios::binary | std::ios::trunc) << tampered_;
  EXPECT_EQ(compiles_for_next(), 1u);
  EXPECT_EQ(compiles_for_next(), 0u);
}

TEST_F(ObjectCacheTest, SymlinkedObjectIsNotFollowed) {
  // A link to a copy with the right bytes and hash: still refused.
  const fs::path elsewhere = dir_.path() / "elsewhere.o";
  fs::copy_file(obj_path_, elsewhere);
  fs::remove(obj_path_);
  fs::create_symlink(elsewhere, obj_path_);
  EXPECT_EQ(compiles_for_next(), 1u);
  EXPECT_FALSE(fs::is_symlink(obj_path_));
  EXPECT_TRUE(slurp(elsewhere) == good_) << "the link's target was written through";
}

TEST_F(ObjectCacheTest, ObjectWritableByOthersIsRefused) {
  fs::permissions(obj_path_, fs::perms::others_write, fs::perm_options::add);
  EXPECT_EQ(compiles_for_next(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(obj_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ObjectCacheTest, ObjectOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "chown needs root";
  ASSERT_EQ(chown(obj_path_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(compiles_for_next(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(obj_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(ObjectCacheTest, CacheDirectoryWritableByOthersIsNotUsed) {
  fs::permissions(cache(), fs::perms::others_all, fs::perm_options::add);
  EXPECT_EQ(compiles_for_next(false), 1u);
  EXPECT_EQ(compiles_for_next(false), 1u) << "an object was stored in a directory others may write";
}

// A header the units include, changed with the compiler as it was (an
// upgrade of histd's headers alone, or clang spawned with HISTD_CC=): the
// cached object was built from the old text, so it is compiled again.
TEST(ObjectCacheHeaders, AnyHeaderOfTheUnitsChangedMeansACompile) {
  TempDir dir;
  BpfPaths paths = paths_with(fs::path());
  fs::copy(paths.include_dir, dir.path() / "include", fs::copy_options::recursive);
  paths.include_dir = dir.path() / "include";
  const std::string src = unit("hist:keys=fd:vals=count");
  auto compiles = [&] {
    Compiler c(paths, dir.path() / "cache");
    EXPECT_TRUE(c.compile(src).ok());
    return c.stats().by_clang;
  };
  ASSERT_EQ(compiles(), 1u);
  ASSERT_EQ(compiles(), 0u);
  int headers = 0;
  for (const auto& e : fs::directory_iterator(paths.include_dir)) {
    if (e.path().extension() != ".h") continue;
    ++headers;
    std::ofstream(e.path(), std::ios::app) << "/* changed */\n";
    EXPECT_EQ(compiles(), 1u) << e.path().filename() << " changed, and its old object was loaded";
    EXPECT_EQ(compiles(), 0u) << e.path().filename();
  }
  EXPECT_GE(headers, 7);
}

}  // namespace
}  // namespace histd::runtime
