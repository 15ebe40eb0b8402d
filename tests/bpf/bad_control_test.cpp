// SPDX-License-Identifier: GPL-2.0-only
// The bad-input matrix, control socket part: a real control::Server on a temp
// socket, sent malformed frames and requests. Each case asserts the reply
// (errno, error text, and command and caret where the engine gave a
// diagnostic), that the server still answers a good request afterwards, and
// that no synthetic event, trigger, table or count changed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bpf_test_support.h"
#include "control/protocol.h"
#include "control/server.h"
#include "control_test_support.h"

namespace histd::testing {
namespace {

using nlohmann::json;

struct Reply {
  bool closed = false;  // the server closed the connection without a reply
  json body;
};

struct Case {
  std::string name;
  std::string bytes;  // sent as they are
  int err;
  std::string error;
  std::optional<std::string> command = std::nullopt;  // with a diagnostic
  std::optional<int> caret = std::nullopt;
};

const std::string kWrite = "syscalls:sys_enter_write";

std::vector<Case> cases() {
  const std::string malformed = "malformed control frame";
  const std::string too_large = "control frame too large";
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  // A command over a page whose cut falls inside a two-byte character: the
  // diagnostic's command is not UTF-8 (the reply replaces the bad byte).
  std::string long_cmd = "hist:keys=x";
  for (int i = 0; i < 2100; ++i) long_cmd += "\xc3\xa9";
  std::string long_logged = long_cmd.substr(0, 4095) + "\xef\xbf\xbd";
  return {
      // framing
      {"length past kMaxFrame", header(control::kMaxFrame + 1), EMSGSIZE, too_large},
      {"length 2^32-1", header(0xffffffffu) + "{}", EMSGSIZE, too_large},
      {"zero length", header(0), EINVAL, malformed},
      // the body
      {"not JSON", frame("hello"), EINVAL, malformed},
      {"half an object", frame("{\"op\":"), EINVAL, malformed},
      {"trailing bytes", frame("{\"op\":\"list\"} junk"), EINVAL, malformed},
      {"two objects", frame("{\"op\":\"list\"}{\"op\":\"list\"}"), EINVAL, malformed},
      {"not UTF-8", frame("{\"op\":\"\xff\"}"), EINVAL, malformed},
      {"NUL after the object", frame(std::string("{\"op\":\"list\"}\0junk", 18)), EINVAL, malformed},
      {"NUL before the object", frame(std::string("\0{\"op\":\"list\"}", 14)), EINVAL, malformed},
      {"an array", frame("[\"list\"]"), EINVAL, malformed},
      {"a string", frame("\"list\""), EINVAL, malformed},
      {"a number", frame("42"), EINVAL, malformed},
      {"null", frame("null"), EINVAL, malformed},
      {"nested 100000 deep", frame(deep), EINVAL, malformed},
      // members
      {"no op", frame("{}"), EINVAL, "missing \"op\""},
      {"empty op", req(""), EINVAL, "missing \"op\""},
      {"only an event", frame(json{{"event", kWrite}}.dump()), EINVAL, "missing \"op\""},
      {"op a number", frame("{\"op\":42}"), EINVAL, "\"op\" must be a string"},
      {"op null", frame("{\"op\":null}"), EINVAL, "\"op\" must be a string"},
      {"op an array", frame("{\"op\":[\"list\"]}"), EINVAL, "\"op\" must be a string"},
      {"op a bool", frame("{\"op\":true}"), EINVAL, "\"op\" must be a string"},
      {"event a number", frame("{\"op\":\"add\",\"event\":7,\"command\":\"hist:keys=fd\"}"), EINVAL,
       "\"event\" must be a string"},
      {"event an object", frame("{\"op\":\"show\",\"event\":{\"system\":\"syscalls\"}}"), EINVAL,
       "\"event\" must be a string"},
      {"command an object", frame("{\"op\":\"add\",\"event\":\"" + kWrite + "\",\"command\":{\"a\":1}}"), EINVAL,
       "\"command\" must be a string"},
      {"command a list", frame("{\"op\":\"synth_add\",\"command\":[\"ev u64 a\"]}"), EINVAL,
       "\"command\" must be a string"},
      {"json not a bool", frame("{\"op\":\"show\",\"event\":\"" + kWrite + "\",\"json\":\"yes\"}"), EINVAL,
       "\"json\" must be a boolean"},
      {"raw not a bool", frame("{\"op\":\"list\",\"raw\":1}"), EINVAL, "\"raw\" must be a boolean"},
      {"fd not a bool", frame("{\"op\":\"list\",\"raw\":true,\"fd\":\"yes\"}"), EINVAL, "\"fd\" must be a boolean"},
      {"unknown op", req("nosuch"), EINVAL, "unknown op 'nosuch'"},
      {"op in capitals", req("LIST"), EINVAL, "unknown op 'LIST'"},
      {"op with a blank", req("list "), EINVAL, "unknown op 'list '"},
      // the event
      {"no event", req("add", "", "hist:keys=fd"), EINVAL, "expected SYSTEM:EVENT, got ''"},
      {"system only", req("add", "sched", "hist:keys=fd"), EINVAL, "expected SYSTEM:EVENT, got 'sched'"},
      {"no system", req("show", ":x"), EINVAL, "expected SYSTEM:EVENT, got ':x'"},
      {"no event name", req("show", "sched:"), EINVAL, "expected SYSTEM:EVENT, got 'sched:'"},
      {"three parts", req("remove", "a:b:c", "hist:keys=fd"), EINVAL, "expected SYSTEM:EVENT, got 'a:b:c'"},
      {"slash form", req("source", "sched/sched_switch"), EINVAL, "expected SYSTEM:EVENT, got 'sched/sched_switch'"},
      {"unknown system", req("add", "nosuch:event", "hist:keys=fd"), ENOENT, "no event nosuch:event"},
      {"unknown event", req("add", "sched:nosuch", "hist:keys=prev_pid"), ENOENT, "no event sched:nosuch"},
      {"show an unknown event", req("show", "sched:nosuch"), ENOENT, "no event sched:nosuch"},
      // trigger commands: the engine's diagnostic, with command and caret
      {"unknown field", req("add", kWrite, "hist:keys=nosuch"), EINVAL, "Couldn't find field", "hist:keys=nosuch", 10},
      {"bad filter", req("add", kWrite, "hist:keys=fd if fd ~ 1"), EINVAL, "Illegal operation for field type",
       "hist:keys=fd if fd ~ 1", 22},  // one past the value's first character, as the kernel's caret
      {"no keys", req("add", kWrite, "hist:vals=count"), EINVAL, "hist trigger needs keys=", "hist:vals=count", 0},
      {"existing trigger", req("add", kWrite, "hist:keys=fd:vals=count"), EINVAL, "Hist trigger already exists",
       "hist:keys=fd:vals=count", 0},
      {"not a trigger", req("add", kWrite, "rm -rf /"), EINVAL, "unknown trigger command", "rm -rf /", 0},
      {"over a page, cut inside a character", req("add", kWrite, long_cmd), EINVAL,
       "command longer than a page (4096 bytes)", long_logged, 4095},
      {"remove a trigger that is not there", req("remove", kWrite, "hist:keys=count"), ENOENT, "no such hist trigger",
       "hist:keys=count", 0},
      {"remove with a bad attribute", req("remove", kWrite, "hist:keys=fd:bogus"), EINVAL,
       "unknown hist trigger attribute", "hist:keys=fd:bogus", 13},
      // synthetic events
      {"synth_add bad type", req("synth_add", "", "ev chr a"), EINVAL, "Invalid type", "ev chr a", 3},
      {"synth_add existing", req("synth_add", "", "lat_ev u64 lat"), EEXIST, "Event already exists", "lat_ev u64 lat",
       0},
      {"synth_remove missing", req("synth_remove", "", "nosuch"), ENOENT, "no synthetic event nosuch"},
      {"synth_remove busy", req("synth_remove", "", "lat_ev"), EBUSY, "synthetic event lat_ev is in use"},
  };
}

class BadControl : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!engine_) return;
    char tmpl[] = "/tmp/histd-bad-control-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The unprivileged callers of the access tests must reach the socket.
    std::filesystem::permissions(dir_, std::filesystem::perms(0755));
    socket_ = dir_ / "control.sock";
    ASSERT_TRUE(engine_->write_synthetic("lat_ev u64 lat; pid_t pid").ok());
    add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
    add("sched", "sched_switch",
        "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).lat_ev($l,next_pid)");
    add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
    Record w(40);
    w.pid(1).set<uint64_t>(16, 3).set<uint64_t>(32, 7);
    inject("syscalls", "sys_enter_write", w);
    auto s = control::Server::start(*engine_, socket_);
    ASSERT_TRUE(s.ok()) << s.error().context;
    server_ = std::move(*s);
  }
  void TearDown() override {
    server_.reset();  // stops the thread, removes the socket
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  int connect_socket() {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
    return fd;
  }
  // Sends `bytes` (a short write of a huge frame is fine: the server answers
  // from the header), then reads the reply or the close.
  Reply exchange(const std::string& bytes, bool close_write = true) {
    int fd = connect_socket();
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    if (close_write) shutdown(fd, SHUT_WR);
    Reply r;
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 15000), 1) << "no reply within 15 s";
    auto got = control::read_frame(fd);
    if (got) {
      r.body = *got;
    } else {
      r.closed = true;
    }
    close(fd);
    return r;
  }
  std::string state() { return observable_state(*engine_, {kWrite, "sched:sched_switch", "sched:sched_waking"}); }
  // The server still serves, and still holds exactly the setup's triggers.
  void expect_serving(const std::string& what) {
    Reply r = exchange(req("list"));
    ASSERT_FALSE(r.closed) << what;
    EXPECT_EQ(r.body.value("ok", false), true) << what << ": " << r.body.dump();
    std::string expected;
    for (const std::string& line : list_triggers(*engine_)) expected += line + "\n";
    EXPECT_EQ(r.body.value("output", ""), expected) << what;
  }

  std::filesystem::path dir_, socket_;
  std::unique_ptr<control::Server> server_;
};

