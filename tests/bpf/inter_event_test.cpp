// SPDX-License-Identifier: GPL-2.0-only
// Variables across events, read-once references, actions and synthetic
// events, run for real through injected records (BPF_PROG_TEST_RUN).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <thread>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_waking: comm @8, pid @24, prio @28, target_cpu @32.
Record waking(int32_t pid, const char* comm = "cyclictest", int32_t prio = 120) {
  Record r(40);
  r.pid(1).set<int32_t>(24, pid).set<int32_t>(28, prio);
  char name[16] = {};
  std::strncpy(name, comm, 15);
  for (int i = 0; i < 16; ++i) r.set<char>(8 + i, name[i]);
  return r;
}

// sched:sched_switch: prev_comm @8, prev_pid @24, prev_prio @28, prev_state
// @32, next_comm @40, next_pid @56, next_prio @60.
Record switch_to(int32_t next_pid, const char* next_comm = "cyclictest", int32_t prev_pid = 0) {
  Record r(64);
  r.pid(prev_pid).set<int32_t>(24, prev_pid).set<int32_t>(28, 120).set<int32_t>(56, next_pid).set<int32_t>(60, 120);
  char name[16] = {};
  std::strncpy(name, next_comm, 15);
  for (int i = 0; i < 16; ++i) r.set<char>(40 + i, name[i]);
  std::memcpy(name, "swapper/0\0\0\0\0\0\0", 16);
  for (int i = 0; i < 16; ++i) r.set<char>(8 + i, name[i]);
  return r;
}

class InterEventTest : public EngineTest {
 protected:
  std::string hist(const std::string& sys, const std::string& ev) {
    auto h = read_hist(*engine_, sys, ev);
    EXPECT_TRUE(h.ok());
    return h.ok() ? *h : "";
  }
  // The generating program runs a synthetic event's triggers itself: an
  // untraced record never travels to histd.
  void expect_nothing_through_user_space() { EXPECT_EQ(engine_->trace_ring().delivered(), 0u); }
  void synth(const std::string& def) {
    auto r = engine_->write_synthetic(def);
    ASSERT_TRUE(r.ok()) << def << ": " << r.error().message();
  }
};

TEST_F(InterEventTest, SeedWakeupLatencyChain) {
  synth("wakeup_latency u64 lat; pid_t pid; int prio");
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"");
  add("sched", "sched_switch",
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio) if next_comm==\"cyclictest\"");
  add("synthetic", "wakeup_latency", "hist:keys=pid,prio:vals=lat:sort=pid");

  inject("sched", "sched_waking", waking(42));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  inject("sched", "sched_switch", switch_to(42));
  // read-once: a second switch without a new waking generates nothing
  inject("sched", "sched_switch", switch_to(42));
  // no waking for 43: skipped
  inject("sched", "sched_switch", switch_to(43));
  inject("sched", "sched_waking", waking(43));
  inject("sched", "sched_switch", switch_to(43));
  expect_nothing_through_user_space();

  const std::string sw = hist("sched", "sched_switch");
  EXPECT_NE(sw.find("{ next_pid:         42 } hitcount:          1\n"), std::string::npos) << sw;
  EXPECT_NE(sw.find("{ next_pid:         43 } hitcount:          1\n"), std::string::npos) << sw;
  EXPECT_NE(sw.find("    Hits: 2\n"), std::string::npos) << sw;

  const std::string lat = hist("synthetic", "wakeup_latency");
  EXPECT_NE(lat.find("{ pid:         42, prio:        120 } hitcount:          1  lat:"), std::string::npos) << lat;
  EXPECT_NE(lat.find("{ pid:         43, prio:        120 } hitcount:          1  lat:"), std::string::npos) << lat;
  // the first wakeup slept at least 3 ms
  const size_t at = lat.find("{ pid:         42");
  ASSERT_NE(at, std::string::npos);
  const uint64_t us = std::stoull(lat.substr(lat.find("lat:", at) + 4));
  EXPECT_GE(us, 3000u) << lat;
  EXPECT_LT(us, 10'000'000u) << lat;
  EXPECT_EQ(read_synthetic(*engine_), "wakeup_latency\tu64 lat; pid_t pid; int prio\n");
}

