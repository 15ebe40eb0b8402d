// SPDX-License-Identifier: GPL-2.0-only
// The registry's decisions, without a kernel: what each command does to the
// logical state, and the refusals (code, caret, errno) users see for it.
#include <gtest/gtest.h>

#include <algorithm>

#include "histd/parse.h"
#include "histd/registry.h"
#include "histd/synth.h"
#include "registry_support.h"

namespace histd {
namespace {

using registry::Change;
using registry::Registry;
using namespace testing;

// The refusal of `command`, checking that it left `r` as it was.
registry::Refusal no(const Registry& r, const registry::Command& command) {
  const Registry before = r;
  auto applied = r.apply(command);
  EXPECT_FALSE(applied.ok());
  EXPECT_EQ(r, before);
  return applied.ok() ? registry::Refusal{} : applied.error();
}

ErrorCode code_of(const registry::Refusal& refusal) {
  return refusal.diagnostic ? refusal.diagnostic->code : ErrorCode::None;
}

size_t hist_count(const Registry& r, const catalog::EventId& id) {
  const registry::EventTriggers* ev = r.triggers(id);
  return ev ? ev->hist.size() : 0;
}

TEST(Registry, EveryCorpusCommandHasOneIdentity) {
  const auto commands = testing::command_corpus("trigger");
  ASSERT_GT(commands.size(), 40u);
  size_t accepted = 0;
  for (const catalog::EventId& id : fixtures().events()) {
    for (const std::string& text : commands) {
      auto parsed = parse::parse_trigger(text);
      if (!parsed) continue;
      const auto* hist = std::get_if<parse::HistCommand>(&*parsed);
      if (!hist || hist->remove || hist->control != parse::Control::None) continue;
      Registry r(fixtures(), {});
      const Registry empty = r;
      auto applied = r.apply(registry::TriggerWrite{id, *parsed, {}});
      if (!applied) {
        // A refusal changes nothing and says why.
        EXPECT_TRUE(applied.error().diagnostic || applied.error().error.err != 0) << text;
        continue;
      }
      ++accepted;
      ASSERT_EQ(applied->changes.size(), 1u) << text;
      EXPECT_EQ(applied->changes[0].kind, Change::Kind::TriggerAdded);
      r = std::move(applied->next);
      ASSERT_EQ(hist_count(r, id), 1u);
      // The same write again "already exists".
      auto again = no(r, registry::TriggerWrite{id, *parsed, {}});
      EXPECT_EQ(code_of(again), ErrorCode::TriggerEexist) << text;
      EXPECT_EQ(again.error.err, EINVAL);
      // '!' + the printed line removes it, leaving what was there before.
      const std::string line = r.triggers(id)->hist[0].plan.trigger_text();
      auto changes = ok(r, write(id, "!" + line + " "));
      ASSERT_EQ(changes.size(), 1u) << line;
      EXPECT_EQ(changes[0].kind, Change::Kind::TriggerRemoved);
      EXPECT_EQ(r.events(), empty.events()) << line;
    }
  }
  EXPECT_GT(accepted, 40u);
}

TEST(Registry, PauseContinueClearAndRemovalOfNothing) {
  Registry r(fixtures(), {});
  auto none = no(r, write(kKmalloc, "hist:keys=call_site:cont"));
  EXPECT_EQ(code_of(none), ErrorCode::TriggerEnoentClear);
  EXPECT_TRUE(ok(r, write(kKmalloc, "!hist:keys=call_site")).empty());  // not an error, as in the kernel
  EXPECT_TRUE(r.events().empty());
  ok(r, write(kKmalloc, "hist:keys=call_site:pause"));
  EXPECT_TRUE(r.triggers(kKmalloc)->hist[0].paused);
  const uint64_t uid = r.triggers(kKmalloc)->hist[0].uid;
  auto cont = ok(r, write(kKmalloc, "hist:keys=call_site:cont"));
  EXPECT_EQ(cont, (std::vector<Change>{{Change::Kind::TriggerContinued, kKmalloc, uid, {}, {}}}));
  EXPECT_FALSE(r.triggers(kKmalloc)->hist[0].paused);
  auto clear = ok(r, write(kKmalloc, "hist:keys=call_site:size=4096:clear"));  // the size is not identity
  EXPECT_EQ(clear, (std::vector<Change>{{Change::Kind::TriggerCleared, kKmalloc, uid, {}, {}}}));
  EXPECT_EQ(hist_count(r, kKmalloc), 1u);
}

TEST(Registry, NamedTablesJoinWhenCompatible) {
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:name=t:keys=call_site:vals=bytes_req:size=4096"));
  const uint64_t alone = r.map_memory();
  // A different identity (a filter) joining the same table: counted once.
  ok(r, write(kKmalloc, "hist:name=t:keys=call_site:vals=bytes_req if bytes_req > 10"));
  EXPECT_EQ(r.map_memory(), alone);
  EXPECT_EQ(r.triggers(kKmalloc)->hist[1].plan.max_entries, r.triggers(kKmalloc)->hist[0].plan.max_entries);
  const std::string bad = "hist:name=t:keys=bytes_req:vals=bytes_alloc";
  auto mismatch = no(r, write(kKmalloc, bad));
  EXPECT_EQ(code_of(mismatch), ErrorCode::NamedMismatch);
  EXPECT_EQ(mismatch.diagnostic->span.begin, bad.find("name=t"));
  // The layout goes with its last user.
  ok(r, registry::TriggerTruncate{kKmalloc});
  EXPECT_EQ(r.named_layout("t"), nullptr);
  ok(r, write(kKmalloc, bad));
}

// A truncating write removes what the kernel's O_TRUNC open removes: the
// hist triggers and the enable_hist/disable_hist ones; traceon, snapshot,
// enable_event and the like stay.
TEST(Registry, ATruncationRemovesHistTriggersAndTheirEnablersOnly) {
  Registry r(fixtures(), {});
  ok(r, write(kSwitch, "hist:keys=next_pid"));
  ok(r, write(kSwitch, "traceoff:3"));
  ok(r, write(kSwitch, "enable_hist:kmem:kmalloc"));
  ok(r, write(kSwitch, "enable_event:sched:sched_waking"));
  const auto changes = ok(r, registry::TriggerTruncate{kSwitch});
  std::vector<Change::Kind> kinds;
  for (const Change& c : changes) kinds.push_back(c.kind);
  EXPECT_EQ(kinds, (std::vector<Change::Kind>{Change::Kind::ControlRemoved, Change::Kind::TriggerRemoved}));
  const registry::EventTriggers* left = r.triggers(kSwitch);
  ASSERT_NE(left, nullptr);
  EXPECT_TRUE(left->hist.empty());
  std::vector<std::string> commands;
  for (const auto& c : left->controls) commands.push_back(c.cmd.command);
  std::sort(commands.begin(), commands.end());
  EXPECT_EQ(commands, (std::vector<std::string>{"enable_event:sched:sched_waking", "traceoff:3"}));
  // Nothing the truncation removes left: nothing changes.
  EXPECT_EQ(ok(r, registry::TriggerTruncate{kSwitch}), std::vector<Change>{});
}

TEST(Registry, VariablesAreUniquePerEventAndPinTheirOwner) {
  Registry r(fixtures(), {});
  ok(r, write(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  const std::string dup = "hist:keys=prio:ts0=common_timestamp";
  auto d = no(r, write(kWaking, dup));
  EXPECT_EQ(code_of(d), ErrorCode::DuplicateVar);
  EXPECT_EQ(d.diagnostic->span.begin, dup.find("ts0"));
  ok(r, write(kSwitch, "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0"));
  // The owner cannot go while another event uses its variable.
  auto busy = no(r, write(kWaking, "!hist:keys=pid:ts0=common_timestamp.usecs"));
  EXPECT_EQ(code_of(busy), ErrorCode::VarBusy);
  EXPECT_EQ(busy.diagnostic->detail, "used by sched:sched_switch");
  // A truncation leaves them all, as the kernel's (its open succeeds).
  EXPECT_EQ(ok(r, registry::TriggerTruncate{kWaking}), std::vector<Change>{});
  EXPECT_EQ(r.triggers(kWaking)->hist.size(), 1u);
  ok(r, registry::TriggerTruncate{kSwitch});
  ok(r, registry::TriggerTruncate{kWaking});
  EXPECT_TRUE(r.events().empty());
  EXPECT_EQ(r.planning().vars.size(), 0u);
}

TEST(Registry, FieldVariablesComeAndGoWithTheirUser) {
  Registry r(fixtures(), {});
  ok(r, synth_line("wakeup_latency u64 lat; pid_t pid; int prio"));
  ok(r, write(kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"));
  const std::string user =
      "hist:keys=pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,"
      "sched.sched_wakeup.prio)";
  auto changes = ok(r, write(kWaking, user));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].event, kWakeup);  // the field variable first, on its matching event
  ASSERT_EQ(hist_count(r, kWakeup), 2u);
  const registry::HistTrigger& carrier = r.triggers(kWakeup)->hist[1];
  EXPECT_EQ(carrier.plan.vars.at(0).name, "synthetic_prio");
  EXPECT_EQ(carrier.field_var_of, r.triggers(kWaking)->hist[0].uid);
  // The user goes: its field variable goes with it.
  auto gone = ok(r, write(kWaking, "!" + user));
  EXPECT_EQ(gone.size(), 2u);
  EXPECT_EQ(hist_count(r, kWakeup), 1u);
  // Without a histogram on the matching event there is nothing to key it by.
  Registry bare(fixtures(), {});
  ok(bare, synth_line("wakeup_latency u64 lat; pid_t pid; int prio"));
  const std::string on_switch =
      "hist:keys=next_pid:onmatch(sched.sched_wakeup).wakeup_latency(next_pid,next_pid,sched.sched_wakeup.prio)";
  auto missing = no(bare, write(kSwitch, on_switch));
  EXPECT_EQ(code_of(missing), ErrorCode::HistNotFound);
  EXPECT_EQ(missing.diagnostic->span.begin, on_switch.find("sched.sched_wakeup.prio"));
}

TEST(Registry, SyntheticLoopsAreRefused) {
  Registry r(fixtures(), {});
  ok(r, synth_line("a u64 x"));
  ok(r, synth_line("b u64 x"));
  const catalog::EventId a{"synthetic", "a"}, b{"synthetic", "b"};
  ok(r, write(a, "hist:keys=x:v=x:onmatch(synthetic.a).b($v)"));
  const std::string loop = "hist:keys=x:w=x:onmatch(synthetic.b).a($w)";
  auto refused = no(r, write(b, loop));
  EXPECT_EQ(code_of(refused), ErrorCode::SynthCycle);
  EXPECT_EQ(refused.diagnostic->span.begin, loop.find("a"));  // the kernel's errpos(): the first "a"
  // In use: neither removable, nor all at once.
  EXPECT_EQ(no(r, synth_line("!b")).error.err, EBUSY);
  EXPECT_EQ(no(r, registry::SynthTruncate{}).error.err, EBUSY);
  EXPECT_EQ(no(r, synth_line("!nosuch")).error.err, ENOENT);
  auto exists = no(r, synth_line("a u64 y"));
  EXPECT_EQ(code_of(exists), ErrorCode::SynthEventExists);
  EXPECT_EQ(exists.error.err, EEXIST);
  ok(r, registry::TriggerTruncate{a});
  ok(r, registry::SynthEnable{"b", true});
  EXPECT_EQ(no(r, synth_line("!b")).error.err, EBUSY);  // enabled is busy too
  ok(r, registry::SynthEnable{"b", false});
  ok(r, registry::SynthTruncate{});
  EXPECT_TRUE(r.synthetics().empty());
  EXPECT_EQ(no(r, registry::SynthEnable{"b", true}).error.err, ENOENT);
}

TEST(Registry, EnableHistAddRemove) {
  Registry r(fixtures(), {});
  auto nosuch = no(r, write(kWaking, "enable_hist:sched:nosuch"));
  EXPECT_EQ(code_of(nosuch), ErrorCode::InvalidSubsysEvent);
  ok(r, write(kWaking, "enable_hist:kmem:kmalloc:3"));
  auto changes = ok(r, write(kWaking, "disable_hist:sched:sched_switch if prio < 10"));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::ControlAdded);
  ASSERT_EQ(r.triggers(kWaking)->controls.size(), 2u);
  EXPECT_EQ(r.triggers(kWaking)->controls[0].cmd.kind, parse::ControlCommand::Kind::DisableHist);  // newest first
  EXPECT_TRUE(r.triggers(kWaking)->controls[0].filter.has_value());
  // As the kernel's trigger types: the enable and the disable of one target
  // are one type, a second is EEXIST.
  EXPECT_EQ(code_of(no(r, write(kWaking, "enable_hist:kmem:kmalloc"))), ErrorCode::TriggerEexist);
  EXPECT_EQ(code_of(no(r, write(kWaking, "disable_hist:kmem:kmalloc"))), ErrorCode::TriggerEexist);
  // Removal matches on the type and target alone.
  ok(r, write(kWaking, "!disable_hist:kmem:kmalloc:7"));
  EXPECT_EQ(r.triggers(kWaking)->controls.size(), 1u);
  EXPECT_EQ(r.trigger_count(), 1u);
}

TEST(Registry, LimitsRefuseBeforeAnythingChanges) {
  registry::Options o;
  o.limits.max_triggers = 2;
  Registry r(fixtures(), o);
  ok(r, write(kKmalloc, "hist:keys=call_site"));
  ok(r, write(kWaking, "enable_hist:kmem:kmalloc"));
  auto full = no(r, write(kKmalloc, "hist:keys=bytes_req"));
  EXPECT_EQ(code_of(full), ErrorCode::TriggerLimit);
  EXPECT_EQ(full.error.err, ENOSPC);
  EXPECT_EQ(full.diagnostic->detail, "the limit is 2 and 2 are in use");

  registry::Options small;
  small.limits.max_map_memory = 4096;
  Registry m(fixtures(), small);
  const std::string big = "hist:keys=call_site:size=8192";
  auto over = no(m, write(kKmalloc, big));
  EXPECT_EQ(code_of(over), ErrorCode::MapMemoryLimit);
  EXPECT_EQ(over.diagnostic->span.begin, big.find("size="));  // the caret under size=

  registry::Options one;
  one.limits.max_synthetic_events = 1;
  Registry s(fixtures(), one);
  ok(s, synth_line("a u64 x"));
  auto synths = no(s, synth_line("b u64 x"));
  EXPECT_EQ(code_of(synths), ErrorCode::SyntheticLimit);
  EXPECT_EQ(synths.error.err, ENOSPC);
}

TEST(Registry, RemovalByIdentityAndTruncateAsOneChange) {
  Registry r(fixtures(), {});
  ok(r, write(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  ok(r, write(kSwitch, "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0"));
  ok(r, write(kWaking, "enable_hist:kmem:kmalloc"));
  const uint64_t owner = r.triggers(kWaking)->hist[0].uid;
  const std::string line = r.triggers(kWaking)->hist[0].plan.trigger_text();
  // By uid, as the configuration removes its own: refused while referenced.
  auto busy = no(r, registry::TriggerRemove{kWaking, owner, {}, line});
  EXPECT_EQ(code_of(busy), ErrorCode::VarBusy);
  EXPECT_EQ(busy.diagnostic->command, line);
  EXPECT_EQ(no(r, registry::TriggerRemove{kWaking, 999, {}, line}).error.err, ENOENT);
  auto enable = std::get<parse::ControlCommand>(*parse::parse_trigger("enable_hist:kmem:kmalloc"));
  auto gone = ok(r, registry::TriggerRemove{kWaking, 0, enable, enable.command});
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].kind, Change::Kind::ControlRemoved);
  // A truncate is one change for the event (its program goes at once).
  auto truncated = ok(r, registry::TriggerTruncate{kSwitch});
  EXPECT_EQ(truncated, (std::vector<Change>{{Change::Kind::EventTruncated, kSwitch, 0, {}, {}}}));
  ok(r, registry::TriggerRemove{kWaking, owner, {}, line});
  EXPECT_TRUE(r.events().empty());
  // uids are never reused: references name their owner by it.
  ok(r, write(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  EXPECT_GT(r.triggers(kWaking)->hist[0].uid, owner);
}

TEST(Registry, AFieldVariablesChangeSaysWhichParamItCarries) {
  Registry r(fixtures(), {});
  ok(r, synth_line("wakeup_latency u64 lat; pid_t pid; int prio"));
  ok(r, write(kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"));
  auto changes = ok(r, write(kWaking,
                             "hist:keys=pid:lat=common_timestamp.usecs-$ts0:"
                             "onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,sched.sched_wakeup.prio)"));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].param, "sched.sched_wakeup.prio");
  EXPECT_TRUE(changes[0].command.starts_with("hist:keys=pid:synthetic_prio=prio")) << changes[0].command;
  EXPECT_EQ(changes[1].param, "");
  // Refused after its field variable was planned: nothing stays, and the
  // matching event is named as one a command ran on.
  ok(r, write(kWaking,
              "!hist:keys=pid:lat=common_timestamp.usecs-$ts0:"
              "onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,sched.sched_wakeup.prio)"));
  ok(r, write(kWaking, "hist:keys=prio:lat=prio"));
  auto dup = no(r, write(kWaking,
                         "hist:keys=pid:lat=common_timestamp.usecs-$ts0:"
                         "onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,sched.sched_wakeup.prio)"));
  EXPECT_EQ(code_of(dup), ErrorCode::DuplicateVar);
  EXPECT_EQ(dup.tried_on, std::vector<catalog::EventId>{kWakeup});
  EXPECT_EQ(hist_count(r, kWakeup), 1u);
  // Refused on the matching event: the limit's own entry is logged there first.
  registry::Options o;
  o.limits.max_triggers = 3;
  Registry tight(fixtures(), o);
  ok(tight, synth_line("wakeup_latency u64 lat; pid_t pid; int prio"));
  ok(tight, write(kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"));
  ok(tight, write(kKmalloc, "hist:keys=call_site"));
  const std::string user =
      "hist:keys=pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,"
      "sched.sched_wakeup.prio)";
  auto full = no(tight, write(kWaking, user));
  EXPECT_EQ(code_of(full), ErrorCode::TriggerLimit);
  EXPECT_EQ(full.diagnostic->span.begin, user.find("sched.sched_wakeup.prio"));
  EXPECT_EQ(full.diagnostic->detail, "the limit is 3 and 2 are in use; this command needs 2 with its field variables");
}

// What the state file keeps (definitions as listed, hist triggers by uid as
// printed, enables oldest first) applied to an empty registry gives back
// the same triggers: the same lines, identities and owners of references.
TEST(Registry, AMarkSetsPauseAndWordsOfOneTrigger) {
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:keys=call_site"));
  const uint64_t uid = r.events().at(kKmalloc).hist.back().uid;
  auto changes = ok(r, registry::TriggerMark{uid, true, "hist:keys=call_site:vals=hitcount"});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::TriggerPaused);
  EXPECT_EQ(changes[0].uid, uid);
  EXPECT_TRUE(r.find(uid).second->paused);
  EXPECT_EQ(r.find(uid).second->config, "hist:keys=call_site:vals=hitcount");
  changes = ok(r, registry::TriggerMark{uid, false, ""});
  EXPECT_EQ(changes.at(0).kind, Change::Kind::TriggerContinued);
  EXPECT_EQ(no(r, registry::TriggerMark{uid + 1, true, ""}).error.err, ENOENT);
}

TEST(Registry, AWriteIsParsedOnceIntoItsCommand) {
  auto w = registry::TriggerWrite::parse(kKmalloc, "hist:keys=call_site if bytes_req > 1", registry::kMaxCommandBytes,
                                         "declared");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->logged(), "hist:keys=call_site if bytes_req > 1");
  EXPECT_EQ(w->config, "declared");
  EXPECT_TRUE(std::holds_alternative<parse::HistCommand>(w->command));
  auto bad = registry::TriggerWrite::parse(kKmalloc, "hist:keys=call_site:bogus", registry::kMaxCommandBytes, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::UnknownToken);
  const std::string page(registry::kMaxCommandBytes + 1, 'x');
  EXPECT_EQ(registry::TriggerWrite::parse(kKmalloc, page, registry::kMaxCommandBytes, "").error().code,
            ErrorCode::CommandTooLong);
  EXPECT_EQ(registry::SynthWrite::parse("", false).error().code, ErrorCode::EmptyCommand);
  EXPECT_EQ(registry::SynthWrite::parse("lat u64 x", true)->command.definition.name, "lat");
}

TEST(Registry, ADeclarationsIdentityIsTheTriggersKey) {
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:keys=call_site:vals=bytes_req"));
  const std::string held = Registry::identity(r.events().at(kKmalloc).hist.back());
  EXPECT_EQ(r.identity_of(kKmalloc, "hist:keys=call_site:vals=bytes_req:sort=hitcount:size=2048"), held);
  const std::string other = r.identity_of(kKmalloc, "hist:keys=call_site.hex:vals=bytes_req");
  EXPECT_FALSE(other.empty());
  EXPECT_NE(other, held) << "a real change is another trigger";
  EXPECT_EQ(r.identity_of(kKmalloc, "hist:keys=nosuchfield"), "");
  EXPECT_EQ(r.identity_of(kKmalloc, "!hist:keys=call_site"), "");
  EXPECT_EQ(r.identity_of(kKmalloc, "enable_hist:sched:sched_switch"), "");
}

TEST(Registry, ControlTriggersOneOfATypePerEvent) {
  Registry r(fixtures(), {});
  ok(r, write(kWaking, "traceoff if prio < 10"));
  EXPECT_EQ(code_of(no(r, write(kWaking, "traceon"))), ErrorCode::TriggerEexist);
  ok(r, write(kWaking, "snapshot:1"));
  ok(r, write(kWaking, "stacktrace"));
  EXPECT_EQ(code_of(no(r, write(kWaking, "stacktrace:2"))), ErrorCode::TriggerEexist);
  ok(r, write(kWaking, "enable_event:sched:sched_switch"));
  EXPECT_EQ(code_of(no(r, write(kWaking, "disable_event:sched:sched_switch"))), ErrorCode::TriggerEexist);
  EXPECT_EQ(code_of(no(r, write(kWaking, "enable_event:nogroup:noevent"))), ErrorCode::InvalidSubsysEvent);
  EXPECT_EQ(code_of(no(r, write(kWaking, "enable_event:ftrace:print"))), ErrorCode::Unsupported);
  EXPECT_EQ(code_of(no(r, write(kWaking, "traceoff if nosuchfield == 1"))), ErrorCode::FilterFieldNotFound);
  ASSERT_EQ(r.triggers(kWaking)->controls.size(), 4u);
  EXPECT_EQ(r.triggers(kWaking)->controls[0].cmd.kind, parse::ControlCommand::Kind::EnableEvent);  // newest first
  // '!' and the name remove the one of that type, whatever its count or filter.
  auto changes = ok(r, write(kWaking, "!traceon"));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::ControlRemoved);
  EXPECT_EQ(changes[0].control->kind, parse::ControlCommand::Kind::TraceOff);
  EXPECT_EQ(r.triggers(kWaking)->controls.size(), 3u);
  EXPECT_EQ(r.trigger_count(), 3u);
}

TEST(Registry, EnablingAKernelEventIsOneChangeAndCountsAgainstTheLimit) {
  Registry r(
      fixtures(),
      registry::Options{.limits = {.max_triggers = 2, .max_synthetic_events = 8, .max_map_memory = uint64_t{1} << 30}});
  auto changes = ok(r, registry::EventEnable{kSwitch, true});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::EventEnabled);
  EXPECT_EQ(changes[0].event, kSwitch);
  EXPECT_TRUE(ok(r, registry::EventEnable{kSwitch, true}).empty()) << "enabled again: nothing to do";
  EXPECT_TRUE(ok(r, registry::EventEnable{kWaking, false}).empty()) << "not enabled: nothing to do";
  ok(r, registry::EventEnable{kWaking, true});
  auto over = no(r, registry::EventEnable{kKmalloc, true});
  EXPECT_EQ(over.error.err, ENOSPC);
  EXPECT_EQ(over.error.context, "at most 2 events are enabled at once (histd's trigger limit)");
  changes = ok(r, registry::EventEnable{kSwitch, false});
  EXPECT_EQ(changes.at(0).kind, Change::Kind::EventDisabled);
  EXPECT_EQ(r.enabled_events(), (std::set<catalog::EventId>{kWaking}));
  EXPECT_EQ(no(r, registry::EventEnable{{"sched", "nosuch"}, true}).error.err, ENOENT);
  EXPECT_EQ(no(r, registry::EventEnable{{"ftrace", "print"}, true}).error.err, ENOENT);
}

TEST(Registry, WritesToEventsTheCatalogLacksAreENOENT) {
  Registry r(fixtures(), {});
  auto gone = no(r, write(catalog::EventId{"sched", "nosuch"}, "hist:keys=pid"));
  EXPECT_EQ(gone.error.err, ENOENT);
  EXPECT_EQ(gone.error.context, "no event sched:nosuch");
  EXPECT_FALSE(gone.diagnostic.has_value());
}

}  // namespace
}  // namespace histd