TEST_F(BadControl, EveryBadFrameGetsItsErrorAndTheServerKeepsServing) {
  const std::vector<Case> all = cases();
  EXPECT_GE(all.size(), 45u);
  const std::string before = state();
  for (const Case& c : all) {
    engine_->clear_error_log();
    Reply r = exchange(c.bytes);
    ASSERT_FALSE(r.closed) << c.name;
    const json& b = r.body;
    EXPECT_EQ(b.value("ok", true), false) << c.name << ": " << b.dump();
    EXPECT_EQ(b.value("errno", 0), c.err) << c.name << ": " << b.dump();
    EXPECT_EQ(b.value("error", ""), c.error) << c.name;
    if (c.command) {
      EXPECT_EQ(b.value("command", ""), *c.command) << c.name;
      EXPECT_EQ(b.value("caret", -1), *c.caret) << c.name;
    } else {
      EXPECT_FALSE(b.contains("command")) << c.name << ": " << b.dump();
      EXPECT_FALSE(b.contains("caret")) << c.name;
    }
    EXPECT_EQ(state(), before) << c.name;
    expect_serving(c.name);
  }
}

// Clients that stop half way: nobody to answer, and nothing may kill the
// server (a reply written to a closed peer was a SIGPIPE before).
TEST_F(BadControl, ClientsThatGoAwayMidFrameLeaveTheServerServing) {
  const std::string before = state();
  const std::vector<std::pair<std::string, std::string>> partial = {
      {"nothing sent", ""},
      {"half a header", header(8).substr(0, 2)},
      {"header only", header(100)},
      {"body cut short", header(100) + "{\"op\":\"li"},
  };
  for (const auto& [what, bytes] : partial) {
    // The whole socket closed: a reply would meet EPIPE.
    int fd = connect_socket();
    if (!bytes.empty()) {
      ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
    }
    close(fd);
    expect_serving(what + " (closed)");
    // Only the writing side closed: the server reads EOF and hangs up.
    Reply r = exchange(bytes);
    EXPECT_TRUE(r.closed) << what << ": " << r.body.dump();
    expect_serving(what + " (shut down)");
  }
  EXPECT_EQ(state(), before);
}