TEST_F(InterEventTest, OnmaxSavesFieldsOfTheMaximum) {
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch",
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,prev_comm)");
  inject("sched", "sched_waking", waking(42));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  inject("sched", "sched_switch", switch_to(42, "cyclictest", 17));
  inject("sched", "sched_waking", waking(42));
  inject("sched", "sched_switch", switch_to(42, "cyclictest", 18));  // shorter: not a new max
  const std::string h = hist("sched", "sched_switch");
  const size_t at = h.find("{ next_pid:         42 } hitcount:          2\n\tmax: ");
  ASSERT_NE(at, std::string::npos) << h;
  const uint64_t max = std::stoull(h.substr(at + h.substr(at).find("max:") + 4));
  EXPECT_GE(max, 5000u) << h;
  // strings are printed %-32s
  const std::string saved = "  next_comm: cyclictest" + std::string(22, ' ') +
                            "  prev_pid:         17  prev_prio:        120  prev_comm: swapper/0" +
                            std::string(23, ' ') + "\n";
  EXPECT_NE(h.find(saved), std::string::npos) << h;
}

TEST_F(InterEventTest, GeneratedStringsKeyCleanly) {
  // The generation buffer is reused: a short string after a long one must
  // not carry the long one's tail into the key.
  synth("ev_c int x; char comm[16]");
  add("sched", "sched_switch", "hist:keys=next_pid:x=next_prio:onmatch(sched.sched_switch).ev_c($x,next_comm)");
  add("synthetic", "ev_c", "hist:keys=comm");
  inject("sched", "sched_switch", switch_to(1, "longer_name_abc"));
  inject("sched", "sched_switch", switch_to(2, "ab"));
  inject("sched", "sched_switch", switch_to(3, "ab"));
  expect_nothing_through_user_space();
  const std::string h = hist("synthetic", "ev_c");
  EXPECT_TRUE(std::regex_search(h, std::regex("\\{ comm: ab +\\} hitcount:          2\n"))) << h;
  EXPECT_NE(h.find("    Entries: 2\n"), std::string::npos) << h;
}

TEST_F(InterEventTest, OnmaxSnapshotCopiesTheTraceAndShowsTheBlock) {
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch", "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).snapshot()");
  ASSERT_TRUE(engine_->write_marker("before the max", 1, "marker").ok());
  inject("sched", "sched_waking", waking(42));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  inject("sched", "sched_switch", switch_to(42));
  wait_delivered(1);
  const std::string h = hist("sched", "sched_switch");
  EXPECT_TRUE(std::regex_search(
      h, std::regex("\\{ next_pid:         42 \\} hitcount:          1\n\n"
                    "Snapshot taken \\(see tracing/snapshot\\)\\.  Details:\n"
                    "\ttriggering value \\{ onmax\\(\\$lat\\) \\}: +[0-9]+\ttriggered by event with key: "
                    "\\{ next_pid:         42 \\}\n\nTotals:")))
      << h;
  EXPECT_NE(engine_->trace_ring().read_snapshot().find("tracing_mark_write: before the max\n"), std::string::npos);
}

TEST_F(InterEventTest, FieldsOfTheMatchingEventTravelInImplicitVariables) {
  synth("wakeup_latency u64 lat; pid_t pid; int prio");
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"");
  add("sched", "sched_switch",
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio)");
  // the kernel's implicit field variable: a trigger of its own on sched_waking
  EXPECT_EQ(
      read_trigger(*engine_, "sched", "sched_waking"),
      "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global"
      " if comm==\"cyclictest\" [active]\n"
      "hist:keys=pid:vals=hitcount:synthetic_prio=prio:sort=hitcount:size=2048 if comm==\"cyclictest\" [active]\n");
  add("synthetic", "wakeup_latency", "hist:keys=pid,prio");
  inject("sched", "sched_waking", waking(42, "cyclictest", 97));
  inject("sched", "sched_switch", switch_to(42));
  expect_nothing_through_user_space();
  const std::string h = hist("synthetic", "wakeup_latency");
  EXPECT_NE(h.find("{ pid:         42, prio:         97 } hitcount:          1\n"), std::string::npos) << h;
  // removing the user removes the variable's trigger too
  auto r = engine_->write_trigger(
      "sched", "sched_switch",
      "!hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio)");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_waking"),
            "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global"
            " if comm==\"cyclictest\" [active]\n");
  // a field the matching event lacks, and a failed command, leave nothing behind
  auto bad = engine_->write_trigger("sched", "sched_switch",
                                    "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:"
                                    "onmatch(sched.sched_waking).wakeup_latency($l,next_pid,sched.sched_waking.nope)");
  EXPECT_FALSE(bad.ok());
  auto bad2 = engine_->write_trigger("sched", "sched_switch",
                                     "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:"
                                     "onmatch(sched.sched_waking).wakeup_latency($l,sched.sched_waking.prio)");
  EXPECT_FALSE(bad2.ok());  // two params for three fields
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_waking"),
            "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global"
            " if comm==\"cyclictest\" [active]\n");
}

