// SPDX-License-Identifier: GPL-2.0-only
// The control server under clients that stall, trickle or never read: a
// real control::Server with its default limits on a temp socket.
// Each test keeps such clients connected and checks that ordinary requests
// are still answered (within a second), that the stuck
// ones are dropped at their deadlines, and that stopping does not wait for
// them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bpf_test_support.h"
#include "control/server.h"
#include "control_test_support.h"

namespace histd::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr auto kRequestDeadline = 5s;  // control::ServerLimits' defaults
constexpr auto kReplyDeadline = 10s;
constexpr size_t kMaxConnections = 16;

// A client that sends a frame announcing 1000 bytes, one byte every 100 ms:
// every read sees data long before any per-read timeout, and the frame is
// complete only after 100 s.
class Trickler {
 public:
  explicit Trickler(const std::filesystem::path& socket) : client_(socket) {
    thread_ = std::thread([this] {
      const std::string bytes = header(1000) + "{" + std::string(999, ' ');
      for (char c : bytes) {
        if (stop_ || !client_.send(std::string(1, c))) return;
        std::this_thread::sleep_for(100ms);
      }
    });
  }
  ~Trickler() {
    stop_ = true;
    thread_.join();
  }
  Client& client() { return client_; }

 private:
  Client client_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class ControlConcurrency : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!engine_) return;
    char tmpl[] = "/tmp/histd-control-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ / "control.sock";
    add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
    // A table whose hist text is megabytes: a reply no socket buffer holds.
    add("kmem", "kmalloc", "hist:keys=ptr:vals=bytes_req:size=65536");
    for (uint64_t i = 0; i < 30000; ++i) inject("kmem", "kmalloc", Record(56).set<uint64_t>(16, 0x1000 + i * 64));
    auto hist = read_hist(*engine_, "kmem", "kmalloc");
    ASSERT_TRUE(hist.ok());
    ASSERT_GT(hist->size(), 1u << 20);
    auto s = control::Server::start(*engine_, socket_);
    ASSERT_TRUE(s.ok()) << s.error().context;
    server_ = std::move(*s);
  }
  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string expected_list() {
    std::string out;
    for (const std::string& line : list_triggers(*engine_)) out += line + "\n";
    return out;
  }
  // An ordinary request, answered in full within a second.
  void expect_answered_within_a_second(const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    Client c(socket_);
    ASSERT_TRUE(c.send(req("list"))) << what;
    auto r = c.reply(1000ms);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    ASSERT_TRUE(r) << what << ": no reply within a second";
    EXPECT_EQ(r->value("output", ""), expected_list()) << what;
    slowest_ = std::max(slowest_, took);
  }
  std::unique_ptr<Client> non_reader() {
    auto c = std::make_unique<Client>(socket_);
    EXPECT_TRUE(c->send(req("show", "kmem:kmalloc")));
    return c;
  }

  std::filesystem::path dir_, socket_;
  std::unique_ptr<control::Server> server_;
  std::chrono::milliseconds slowest_{0};
};