// A client that stalls mid-frame is dropped at the request deadline (5 s)
// with EAGAIN, and the next client is served.
TEST_F(BadControl, AStalledClientTimesOut) {
  Reply r = exchange(header(100) + "{", /*close_write=*/false);
  ASSERT_FALSE(r.closed);
  EXPECT_EQ(r.body.value("errno", 0), EAGAIN) << r.body.dump();
  expect_serving("after a stalled client");
}

// Every op, reads included: tables and traces carry kernel addresses.
std::vector<std::string> every_op() {
  return {req("add", kWrite, "hist:keys=count"),
          req("remove", kWrite, "hist:keys=fd:vals=count"),
          req("show", kWrite),
          frame(json{{"op", "show"}, {"event", kWrite}, {"json", true}}.dump()),
          req("source", kWrite),
          req("list"),
          req("status"),
          req("restore"),
          req("synth_add", "", "ev u64 a"),
          req("synth_remove", "", "lat_ev"),
          req("synth_list"),
          req("trace"),
          req("clear_trace"),
          req("errors"),
          req("clear_errors"),
          req("nosuch"),
          frame("not JSON")};
}

// "raw": true (histd-exporter's megabytes of metrics): the output comes as
// bytes in a frame after the reply, which says how many; a failed op's
// reply is as ever, with nothing after it.
TEST_F(BadControl, ARawReplyCarriesItsOutputAfterItsFrame) {
  std::string expected;
  for (const std::string& line : list_triggers(*engine_)) expected += line + "\n";
  ASSERT_FALSE(expected.empty());
  for (const bool raw : {true, false}) {
    json asked = request("list");
    asked["raw"] = raw;
    const int fd = connect_socket();
    ASSERT_TRUE(control::write_frame(fd, asked).ok());
    auto reply = control::read_frame(fd);
    ASSERT_TRUE(reply.ok()) << reply.error().context;
    EXPECT_EQ(reply->contains("output"), !raw) << reply->dump();
    if (raw) {
      EXPECT_EQ(reply->value("raw", size_t{0}), expected.size()) << reply->dump();
    }
    auto output = control::read_output(fd, *reply);
    ASSERT_TRUE(output.ok()) << output.error().context;
    EXPECT_EQ(*output, expected);
    char more;
    EXPECT_EQ(recv(fd, &more, 1, 0), 0) << "bytes after the reply";
    close(fd);
  }
  json failing = request("show", "nosuch:event");
  failing["raw"] = true;
  const int fd = connect_socket();
  ASSERT_TRUE(control::write_frame(fd, failing).ok());
  auto reply = control::read_frame(fd);
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->value("ok", true));
  EXPECT_FALSE(reply->contains("raw"));
  char more;
  EXPECT_EQ(recv(fd, &more, 1, 0), 0);
  close(fd);
}