TEST_F(InterEventTest, StacksFillLongArrayFields) {
  synth("stk_ev pid_t pid; unsigned long[] stack");
  add("sched", "sched_switch", "hist:keys=next_pid:onmatch(sched.sched_switch).stk_ev(next_pid,common_stacktrace)");
  ASSERT_TRUE(engine_->set_enabled("synthetic", "stk_ev", true).ok());
  inject("sched", "sched_switch", switch_to(77));
  wait_delivered(1);
  const std::string t = engine_->trace_ring().read_trace();
  // frames of the kernel stack the test run went through, symbolized
  EXPECT_TRUE(std::regex_search(t, std::regex("stk_ev: pid=77 stack=STACK:\n=> [A-Za-z_][A-Za-z0-9_.]*"))) << t;
}

TEST_F(InterEventTest, TracedWhenEnabled) {
  synth("wakeup_latency u64 lat; pid_t pid");
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch",
      "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).trace(wakeup_latency,$lat,next_"
      "pid)");
  ASSERT_TRUE(engine_->set_enabled("synthetic", "wakeup_latency", true).ok());
  inject("sched", "sched_waking", waking(7));
  inject("sched", "sched_switch", switch_to(7));
  wait_delivered(1);
  const std::string t = engine_->trace_ring().read_trace();
  EXPECT_NE(t.find("wakeup_latency: lat="), std::string::npos) << t;
  EXPECT_NE(t.find(" pid=7\n"), std::string::npos) << t;
}

TEST_F(InterEventTest, ExpressionValuesAndRuntimeDivision) {
  add("sched", "sched_switch", "hist:keys=next_pid:d=next_prio/prev_prio:vals=$d,next_prio*2+1");
  Record r = switch_to(9);
  r.set<int32_t>(28, 0);  // prev_prio 0: a runtime division by zero gives -1
  inject("sched", "sched_switch", r);
  const std::string h = hist("sched", "sched_switch");
  EXPECT_NE(h.find("hist:keys=next_pid:vals=hitcount,$d,next_prio*2+1:d=next_prio/prev_prio:sort=hitcount"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("{ next_pid:          9 } hitcount:          1  d: 18446744073709551615\n"), std::string::npos) << h;
  // division by a zero constant is refused at parse time
  auto bad = engine_->write_trigger("sched", "sched_switch", "hist:keys=prev_pid:z=next_prio/0");
  EXPECT_FALSE(bad.ok());
}

TEST_F(InterEventTest, RemovalRefusedWhileReferenced) {
  synth("lat_ev u64 lat");
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch",
      "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).lat_ev($l)");
  auto r = engine_->write_trigger("sched", "sched_waking", "!hist:keys=pid:ts0=common_timestamp.usecs");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(engine_->write_synthetic("!lat_ev").ok());  // in use
  EXPECT_FALSE(engine_->truncate_synthetic().ok());
  // the same variable name twice on one event
  auto dup = engine_->write_trigger("sched", "sched_waking", "hist:keys=prio:ts0=common_timestamp");
  ASSERT_FALSE(dup.ok());
  ASSERT_TRUE(dup.error().diagnostic.has_value());
  EXPECT_EQ(dup.error().diagnostic->code, ErrorCode::DuplicateVar);
  ASSERT_TRUE(engine_->truncate_triggers("sched", "sched_switch").ok());
  EXPECT_TRUE(engine_->write_trigger("sched", "sched_waking", "!hist:keys=pid:ts0=common_timestamp.usecs").ok());
  EXPECT_TRUE(engine_->write_synthetic("!lat_ev").ok());
  EXPECT_EQ(read_synthetic(*engine_), "");
}

TEST_F(InterEventTest, SyntheticCyclesAreRefused) {
  synth("a_ev u64 x");
  synth("b_ev u64 x");
  add("synthetic", "a_ev", "hist:keys=x:v=x:onmatch(synthetic.a_ev).b_ev($v)");
  auto r = engine_->write_trigger("synthetic", "b_ev", "hist:keys=x:w=x:onmatch(synthetic.b_ev).a_ev($w)");
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(r.error().diagnostic.has_value());
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::SynthCycle);
}

