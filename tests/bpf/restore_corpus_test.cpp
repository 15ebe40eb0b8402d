// SPDX-License-Identifier: GPL-2.0-only
// Every accepted command survives a restart: each
// command of the fuzz corpus (the seed documents' commands) is applied on
// every fixture event that takes it, records are injected, the engine goes
// away as histd does at SIGTERM, and a new engine on the same state file
// and pin directory must show the same trigger lines and the same tables,
// counts included, with nothing reported as not restored.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../unit/fixtures.h"
#include "bpf_test_support.h"
#include "histd/catalog.h"

namespace histd::testing {
namespace {

namespace fs = std::filesystem;

// A record of `format` whose numbers vary with `i` and whose strings are
// short and valid, so that keys differ from record to record.
Record record_for(const catalog::EventFormat& format, uint32_t i) {
  const uint32_t fixed = format.record_size();
  const std::string text = "s" + std::to_string(i % 3);
  Record r(fixed + text.size() + 1);
  r.pid(static_cast<int32_t>(100 + i % 2));
  for (const catalog::Field& f : format.fields) {
    if (f.is_common) continue;
    switch (f.kind) {
      case catalog::FieldKind::DynamicString:
        r.set<uint32_t>(f.offset, static_cast<uint32_t>((text.size() + 1) << 16 | fixed));
        break;
      case catalog::FieldKind::RelString:
        r.set<uint32_t>(f.offset, static_cast<uint32_t>((text.size() + 1) << 16 | (fixed - f.offset - 4)));
        break;
      case catalog::FieldKind::CharArray:
        for (size_t c = 0; c < text.size() && c + 1 < f.size; ++c) r.set<char>(f.offset + c, text[c]);
        break;
      default:
        if (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8)
          r.set<uint8_t>(f.offset, static_cast<uint8_t>(1 + i % 4));  // the low byte, little-endian
        break;
    }
  }
  for (size_t c = 0; c < text.size(); ++c) r.set<char>(fixed + c, text[c]);
  return r;
}

class RestoreCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    char tmpl[] = "/tmp/histd-restore-corpus.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.state_file = dir_ / "triggers.json";
    options_.deploy.pin_dir = test_pin_dir("restore-corpus");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::remove_all(options_.deploy.pin_dir, ec);
  }
  // Trigger files and tables of the events touched.
  static std::string seen(engine::Engine& e, const std::vector<catalog::EventId>& events) {
    std::vector<std::string> names;
    for (const catalog::EventId& id : events) names.push_back(id.system + ":" + id.name);
    std::string out = observable_state(e, names);
    for (const catalog::EventId& id : events) out += read_trigger(e, id.system, id.name);
    return out;
  }
  fs::path dir_;
  engine::EngineOptions options_;
};

TEST_F(RestoreCorpusTest, EveryAcceptedCommandComesBackWithItsCounts) {
  const auto commands = command_corpus();
  ASSERT_GT(commands.size(), 40u);
  std::unique_ptr<engine::Engine> first = fixture_engine(options_);
  ASSERT_TRUE(first);
  std::vector<catalog::EventId> events;
  size_t accepted = 0;
  for (const catalog::EventId& id : first->catalog().events()) {
    auto format = first->catalog().event(id.system, id.name);
    if (!format) continue;
    size_t here = 0;
    for (const std::string& c : commands) {
      // Few enough triggers per event to stay under a program's map limit.
      if (here == 6) break;
      here += first->write_trigger(id.system, id.name, c).ok();
    }
    if (here == 0) continue;
    accepted += here;
    events.push_back(id);
    for (uint32_t i = 0; i < 12; ++i) {
      auto r = first->inject(id.system, id.name, record_for(**format, i).bytes());
      ASSERT_TRUE(r.ok()) << id.system << ":" << id.name << ": " << r.error().context;
    }
  }
  EXPECT_GT(accepted, 20u);
  const std::string before = seen(*first, events);
  first->shutdown();
  first.reset();

  std::unique_ptr<engine::Engine> second = fixture_engine(options_);
  ASSERT_TRUE(second);
  const std::vector<std::string> problems = second->restorer().restore();
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_TRUE(second->restorer().report().not_restored.empty());
  EXPECT_EQ(seen(*second, events), before);
}

}  // namespace
}  // namespace histd::testing