// "raw" and "fd" (histd-exporter's): the output in a sealed memfd that
// comes with the reply frame, and nothing after the frame.
TEST_F(BadControl, AnFdReplyCarriesItsOutputInASealedMemfd) {
  std::string expected;
  for (const std::string& line : list_triggers(*engine_)) expected += line + "\n";
  ASSERT_FALSE(expected.empty());
  json asked = request("list");
  asked["raw"] = true;
  asked["fd"] = true;
  const int fd = connect_socket();
  ASSERT_TRUE(control::write_frame(fd, asked).ok());
  Fd passed;
  auto reply = control::read_frame_with_fd(fd, passed);
  ASSERT_TRUE(reply.ok()) << reply.error().context;
  EXPECT_TRUE(reply->value("fd", false)) << reply->dump();
  EXPECT_EQ(reply->value("raw", size_t{0}), expected.size()) << reply->dump();
  EXPECT_FALSE(reply->contains("output"));
  ASSERT_TRUE(passed) << "no descriptor with the frame";
  std::string text(expected.size() + 1, '\0');
  EXPECT_EQ(pread(passed.get(), text.data(), text.size(), 0), static_cast<ssize_t>(expected.size()));
  text.resize(expected.size());
  EXPECT_EQ(text, expected);
  EXPECT_EQ(fcntl(passed.get(), F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK),
            F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK);
  EXPECT_EQ(pwrite(passed.get(), "x", 1, 0), -1) << "the reader may not change it";
  char more;
  EXPECT_EQ(recv(fd, &more, 1, 0), 0) << "bytes after the reply";
  close(fd);
}

