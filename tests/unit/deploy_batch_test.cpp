// SPDX-License-Identifier: GPL-2.0-only
// Batches without root (a FakeKernel, deploy_support.h): an event's plain
// triggers are loaded once, at end_batch(); a program the kernel refuses
// then is built again trigger by trigger in creation order, and the
// triggers it still refuses are dropped and returned (docs/design/engine.md;
// tests/bpf/batch_test.cpp makes the real verifier refuse one).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "deploy_support.h"
#include "histd/codegen.h"

namespace histd::testing {
namespace {

const std::vector<std::string> kCommands{"hist:keys=common_pid", "hist:keys=call_site", "hist:keys=bytes_req"};

// The tables a load bound (tbl0, tbl1, ...), by map id.
std::set<uint64_t> tables_of(const FakeKernel::LoadCall& load) {
  std::set<uint64_t> out;
  for (size_t i = 0; load.maps.count(codegen::table_map_name(i)); ++i)
    out.insert(load.maps.at(codegen::table_map_name(i)));
  return out;
}

uint64_t newest_table(const FakeKernel& k) {
  uint64_t id = 0;
  for (const FakeKernel::Map* m : k.created())
    if (m->spec.name == "histd_table") id = m->id;
  return id;
}

// Restores kCommands on kmem:kmalloc as a batch's own commands; their
// uids and tables.
void restore(FakeDeploy& d, std::vector<uint64_t>& uids, std::vector<uint64_t>& tables) {
  d.deployer().begin_batch();
  d.deployer().set_batch_command(true);
  for (const std::string& command : kCommands) {
    ASSERT_TRUE(d.run(kKmalloc, command)) << command;
    uids.push_back(d.newest_uid(kKmalloc));
    tables.push_back(newest_table(d.kernel()));
  }
  d.deployer().set_batch_command(false);
}

TEST(DeployBatch, AnEventsProgramIsLoadedOnceAtTheEnd) {
  FakeDeploy d;
  FakeKernel& k = d.kernel();
  std::vector<uint64_t> uids, tables;
  restore(d, uids, tables);
  // Nothing of the event is loaded or attached before the end.
  EXPECT_TRUE(k.loads().empty()) << k.journal();
  EXPECT_TRUE(k.dispatchers().empty()) << k.journal();
  EXPECT_TRUE(d.deployer().end_batch().empty());
  ASSERT_EQ(k.loads().size(), 1u) << k.journal();
  EXPECT_EQ(tables_of(k.loads()[0]), std::set<uint64_t>(tables.begin(), tables.end()));
  ASSERT_EQ(k.dispatchers().size(), 1u);
  EXPECT_EQ(k.dispatchers()[0]->slots[0], k.loads()[0].program);
  EXPECT_EQ(k.dispatchers()[0]->slots[1], k.loads()[0].program);
}

TEST(DeployBatch, ARefusedProgramIsBuiltAgainTriggerByTrigger) {
  FakeDeploy d;
  FakeKernel& k = d.kernel();
  std::vector<uint64_t> uids, tables;
  restore(d, uids, tables);
  // The verifier refuses any program that holds the second trigger.
  k.set_verifier([&](const FakeKernel::LoadCall& load) { return tables_of(load).count(tables[1]) ? EACCES : 0; });
  const std::vector<deploy::Deployer::Refused> refused = d.deployer().end_batch();
  ASSERT_EQ(refused.size(), 1u) << k.journal();
  EXPECT_EQ(refused[0].uid, uids[1]);
  EXPECT_EQ(refused[0].error.err, EACCES);
  // All three (refused), then as single commands would have: the first,
  // the first two (refused), the first and the third.
  const std::vector<FakeKernel::LoadCall>& loads = k.loads();
  ASSERT_EQ(loads.size(), 4u) << k.journal();
  EXPECT_EQ(tables_of(loads[0]), (std::set<uint64_t>{tables[0], tables[1], tables[2]}));
  EXPECT_EQ(tables_of(loads[1]), (std::set<uint64_t>{tables[0]}));
  EXPECT_EQ(tables_of(loads[2]), (std::set<uint64_t>{tables[0], tables[1]}));
  EXPECT_EQ(tables_of(loads[3]), (std::set<uint64_t>{tables[0], tables[2]}));
  EXPECT_EQ(loads[0].program, 0u);
  EXPECT_EQ(loads[2].program, 0u);
  // The last one runs, alone; the second trigger's maps and pins are gone.
  const FakeKernel::Live live = k.live();
  ASSERT_EQ(live.dispatchers.size(), 1u) << k.journal();
  const std::vector<uint64_t>& slots = live.dispatchers.begin()->second;
  EXPECT_EQ(slots[0], loads[3].program);
  EXPECT_EQ(slots[1], loads[3].program);
  EXPECT_EQ(live.programs, (std::set<uint64_t>{loads[3].program})) << k.journal();
  EXPECT_FALSE(live.maps.count(tables[1])) << k.journal();
  EXPECT_TRUE(live.maps.count(tables[0]) && live.maps.count(tables[2])) << k.journal();
  // Two tables of three maps each, the dispatcher's link and array.
  EXPECT_EQ(live.pins.size(), 8u) << k.journal();
}

}  // namespace
}  // namespace histd::testing
