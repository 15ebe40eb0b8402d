// SPDX-License-Identifier: GPL-2.0-only
// The bad-input matrix: malformed commands written to trigger files, each
// refused with the kernel's (or histd's) text and a caret at the exact byte,
// and none changing a trigger, a table or a count. Inline-caret notation: '^'
// marks the byte the caret must point at and is removed before writing.
#include <gtest/gtest.h>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

struct Case {
  const char* event;  // "system:event"
  const char* marked;
  const char* text;  // error text after "error: "
};

// sys_enter_write: __syscall_nr, fd, buf, count. sched_switch: prev_comm,
// prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio.
const Case kCases[] = {
    // keys
    {"syscalls:sys_enter_write", "^hist:", "hist trigger needs keys="},
    {"syscalls:sys_enter_write", "^hist:vals=count", "hist trigger needs keys="},
    {"syscalls:sys_enter_write", "^hist:sort=count", "hist trigger needs keys="},
    {"syscalls:sys_enter_write", "hist:^keys=", "Empty assignment"},
    {"syscalls:sys_enter_write", "hist:keys=^nosuch", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=fd,^nosuch", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=fd,^,count", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=^,fd", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=^\"fd\"", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=^9fd", "Expecting numeric literal"},
    {"syscalls:sys_enter_write", "hist:keys=^fd;count", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=fd,count,buf,^__syscall_nr", "too many keys (max 3)"},
    {"syscalls:sys_enter_write", "hist:keys=^hitcount", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=^common_type",
     "not supported by histd yet: BPF programs cannot read common_type"},
    {"syscalls:sys_enter_write", "hist:keys=^common_flags",
     "not supported by histd yet: BPF programs cannot read common_flags"},
    {"syscalls:sys_enter_write", "hist:keys=^common_preempt_count",
     "not supported by histd yet: BPF programs cannot read common_preempt_count"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^keys=count", "attribute given twice"},
    // modifiers
    {"syscalls:sys_enter_write", "hist:keys=fd.^bogus", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^HEX", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.hex.^log2", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^buckets=0", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^buckets=x", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^buckets", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd.^execname", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=count.^percent", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=count.^graph", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=count.^usecs", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^log2", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^sym", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^sym-offset", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^syscall", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^buckets=10", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^execname", "Invalid field modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count.^stacktrace", "Invalid field modifier"},
    {"sched:sched_switch", "hist:keys=prev_comm.^hex", "Invalid field modifier"},
    {"sched:sched_switch", "hist:keys=prev_comm.^log2", "Invalid field modifier"},
    {"sched:sched_switch", "hist:keys=common_stacktrace.^hex", "Invalid field modifier"},
    // values
    {"syscalls:sys_enter_write", "hist:keys=fd:^vals=", "Empty assignment"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=^nosuch", "Couldn't find field"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count,buf,^__syscall_nr",
     "too many values (max 2 besides hitcount)"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count:^vals=buf", "attribute given twice"},
    {"sched:sched_switch", "hist:keys=prev_pid:vals=^prev_comm", "a string can not be a value"},
    {"sched:sched_switch", "hist:keys=prev_pid:vals=^common_stacktrace",
     "not supported by histd yet: arrays as values"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=count/^0", "Division by zero"},
    {"syscalls:sys_enter_write", "hist:keys=fd:vals=^$ts0", "Couldn't find variable"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^nohitcount", "Non-hitcount value is required for 'nohitcount'"},
    // sort
    {"syscalls:sys_enter_write", "hist:keys=fd:^sort=", "Empty assignment"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=^nosuch", "Sort field must be a key or a val"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=^buf", "Sort field must be a key or a val"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^sort=fd,", "Empty sort field"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^sort=,fd", "Empty sort field"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=fd.^up", "Invalid sort modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=fd.^desc", "Invalid sort modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=fd.hex.^bogus", "Invalid sort modifier"},
    {"syscalls:sys_enter_write", "hist:keys=fd,count:^sort=fd,count,hitcount", "Too many sort fields (Max = 2)"},
    {"syscalls:sys_enter_write", "hist:keys=fd:sort=fd:^sort=hitcount", "attribute given twice"},
    // size, name, clock
    {"syscalls:sys_enter_write", "hist:keys=fd:size=^big", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:size=^-1", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:size=^0x", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:size=^09", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^size=0", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^size=131073", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:size=^99999999999999999999", "size must be a number from 1 to 131072"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^size=", "Empty assignment"},
    {"syscalls:sys_enter_write", "hist:keys=fd:size=128:^size=256", "attribute given twice"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^name=", "Empty assignment"},
    {"syscalls:sys_enter_write", "hist:keys=fd:name=a:^name=b", "attribute given twice"},
    {"syscalls:sys_enter_write", "hist:keys=fd:clock=^bogus", "Couldn't set trace_clock"},
    {"syscalls:sys_enter_write", "hist:keys=fd:clock=^x86-tsc", "Couldn't set trace_clock"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^clock=", "Empty assignment"},
    // unknown attributes and actions
    {"syscalls:sys_enter_write", "hist:keys=fd:^junk", "unknown hist trigger attribute"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^", "unknown hist trigger attribute"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^Pause", "unknown hist trigger attribute"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^paused", "unknown hist trigger attribute"},
    {"syscalls:sys_enter_write", "hist:keys=fd:^ts0=common_timestamp,ts0=fd", "Variable already defined"},
    {"syscalls:sys_enter_write", "hist:keys=fd:x=count:onmax(^$y).save(fd)",
     "Couldn't find onmax or onchange variable"},
    {"syscalls:sys_enter_write", "hist:keys=fd:x=count:onmatch(a.^b).c(fd)", "Invalid subsystem or event name"},
    {"syscalls:sys_enter_write", "hist:keys=fd:x=count:onmatch(syscalls.sys_enter_write).^nosuch($x)",
     "Couldn't find synthetic event"},
    {"syscalls:sys_enter_write", "hist:keys=fd:x=^count+fd+fd+fd+fd", "Too many subexpressions (3 max)"},
    {"syscalls:sys_enter_write", "^hist:keys=fd:x=common_timestamp.usecs-common_timestamp",
     "Timestamp units in expression don't match"},
    {"syscalls:sys_enter_write", "^histo:keys=fd", "unknown trigger command"},
    {"syscalls:sys_enter_write", "^traceonce", "unknown trigger command"},
    {"syscalls:sys_enter_write", "^snapshot+1", "unknown trigger command"},
    {"syscalls:sys_enter_write", "stacktrace:^foo", "a trigger's count must be a number"},
    {"syscalls:sys_enter_write", "enable_event:^nogroup:noevent", "Invalid subsystem or event name"},
    {"syscalls:sys_enter_write", "traceoff if a 1^", "Invalid operator"},
    {"syscalls:sys_enter_write", "^hist:keys=fd:cont", "Can't clear or continue a nonexistent hist trigger"},
    {"syscalls:sys_enter_write", "^hist:keys=fd:clear", "Can't clear or continue a nonexistent hist trigger"},
    {"syscalls:sys_enter_write", "^hist:keys=fd:continue", "Can't clear or continue a nonexistent hist trigger"},
    // filters
    {"syscalls:sys_enter_write", "hist:keys=fd if nosuch ^== 1", "Field not found"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd =^ 1", "Invalid operator"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd =^~ 1", "Invalid operator"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd 1^", "Invalid operator"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd |^| 1", "Invalid operator"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == a^bc", "Invalid value (did you forget quotes)?"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == c^ount", "Invalid value (did you forget quotes)?"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == -^1", "Illegal integer value"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == \"^1\"", "Expecting numeric field"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == 0^x", "Illegal integer value"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == 9^9999999999999999999", "Illegal integer value"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd ~ \"^a*\"", "Expecting numeric field"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^(fd == 1", "Too many '('"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^((fd == 1) && (count == 2)", "Too many '('"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == 1^)", "Too few '('"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^)", "Too few '('"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == 1 &&^", "Meaningless filter expression"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd == 1 ^count == 2", "Meaningless filter expression"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^&& fd == 1", "Meaningless filter expression"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^1 == fd", "Meaningless filter expression"},
    {"syscalls:sys_enter_write", "hist:keys=fd if fd.^hex == 1", "not supported by histd yet: filter field modifiers"},
    {"syscalls:sys_enter_write", "hist:keys=fd if ^common_flags == 1",
     "not supported by histd yet: BPF programs cannot read common_flags"},
    {"sched:sched_switch", "hist:keys=prev_pid if prev_comm == ^\"bash", "Missing matching quote"},
    {"sched:sched_switch", "hist:keys=prev_pid if prev_comm < \"^bash\"", "Illegal operation for field type"},
    {"sched:sched_switch", "hist:keys=prev_pid if prev_comm & 1^", "Expecting string field"},
    {"sched:sched_switch", "hist:keys=prev_pid if prev_comm >= a^", "Illegal operation for field type"},
    // enable_hist / disable_hist
    {"sched:sched_switch", "enable_hist:^", "Missing subsystem"},
    {"sched:sched_switch", "enable_hist:^syscalls", "Missing subsystem"},
    {"sched:sched_switch", "enable_hist:^nosuch:event", "Invalid subsystem or event name"},
    {"sched:sched_switch", "enable_hist:syscalls:^sys_enter write", "Invalid subsystem or event name"},
    {"sched:sched_switch", "enable_hist:syscalls:sys_enter_write:^many", "a trigger's count must be a number"},
    {"sched:sched_switch", "disable_hist:^:sys_enter_write", "Invalid subsystem or event name"},
    {"sched:sched_switch", "enable_hist:syscalls:sys_enter_write if nosuch ^== 1", "Field not found"},
    {"sched:sched_switch", "enable_hist:syscalls:sys_enter_write if prev_pid =^ 1", "Invalid operator"},
};

class BadInput : public EngineTest {};

TEST_F(BadInput, EveryCaseRefusedWithItsTextAndCaretChangingNothing) {
  EXPECT_GE(std::size(kCases), 100u);
  // State that must survive every refused command: a trigger with counts on
  // each event.
  add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
  add("sched", "sched_switch", "hist:keys=prev_pid");
  Record w(40);
  w.pid(1).set<uint64_t>(16, 3).set<uint64_t>(32, 7);
  inject("syscalls", "sys_enter_write", w);
  Record s(64);
  s.pid(1).set<int32_t>(24, 42);
  inject("sched", "sched_switch", s);

  for (const Case& c : kCases) {
    const std::string event = c.event;
    const std::string sys = event.substr(0, event.find(':')), name = event.substr(event.find(':') + 1);
    std::string cmd = c.marked;
    const size_t caret = cmd.find('^');
    cmd.erase(caret, 1);
    const std::string triggers_before = read_trigger(*engine_, sys, name);
    auto tables = [](const std::string& h) { return h.substr(0, h.find("\nERROR: ")); };
    const std::string hist_before = tables(read_hist(*engine_, sys, name).value());
    engine_->clear_error_log();

    auto r = engine_->write_trigger(sys, name, cmd);
    ASSERT_FALSE(r.ok()) << cmd;
    EXPECT_EQ(r.error().error.err, EINVAL) << cmd;
    const std::string log = read_error_log(*engine_);
    const std::string body = log.substr(log.find("] ") + 2);
    const std::string logged = cmd.rfind("!", 0) == 0 ? cmd.substr(1) : cmd;
    EXPECT_EQ(body, "hist:" + event + ": error: " + c.text + "\n  Command: " + logged + "\n" +
                        std::string(11 + caret, ' ') + "^\n")
        << cmd;
    EXPECT_EQ(read_trigger(*engine_, sys, name), triggers_before) << cmd;
    // The hist file keeps every count; it shows the error below the tables.
    const std::string hist_after = read_hist(*engine_, sys, name).value();
    EXPECT_EQ(tables(hist_after), hist_before) << cmd;
    EXPECT_NE(hist_after.find("\nERROR: " + std::string(c.text) + "\n  Last command: " + logged + "\n"),
              std::string::npos)
        << cmd;
  }
}

}  // namespace
}  // namespace histd::testing
