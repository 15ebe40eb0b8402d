// SPDX-License-Identifier: GPL-2.0-only
// The control socket's file: histd takes its path only when
// nothing but a stale socket is there, only in a directory nobody but root
// can change, and the file is never open to more users than its mode.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "bpf_test_support.h"
#include "control/server.h"
#include "control_test_support.h"

namespace histd::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ControlSocketFile : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!engine_) return;
    char tmpl[] = "/tmp/histd-socket-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms(0755));
    socket_ = dir_ / "control.sock";
  }
  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  Expected<std::unique_ptr<control::Server>> start(const fs::path& path, gid_t group = 0) {
    return control::Server::start(*engine_, path, group);
  }
  // A request as root, answered.
  bool serves(const fs::path& path) {
    Client c(path);
    if (!c.connected() || !c.send(req("list"))) return false;
    auto r = c.reply(5000ms);
    return r && r->value("ok", false);
  }
  std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Every name in `dir`.
  std::set<std::string> names(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
  }

  fs::path dir_, socket_;
  std::unique_ptr<control::Server> server_;
};

TEST_F(ControlSocketFile, WhatIsNotAStaleSocketIsRefusedAndLeftAsItIs) {
  // A regular file.
  std::ofstream(socket_) << "precious\n";
  auto s = start(socket_);
  ASSERT_FALSE(s.ok()) << "took the path of a regular file";
  EXPECT_EQ(s.error().err, EEXIST);
  EXPECT_EQ(s.error().context, socket_.string() + " exists and is a regular file: histd replaces only a stale socket");
  EXPECT_EQ(read(socket_), "precious\n");
  fs::remove(socket_);
  // A symbolic link, to a file and to nowhere.
  const fs::path target = dir_ / "target";
  std::ofstream(target) << "target\n";
  for (const fs::path& to : {target, dir_ / "nowhere"}) {
    fs::create_symlink(to, socket_);
    auto l = start(socket_);
    ASSERT_FALSE(l.ok()) << "took the path of a symbolic link to " << to;
    EXPECT_EQ(l.error().err, EEXIST);
    EXPECT_EQ(l.error().context,
              socket_.string() + " exists and is a symbolic link: histd replaces only a stale socket");
    EXPECT_TRUE(fs::is_symlink(socket_));
    EXPECT_EQ(fs::read_symlink(socket_), to);
    EXPECT_FALSE(fs::exists(dir_ / "nowhere"));
    fs::remove(socket_);
  }
  EXPECT_EQ(read(target), "target\n");
  // A directory.
  fs::create_directory(socket_);
  std::ofstream(socket_ / "inside") << "x";
  auto d = start(socket_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().err, EEXIST);
  EXPECT_TRUE(fs::exists(socket_ / "inside"));
  fs::remove_all(socket_);
  // A live socket: another histd's.
  auto first = start(socket_);
  ASSERT_TRUE(first.ok()) << first.error().context;
  auto second = start(socket_);
  ASSERT_FALSE(second.ok()) << "took the socket of a live server";
  EXPECT_EQ(second.error().err, EADDRINUSE);
  EXPECT_EQ(second.error().context, socket_.string() + " is live: another histd listens there");
  EXPECT_TRUE(serves(socket_)) << "the live server lost its socket";
  // Nothing was left behind by the refusals (no directory to bind in).
  EXPECT_EQ(names(dir_), (std::set<std::string>{"control.sock", "target"}));
}

TEST_F(ControlSocketFile, AStaleSocketIsReplaced) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  const sockaddr_un addr = unix_address(socket_.string());
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // a histd that died: the file stays, nobody listens
  auto s = start(socket_);
  ASSERT_TRUE(s.ok()) << s.error().context;
  server_ = std::move(*s);
  EXPECT_TRUE(serves(socket_));
}

TEST_F(ControlSocketFile, ADirectoryOthersMayChangeIsRefused) {
  struct Case {
    std::string name;
    fs::path dir;
    mode_t mode;
    uid_t owner;
    std::string error;  // after "refusing the control socket PATH: "; empty: accepted
  };
  const fs::path open_dir = dir_ / "open";      // 0777, an ancestor
  const fs::path sticky_dir = dir_ / "sticky";  // 1777, an ancestor (as /tmp)
  fs::create_directory(open_dir);
  fs::create_directory(sticky_dir);
  chmod(open_dir.c_str(), 0777);
  chmod(sticky_dir.c_str(), 01777);
  const auto p = [](const fs::path& d) { return d.string(); };
  const std::vector<Case> cases = {
      {"writable by others", dir_ / "a", 0757, 0, p(dir_ / "a") + " is writable by group or others (mode 0757)"},
      {"writable by group", dir_ / "b", 0775, 0, p(dir_ / "b") + " is writable by group or others (mode 0775)"},
      {"sticky and writable by all", dir_ / "c", 01777, 0,
       p(dir_ / "c") + " is writable by group or others (mode 1777)"},
      {"owned by another user", dir_ / "d", 0755, 65534, p(dir_ / "d") + " is owned by uid 65534, not root"},
      {"below a directory anyone may change", open_dir / "e", 0755, 0,
       p(open_dir) + " is writable by group or others (mode 0777)"},
      {"below a sticky directory", sticky_dir / "f", 0755, 0, ""},
      {"root's, 0755", dir_ / "g", 0755, 0, ""},
  };
  for (const Case& c : cases) {
    fs::create_directory(c.dir);
    ASSERT_EQ(chmod(c.dir.c_str(), c.mode), 0);
    ASSERT_EQ(chown(c.dir.c_str(), c.owner, 0), 0);
    const fs::path path = c.dir / "histd.sock";
    auto s = start(path);
    if (c.error.empty()) {
      ASSERT_TRUE(s.ok()) << c.name << ": " << s.error().context;
      EXPECT_TRUE(serves(path)) << c.name;
      s->reset();
      continue;
    }
    ASSERT_FALSE(s.ok()) << c.name << ": accepted";
    EXPECT_EQ(s.error().err, EPERM) << c.name;
    EXPECT_EQ(s.error().context, "refusing the control socket " + p(path) + ": " + c.error) << c.name;
    EXPECT_TRUE(names(c.dir).empty()) << c.name << ": left something";
  }
}

// umask 0 would make a bound socket 0777: the file is never seen with any
// mode but its own, and no private directory is left behind.
TEST_F(ControlSocketFile, TheSocketIsNeverOpenerThanItsMode) {
  std::atomic<bool> stop{false};
  std::set<mode_t> seen;
  std::thread watcher([&] {
    struct stat st {};
    while (!stop)
      if (lstat(socket_.c_str(), &st) == 0) seen.insert(st.st_mode & 07777);
  });
  const mode_t old = umask(0);
  auto s = start(socket_);
  umask(old);
  std::this_thread::sleep_for(50ms);
  stop = true;
  watcher.join();
  ASSERT_TRUE(s.ok()) << s.error().context;
  server_ = std::move(*s);
  struct stat st {};
  ASSERT_EQ(lstat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_EQ(seen, std::set<mode_t>{0600});
  EXPECT_EQ(names(dir_), std::set<std::string>{"control.sock"});
}

// Stopping removes the socket only if the name is still its own.
TEST_F(ControlSocketFile, StoppingRemovesOnlyItsOwnSocket) {
  auto s = start(socket_);
  ASSERT_TRUE(s.ok()) << s.error().context;
  fs::remove(socket_);
  std::ofstream(socket_) << "someone else's\n";
  s->reset();
  EXPECT_EQ(read(socket_), "someone else's\n");
}

}  // namespace
}  // namespace histd::testing