TEST_F(ControlConcurrency, StuckClientsAreDroppedAtTheirDeadlinesAndNeverHoldTheOthers) {
  Trickler trickler(socket_);
  Client silent(socket_);
  Client half_header(socket_);
  ASSERT_TRUE(half_header.send(header(50).substr(0, 2)));
  auto unread = non_reader();
  std::this_thread::sleep_for(300ms);  // every one of them taken in
  for (int i = 0; i < 5; ++i) {
    expect_answered_within_a_second("while four clients are stuck, request " + std::to_string(i));
    std::this_thread::sleep_for(200ms);
  }
  // The whole request within 5 s, however it trickles: the trickler is told
  // so while it is still sending.
  auto t = trickler.client().reply(kRequestDeadline + 3s);
  ASSERT_TRUE(t) << "the trickler was not dropped";
  EXPECT_EQ(t->value("errno", 0), EAGAIN) << t->dump();
  EXPECT_EQ(t->value("error", ""), "no complete request within 5 s");
  for (Client* c : {&silent, &half_header}) {
    auto r = c->reply(3s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->value("errno", 0), EAGAIN) << r->dump();
  }
  expect_answered_within_a_second("after the stalled ones were dropped");
  // The reply within 10 s: a client that never reads is cut off.
  ASSERT_TRUE(unread->closed_within(kReplyDeadline + 5s)) << "the client that never reads still holds its place";
  const std::string got = unread->drain();
  ASSERT_GE(got.size(), 4u);
  const auto* h = reinterpret_cast<const unsigned char*>(got.data());
  const size_t announced = h[0] | (h[1] << 8) | (h[2] << 16) | (size_t{h[3]} << 24);
  EXPECT_LT(got.size(), 4 + announced) << "the whole reply arrived";
  expect_answered_within_a_second("after the reader was cut off");
  std::printf("slowest ordinary request: %lld ms\n", static_cast<long long>(slowest_.count()));
}

// 16 connections are served at once; the 17th waits in the listen backlog
// until a place frees (here: when the 16 stalled clients are dropped at the
// request deadline), then is served.
TEST_F(ControlConcurrency, The17thClientWaitsForAPlaceAndIsServed) {
  std::vector<std::unique_ptr<Client>> stalled;
  for (size_t i = 0; i < kMaxConnections; ++i) stalled.push_back(std::make_unique<Client>(socket_));
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  Client next(socket_);
  ASSERT_TRUE(next.connected());
  ASSERT_TRUE(next.send(req("list")));
  EXPECT_FALSE(next.reply(1000ms)) << "answered while every place was taken";
  auto r = next.reply(kRequestDeadline + 5s);
  ASSERT_TRUE(r) << "the 17th client was not served after the stalled ones were dropped";
  EXPECT_EQ(r->value("output", ""), expected_list());
  std::printf(
      "the 17th waited %lld ms\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count()));
  for (auto& c : stalled) {
    auto s = c->reply(2s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->value("errno", 0), EAGAIN);
  }
}

// Many clients at once, each with several requests, while three stuck
// clients hold places: every reply is whole and right.
TEST_F(ControlConcurrency, ManyClientsAtOnceAreAllAnswered) {
  Trickler trickler(socket_);
  Client silent(socket_);
  auto unread = non_reader();
  std::this_thread::sleep_for(300ms);
  const std::string list = expected_list();
  auto hist = read_hist(*engine_, "syscalls", "sys_enter_write");
  ASSERT_TRUE(hist.ok());
  const std::string show = *hist;
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 24; ++i) {
    clients.emplace_back([&, i] {
      for (int j = 0; j < 4; ++j) {
        const bool as_list = (i + j) % 2 == 0;
        Client c(socket_);
        if (!c.send(as_list ? req("list") : req("show", "syscalls:sys_enter_write"))) continue;
        auto r = c.reply(10s);
        if (r && r->value("ok", false) && r->value("output", "") == (as_list ? list : show)) ++right;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(right.load(), 24 * 4);
  std::printf("96 requests from 24 clients at once: %lld ms\n", static_cast<long long>(took.count()));
}

// Stopping (histd's SIGTERM) ends every connection at once, however stuck.
TEST_F(ControlConcurrency, StoppingDoesNotWaitForStuckClients) {
  Trickler trickler(socket_);
  Client silent(socket_);
  Client half_frame(socket_);
  ASSERT_TRUE(half_frame.send(header(100) + "{\"op\":"));
  auto unread = non_reader();
  std::this_thread::sleep_for(500ms);
  const auto start = std::chrono::steady_clock::now();
  server_.reset();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 2s) << "stopping waited for stuck clients";
  for (Client* c : {&trickler.client(), &silent, &half_frame, unread.get()}) EXPECT_TRUE(c->closed_within(1000ms));
  EXPECT_FALSE(std::filesystem::exists(socket_));
}

}  // namespace
}  // namespace histd::testing
