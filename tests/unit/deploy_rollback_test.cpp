// SPDX-License-Identifier: GPL-2.0-only
// A command whose activation the kernel refuses at any of its steps leaves
// the kernel as it found it: every kernel call an activation makes (a map
// made, a pin, a control word, the dispatcher attached, a load, a slot
// installed) is failed in turn by a FakeKernel (deploy_support.h), and
// after each failure the same maps, pins, programs and dispatcher slots
// live as before the command; the same command then succeeds with the
// program a clean run has (the same control slots: none was lost).
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <string>
#include <tuple>
#include <vector>

#include "deploy_support.h"

namespace histd::testing {
namespace {

using Op = FakeKernel::Op;

struct Activation {
  const char* name;
  std::vector<std::pair<catalog::EventId, std::string>> before;  // deployed first
  catalog::EventId event;
  std::string command;
  std::vector<Op> ops;  // the calls it makes
  friend void PrintTo(const Activation& a, std::ostream* os) { *os << a.name; }
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> all{
      {"FirstTriggerOfAnEvent",
       {},
       kKmalloc,
       "hist:keys=common_pid:vals=bytes_req",
       {Op::CreateMap, Op::Pin, Op::Update, Op::Attach, Op::Load, Op::Install}},
      {"PlainTriggerJoiningAProgram",
       {{kKmalloc, "hist:keys=common_pid"}},
       kKmalloc,
       "hist:keys=call_site:vals=bytes_req",
       {Op::CreateMap, Op::Pin, Op::Update, Op::Load, Op::Install}},
      {"VariableBesideAChain",
       {{kWaking, "hist:keys=common_pid"}},
       kWaking,
       "hist:keys=pid:ts0=common_timestamp.usecs",
       {Op::CreateMap, Op::Pin, Op::Update, Op::Load, Op::Install}},
      {"NamedTableWithVariables",
       {},
       kWaking,
       "hist:name=wake:keys=pid:ts0=common_timestamp.usecs",
       {Op::CreateMap, Op::Pin, Op::Update, Op::Attach, Op::Load, Op::Install}},
      {"ReferenceToAnotherEvent",
       {{kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"}, {kSwitch, "hist:keys=prev_pid"}},
       kSwitch,
       "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0",
       {Op::CreateMap, Op::Pin, Op::Update, Op::Load, Op::Install}},
  };
  return all;
}

// The trace ring is made with a tree's first program and kept for the
// tree's life (TraceRing::ring_fd), as the maps the deployer makes at its
// start: it is there before each command here, as in a tree that has had
// a program (TheRingsFailureLeavesNothing fails its making).
void deploy_before(FakeDeploy& d, const Activation& a) {
  for (const auto& [event, command] : a.before) ASSERT_TRUE(d.run(event, command)) << command;
  ASSERT_TRUE(d.deployer().ring().ring_fd());
}

class DeployRollback : public ::testing::TestWithParam<std::tuple<Activation, Op>> {};

TEST_P(DeployRollback, EveryFailedStepLeavesTheKernelAsItWas) {
  const auto& [a, op] = GetParam();
  std::string clean;  // the program of a clean run
  {
    FakeDeploy d;
    deploy_before(d, a);
    ASSERT_TRUE(d.run(a.event, a.command));
    clean = d.deployer().reads().source(a.event);
  }
  int failed = 0;
  for (int k = 1;; ++k) {
    SCOPED_TRACE(::testing::Message() << FakeKernel::op_name(op) << " call " << k);
    FakeDeploy d;
    deploy_before(d, a);
    FakeKernel& kernel = d.kernel();
    const FakeKernel::Live before = kernel.live();
    const int calls = kernel.calls(op);
    kernel.fail_nth(op, k, ENOMEM);
    const CommandResult r = d.run(a.event, a.command);
    if (kernel.calls(op) - calls < k) {
      // The activation makes fewer calls: the rule never fired.
      EXPECT_TRUE(r);
      break;
    }
    ++failed;
    ASSERT_FALSE(r) << kernel.journal();
    EXPECT_EQ(r.error().error.err, ENOMEM);
    EXPECT_EQ(kernel.live(), before) << kernel.journal();
    // Nothing is left half made: the same command succeeds, with the
    // program (and control slots) of a clean run.
    ASSERT_TRUE(d.run(a.event, a.command)) << kernel.journal();
    EXPECT_EQ(d.deployer().reads().source(a.event), clean);
  }
  EXPECT_GT(failed, 0) << "the activation made no " << FakeKernel::op_name(op) << " call";
}

std::vector<std::tuple<Activation, Op>> cases() {
  std::vector<std::tuple<Activation, Op>> out;
  for (const Activation& a : activations())
    for (Op op : a.ops) out.emplace_back(a, op);
  return out;
}

// The command of the first program that sends histd something (a stack)
// fails when its ring cannot be made, leaves what was there, and the next
// command makes the ring.
TEST(DeployRollback, TheRingsFailureLeavesNothing) {
  const std::string command = "stacktrace";
  int ring_call = 0;  // which of the command's map creations makes the ring
  {
    FakeDeploy d;
    const size_t before = d.kernel().created().size();
    ASSERT_TRUE(d.run(kKmalloc, command));
    const auto created = d.kernel().created();
    for (size_t i = before; i < created.size(); ++i)
      if (created[i]->spec.type == BPF_MAP_TYPE_RINGBUF) ring_call = static_cast<int>(i - before) + 1;
  }
  ASSERT_GT(ring_call, 0);
  FakeDeploy d;
  FakeKernel& kernel = d.kernel();
  const FakeKernel::Live before = kernel.live();
  kernel.fail_nth(Op::CreateMap, ring_call, ENOMEM);
  const CommandResult r = d.run(kKmalloc, command);
  ASSERT_FALSE(r) << kernel.journal();
  EXPECT_EQ(r.error().error.err, ENOMEM);
  EXPECT_EQ(kernel.live(), before) << kernel.journal();
  EXPECT_FALSE(d.deployer().ring().has_ring());
  ASSERT_TRUE(d.run(kKmalloc, command)) << kernel.journal();
  EXPECT_TRUE(d.deployer().ring().has_ring());
}

INSTANTIATE_TEST_SUITE_P(Steps, DeployRollback, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::tuple<Activation, Op>>& p) {
                           return std::string(std::get<0>(p.param).name) + FakeKernel::op_name(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace histd::testing