// A synthetic event's triggers run inside the program that generates it,
// down a chain, and follow changes to the triggers of every event in it.
TEST_F(InterEventTest, ChainedSyntheticEventsRunInTheGeneratingProgram) {
  synth("s1_ev pid_t pid; u64 lat");
  synth("s2_ev pid_t pid; u64 lat2");
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch",
      "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).s1_ev(next_pid,$l)");
  add("synthetic", "s1_ev", "hist:keys=pid:d=lat*2:onmatch(synthetic.s1_ev).s2_ev(pid,$d)");
  add("synthetic", "s2_ev", "hist:keys=pid:vals=lat2");
  inject("sched", "sched_waking", waking(5));
  inject("sched", "sched_switch", switch_to(5));
  EXPECT_NE(hist("synthetic", "s1_ev").find("{ pid:          5 } hitcount:          1\n"), std::string::npos)
      << hist("synthetic", "s1_ev");
  const std::string s2 = hist("synthetic", "s2_ev");
  EXPECT_NE(s2.find("{ pid:          5 } hitcount:          1  lat2: "), std::string::npos) << s2;
  EXPECT_NE(s2.find("    Hits: 1\n"), std::string::npos) << s2;

  // A trigger added to the end of the chain later runs from then on.
  add("synthetic", "s2_ev", "hist:keys=lat2");
  // Removing the middle's trigger ends the chain there.
  ASSERT_TRUE(engine_->write_trigger("synthetic", "s2_ev", "!hist:keys=pid:vals=lat2").ok());
  inject("sched", "sched_waking", waking(6));
  inject("sched", "sched_switch", switch_to(6));
  const std::string s2b = hist("synthetic", "s2_ev");
  EXPECT_NE(s2b.find("hist:keys=lat2:vals=hitcount"), std::string::npos) << s2b;
  EXPECT_NE(s2b.find("    Hits: 1\n"), std::string::npos) << s2b;
  EXPECT_EQ(s2b.find("pid:"), std::string::npos) << s2b;
  ASSERT_TRUE(engine_->truncate_triggers("synthetic", "s1_ev").ok());
  inject("sched", "sched_waking", waking(7));
  inject("sched", "sched_switch", switch_to(7));
  EXPECT_NE(hist("synthetic", "s2_ev").find("    Hits: 1\n"), std::string::npos) << hist("synthetic", "s2_ev");
  expect_nothing_through_user_space();
}

// Each level of a chain is one more BPF call frame and record buffer: a
// chain deeper than histd builds is refused, and nothing changes.
TEST_F(InterEventTest, ChainsDeeperThanTheLimitAreRefused) {
  for (const char* n : {"d1", "d2", "d3", "d4"}) synth(std::string(n) + " pid_t x");
  add("sched", "sched_switch", "hist:keys=next_pid:v=next_pid:onmatch(sched.sched_switch).d1($v)");
  add("synthetic", "d1", "hist:keys=x:v1=x:onmatch(synthetic.d1).d2($v1)");
  add("synthetic", "d2", "hist:keys=x:v2=x:onmatch(synthetic.d2).d3($v2)");
  add("synthetic", "d4", "hist:keys=x");
  const std::string before = read_trigger(*engine_, "synthetic", "d3");
  auto r = engine_->write_trigger("synthetic", "d3", "hist:keys=x:v3=x:onmatch(synthetic.d3).d4($v3)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("more than 3 events deep"), std::string::npos) << r.error().message();
  EXPECT_EQ(read_trigger(*engine_, "synthetic", "d3"), before);
  inject("sched", "sched_switch", switch_to(9));
  EXPECT_NE(hist("synthetic", "d2").find("{ x:          9 } hitcount:          1\n"), std::string::npos)
      << hist("synthetic", "d2");
}

TEST_F(InterEventTest, TraceMarkerStartEnd) {
  synth("latency u64 lat");
  add("ftrace", "print", "hist:keys=common_pid:ts0=common_timestamp.usecs if buf == \"start\"");
  add("ftrace", "print",
      "hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == \"end\"");
  add("synthetic", "latency", "hist:keys=lat,common_pid:sort=lat");
  ASSERT_TRUE(engine_->write_marker("start", 555, "cyclictest").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(engine_->write_marker("end\n", 555, "cyclictest").ok());
  expect_nothing_through_user_space();
  const std::string h = hist("synthetic", "latency");
  EXPECT_NE(h.find("common_pid:        555 } hitcount:          1"), std::string::npos) << h;
  EXPECT_NE(engine_->trace_ring().read_trace().find("tracing_mark_write: start\n"), std::string::npos);
}

}  // namespace
}  // namespace histd::testing