// Reads need root too: without --group the socket is 0600 root:root,
// so nobody (uid 65534) cannot connect. Were its mode loosened, the server
// still refuses every op from the peer's credentials, reads as changes.
TEST_F(BadControl, EveryOpNeedsRoot) {
  const std::string before = state();
  struct stat st {};
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  const Identity nobody;
  EXPECT_EQ(as_user(nobody, socket_, req("list")).connect_errno, EACCES);
  ASSERT_EQ(chmod(socket_.c_str(), 0666), 0);
  for (const std::string& bytes : every_op()) {
    const UserReply r = as_user(nobody, socket_, bytes);
    ASSERT_EQ(r.connect_errno, 0) << bytes;
    EXPECT_EQ(r.body.value("ok", true), false) << bytes;
    EXPECT_EQ(r.body.value("errno", 0), EACCES) << bytes << ": " << r.body.dump();
    EXPECT_EQ(r.body.value("error", ""), "histd's control socket needs root") << bytes;
    EXPECT_EQ(r.body.value("denied", false), true) << bytes;
    EXPECT_FALSE(r.body.contains("output")) << bytes;
    EXPECT_EQ(state(), before) << bytes;
  }
  expect_serving("after refused callers");
}

// With a group: the socket is 0660 root:group, and members (by primary or
// supplementary group) read and change; everyone else is kept out by the
// mode and, were it loosened, by the server.
TEST_F(BadControl, RootAndTheGroupMayUseTheSocket) {
  const gid_t group = 4242;
  server_.reset();
  auto s = control::Server::start(*engine_, socket_, group);
  ASSERT_TRUE(s.ok()) << s.error().context;
  server_ = std::move(*s);
  struct stat st {};
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, group);
  std::string expected_list;
  for (const std::string& line : list_triggers(*engine_)) expected_list += line + "\n";
  for (const Identity& member : {Identity{65534, 65534, {group}}, Identity{65534, group, {}}}) {
    const UserReply r = as_user(member, socket_, req("list"));
    ASSERT_EQ(r.connect_errno, 0);
    EXPECT_EQ(r.body.value("output", ""), expected_list) << r.body.dump();
  }
  const Identity member{65534, 65534, {100, group}};
  EXPECT_EQ(as_user(member, socket_, req("synth_add", "", "grp_ev u64 a")).body.value("ok", false), true);
  EXPECT_EQ(as_user(member, socket_, req("synth_remove", "", "grp_ev")).body.value("ok", false), true);
  const Identity other{65534, 65534, {100}};
  EXPECT_EQ(as_user(other, socket_, req("list")).connect_errno, EACCES);
  ASSERT_EQ(chmod(socket_.c_str(), 0666), 0);
  const UserReply r = as_user(other, socket_, req("list"));
  ASSERT_EQ(r.connect_errno, 0);
  EXPECT_EQ(r.body.value("errno", 0), EACCES);
  EXPECT_EQ(r.body.value("error", ""), "histd's control socket needs root or membership of group 4242");
}

}  // namespace
}  // namespace histd::testing
