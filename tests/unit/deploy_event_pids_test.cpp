// SPDX-License-Identifier: GPL-2.0-only
// set_event_pid and options/event-fork on the deployer's side
// (deploy::EventPids), over a FakeKernel: the list in its map and the
// control word that puts it in force, as the kernel's trace_pid_write()
// makes a new list from the old one and the pids written, all or nothing;
// the fork followers attached and detached. No root.
#include <linux/bpf.h>

#include <cstring>

#include "deploy_support.h"
#include "hist_shared.h"
#include "histd/codegen.h"

namespace histd::testing {
namespace {

using Pids = std::vector<uint32_t>;

// The map every unit is loaded with as codegen::kPidsMap.
const FakeKernel::Map* pid_map(FakeDeploy& d) { return d.kernel().map_of(d.deployer().event_pids().map_fd()); }

TEST(DeployEventPids, AWriteAddsToTheListAndPutsItInForce) {
  FakeDeploy d;
  deploy::EventPids& pids = d.deployer().event_pids();
  EXPECT_FALSE(pids.in_force());
  EXPECT_EQ(pids.pids(), Pids{});
  ASSERT_TRUE(pids.add(Pids{12, 7, 3}));
  EXPECT_TRUE(pids.in_force());
  // Read from the lowest, as the kernel's bitmap is.
  EXPECT_EQ(pids.pids(), (Pids{3, 7, 12}));
  ASSERT_TRUE(pids.add(Pids{5, 7}));
  EXPECT_EQ(pids.pids(), (Pids{3, 5, 7, 12}));
  ASSERT_EQ(pid_map(d)->elements.size(), 4u);
  // Nothing written keeps the list; an O_TRUNC open ends it.
  ASSERT_TRUE(pids.add(Pids{}));
  EXPECT_TRUE(pids.in_force());
  ASSERT_TRUE(pids.clear());
  EXPECT_FALSE(pids.in_force());
  EXPECT_TRUE(pid_map(d)->elements.empty());
  // A write of nothing to no list is no list.
  ASSERT_TRUE(pids.add(Pids{}));
  EXPECT_FALSE(pids.in_force());
}

TEST(DeployEventPids, EveryProgramIsLoadedWithTheList) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid"));
  ASSERT_TRUE(d.run(kSwitch, "hist:keys=next_pid"));
  const uint64_t list = pid_map(d)->id;
  for (const FakeKernel::LoadCall& load : d.kernel().loads()) EXPECT_EQ(load.maps.at(codegen::kPidsMap), list);
}

TEST(DeployEventPids, AWriteThatCannotBeWholeChangesNothing) {
  FakeDeploy d;
  deploy::EventPids& pids = d.deployer().event_pids();
  ASSERT_TRUE(pids.add(Pids{1, 2}));
  // The third pid's element fails: the two before it go again.
  d.kernel().fail_nth(FakeKernel::Op::Update, 3, ENOMEM);
  auto st = pids.add(Pids{3, 4, 5});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, ENOMEM);
  EXPECT_EQ(pids.pids(), (Pids{1, 2}));
  // Past HISTD_MAX_EVENT_PIDS: ENOSPC before anything is written.
  Pids many(HISTD_MAX_EVENT_PIDS - 1);
  for (uint32_t i = 0; i < many.size(); ++i) many[i] = 100 + i;
  st = pids.add(many);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, ENOSPC);
  EXPECT_EQ(pids.pids(), (Pids{1, 2}));
  // The same pids again take no room.
  many.resize(HISTD_MAX_EVENT_PIDS - 2);
  ASSERT_TRUE(pids.add(many));
  ASSERT_TRUE(pids.add(Pids{1, 2}));
  EXPECT_EQ(pids.pids().size(), size_t{HISTD_MAX_EVENT_PIDS});
}

TEST(DeployEventPids, EventForkAttachesTheFollowersOnTheList) {
  FakeDeploy d;
  deploy::EventPids& pids = d.deployer().event_pids();
  EXPECT_FALSE(pids.follows_forks());
  ASSERT_TRUE(pids.follow_forks(true));
  EXPECT_TRUE(pids.follows_forks());
  EXPECT_EQ(d.kernel().followers(), (std::vector<uint64_t>{pid_map(d)->id}));
  // Once: setting it again attaches nothing more.
  ASSERT_TRUE(pids.follow_forks(true));
  EXPECT_EQ(d.kernel().followers().size(), 1u);
  ASSERT_TRUE(pids.follow_forks(false));
  EXPECT_TRUE(d.kernel().followers().empty());
  // One that cannot attach leaves it off.
  d.kernel().fail_nth(FakeKernel::Op::Follow, 1, EINVAL);
  EXPECT_FALSE(pids.follow_forks(true));
  EXPECT_FALSE(pids.follows_forks());
  EXPECT_TRUE(d.kernel().followers().empty());
}

}  // namespace
}  // namespace histd::testing
