// SPDX-License-Identifier: GPL-2.0-only
// A command may leave its compile to the engine, which makes it outside its
// lock (deploy::CompileOutside): the first rebuild of a trigger's addition
// or removal stops before compiling a unit that is neither compiled outside
// nor cached, names it, and fails with ErrorKind::NotCompiled having
// changed nothing: the same maps, pins, programs and dispatcher slots, no
// note logged. Given the unit's object, the same command then succeeds
// with the program a clean run has. Over a FakeKernel (deploy_support.h),
// each deployer with an object cache of its own, empty at first.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "deploy_support.h"

namespace histd::testing {
namespace {

const catalog::EventId kLatency{"synthetic", "wakeup_latency"};
const char* const kLatencyLine = "wakeup_latency u64 lat; pid_t pid; int prio";

struct Step {
  std::optional<catalog::EventId> event;  // none: a synthetic_events line
  std::string text;
};

struct Activation {
  const char* name;
  std::vector<Step> before;  // deployed first, compiled where they are
  catalog::EventId event;
  std::string command;
  int stops = 1;  // the runs that stop: a synthetic event's trigger stops at its generator too
  friend void PrintTo(const Activation& a, std::ostream* os) { *os << a.name; }
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> all{
      {"FirstTriggerOfAnEvent", {}, kKmalloc, "hist:keys=common_pid:vals=bytes_req"},
      {"TriggerJoiningAProgram", {{kKmalloc, "hist:keys=common_pid"}}, kKmalloc, "hist:keys=call_site:vals=bytes_req"},
      {"ReferenceToAnotherEvent",
       {{kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"}},
       kSwitch,
       "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0"},
      // Its field variable, a trigger on the matching event, comes first.
      {"FieldVariableOnTheMatchingEvent",
       {{std::nullopt, kLatencyLine}, {kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"}},
       kWaking,
       "hist:keys=pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,"
       "sched.sched_wakeup.prio)"},
      // Its own program first, then its generator's.
      {"TriggerOnASyntheticEvent",
       {{std::nullopt, kLatencyLine},
        {kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"},
        {kWaking,
         "hist:keys=pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,prio)"}},
       kLatency,
       "hist:keys=lat.log2",
       2},
      // What is left, the first and the third, was never compiled alone.
      {"RemovalOfATrigger",
       {{kKmalloc, "hist:keys=common_pid"},
        {kKmalloc, "hist:keys=call_site"},
        {kKmalloc, "hist:keys=common_pid,call_site"}},
       kKmalloc,
       "!hist:keys=call_site"},
  };
  return all;
}

CommandResult run(FakeDeploy& d, const Step& s) {
  if (s.event) return d.run(*s.event, s.text);
  return d.run(synth_line(s.text), nullptr, s.text);
}

void deploy_before(FakeDeploy& d, const Activation& a) {
  for (const Step& s : a.before) ASSERT_TRUE(run(d, s)) << s.text;
}

// Each dispatcher's occupied slots.
std::map<uint64_t, std::vector<bool>> occupied(const FakeKernel::Live& live) {
  std::map<uint64_t, std::vector<bool>> out;
  for (const auto& [id, slots] : live.dispatchers)
    for (uint64_t program : slots) out[id].push_back(program != 0);
  return out;
}

class CompileOutside : public ::testing::TestWithParam<Activation> {};

TEST_P(CompileOutside, TheCommandStopsBeforeItsCompileAndChangesNothing) {
  const Activation& a = GetParam();
  std::string clean;  // the program of a run that compiles as it goes
  {
    FakeDeploy d;
    deploy_before(d, a);
    ASSERT_TRUE(d.run(a.event, a.command));
    clean = d.deployer().reads().source(a.event);
  }
  const runtime::TempDir cache;
  FakeDeploy d(fake_deploy_options(), cache.path());
  deploy_before(d, a);
  const FakeKernel::Live before = d.kernel().live();
  // The programs of every event the command may rebuild.
  auto sources = [&] {
    std::map<catalog::EventId, std::string> out{{a.event, d.deployer().reads().source(a.event)}};
    for (const Step& s : a.before)
      if (s.event) out[*s.event] = d.deployer().reads().source(*s.event);
    return out;
  };
  const auto sources_before = sources();
  const size_t notes = d.notes().size();

  deploy::CompileOutside outside;
  d.deployer().compile_outside(&outside);
  CommandResult r = d.run(a.event, a.command);
  for (int stop = 1; stop <= a.stops; ++stop) {
    SCOPED_TRACE(::testing::Message() << "stop " << stop);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().error.kind, ErrorKind::NotCompiled);
    ASSERT_TRUE(outside.needed);
    const FakeKernel::Live now = d.kernel().live();
    if (stop == 1) {
      EXPECT_EQ(now, before) << d.kernel().journal();
    } else {
      // A generator's stop comes after the synthetic event's own program was
      // loaded: the roll back loads the one before again, and the
      // generators' as they were (new programs of the same units).
      EXPECT_EQ(now.maps, before.maps) << d.kernel().journal();
      EXPECT_EQ(now.pins, before.pins);
      EXPECT_EQ(occupied(now), occupied(before));
      EXPECT_EQ(now.programs.size(), before.programs.size());
    }
    EXPECT_EQ(sources(), sources_before);
    EXPECT_EQ(d.notes().size(), notes);
    EXPECT_FALSE(d.compiler().cached(*outside.needed)) << "it stopped before compiling";
    auto object = d.compiler().compile(*outside.needed);
    ASSERT_TRUE(object) << object.error().context;
    outside.compiled[*outside.needed] = std::move(*object);
    outside.needed.reset();
    r = d.run(a.event, a.command);
  }
  ASSERT_TRUE(r) << d.kernel().journal();
  EXPECT_FALSE(outside.needed);
  EXPECT_EQ(d.deployer().reads().source(a.event), clean);
  d.deployer().compile_outside(nullptr);
}

TEST_P(CompileOutside, ACommandThatMayNotLeaveItCompilesWhereNeeded) {
  const Activation& a = GetParam();
  const runtime::TempDir cache;
  FakeDeploy d(fake_deploy_options(), cache.path());
  deploy_before(d, a);
  deploy::CompileOutside outside;
  outside.leave = false;
  d.deployer().compile_outside(&outside);
  ASSERT_TRUE(d.run(a.event, a.command)) << d.kernel().journal();
  EXPECT_FALSE(outside.needed);
  d.deployer().compile_outside(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Commands, CompileOutside, ::testing::ValuesIn(activations()),
                         [](const ::testing::TestParamInfo<Activation>& p) { return std::string(p.param.name); });

// A preview (histctl explain through histd) stops at its first unit even
// when it is cached, changing nothing: the program the command then gets.
TEST(CompileOutsidePreview, APreviewStopsAtTheProgramTheCommandWouldLoad) {
  FakeDeploy d;  // the run's cache: the unit may well be in it
  ASSERT_TRUE(d.run(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  const std::string command = "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0";
  const FakeKernel::Live before = d.kernel().live();
  deploy::CompileOutside outside;
  outside.preview = true;
  d.deployer().compile_outside(&outside);
  for (int i = 0; i < 2; ++i) {  // the second time, cached
    SCOPED_TRACE(i);
    const CommandResult r = d.run(kSwitch, command);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().error.kind, ErrorKind::NotCompiled);
    ASSERT_TRUE(outside.needed);
    EXPECT_EQ(d.kernel().live(), before) << d.kernel().journal();
    EXPECT_TRUE(d.notes().empty());
    ASSERT_TRUE(d.compiler().compile(*outside.needed));
  }
  const std::string previewed = *outside.needed;
  d.deployer().compile_outside(nullptr);
  ASSERT_TRUE(d.run(kSwitch, command));
  // The loaded program's source ends with the slots' values it was given.
  const std::string loaded = d.deployer().reads().source(kSwitch);
  ASSERT_TRUE(loaded.starts_with(previewed)) << loaded;
  EXPECT_TRUE(loaded.substr(previewed.size()).starts_with("/* histd: histd_k[] = ")) << loaded;
}

// A unit in the cache is loaded from it: the command does not stop.
TEST(CompileOutsideCached, AUnitCompiledBeforeIsLoaded) {
  const runtime::TempDir cache;
  FakeDeploy d(fake_deploy_options(), cache.path());
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid"));
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=call_site"));
  deploy::CompileOutside outside;
  d.deployer().compile_outside(&outside);
  // What is left is the program the first trigger had alone.
  ASSERT_TRUE(d.run(kKmalloc, "!hist:keys=call_site"));
  EXPECT_FALSE(outside.needed);
  d.deployer().compile_outside(nullptr);
}

// `command` (written as `text`) on kmalloc stops before its compile,
// changing nothing, then loads the object compiled outside: a program
// other than the one before.
void stops_then_loads(FakeDeploy& d, const registry::Command& command, std::string_view text) {
  const FakeKernel::Live before = d.kernel().live();
  const std::string source_before = d.deployer().reads().source(kKmalloc);
  deploy::CompileOutside outside;
  d.deployer().compile_outside(&outside);
  CommandResult r = d.run(command, nullptr, text);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().error.kind, ErrorKind::NotCompiled);
  ASSERT_TRUE(outside.needed);
  EXPECT_EQ(d.kernel().live(), before) << d.kernel().journal();
  EXPECT_EQ(d.deployer().reads().source(kKmalloc), source_before);
  EXPECT_TRUE(d.notes().empty());
  auto object = d.compiler().compile(*outside.needed);
  ASSERT_TRUE(object) << object.error().context;
  outside.compiled[*outside.needed] = std::move(*object);
  outside.needed.reset();
  ASSERT_TRUE(d.run(command, nullptr, text)) << d.kernel().journal();
  EXPECT_FALSE(outside.needed);
  EXPECT_NE(d.deployer().reads().source(kKmalloc), source_before);
  d.deployer().compile_outside(nullptr);
}

// An event's enable: the program that records it is compiled outside too.
TEST(CompileOutsideEnable, TheRecordingProgramStopsAndNothingChanges) {
  const runtime::TempDir cache;
  FakeDeploy d(fake_deploy_options(), cache.path());
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid"));
  stops_then_loads(d, registry::EventEnable{kKmalloc, true}, "1");
}

// A recorded event's filter: the program that tests it is compiled outside.
TEST(CompileOutsideEnable, ARecordedEventsFilterStopsAndNothingChanges) {
  const runtime::TempDir cache;
  FakeDeploy d(fake_deploy_options(), cache.path());
  ASSERT_TRUE(d.run(registry::EventEnable{kKmalloc, true}, nullptr, "1"));
  stops_then_loads(d, registry::EventFilter{kKmalloc, "bytes_req > 100"}, "bytes_req > 100");
}

}  // namespace
}  // namespace histd::testing
