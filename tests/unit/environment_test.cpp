// SPDX-License-Identifier: GPL-2.0-only
// Why a call histd needs was refused, as a container refuses it: a
// seccomp filter (with the capability held), or the capability missing;
// and the kernel's lockdown modes histd cannot run under.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "service/environment.h"

namespace histd::daemon {
namespace {

constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
constexpr uint64_t bit(int cap) { return uint64_t{1} << cap; }

TEST(Environment, ARefusalIsAFilterOrAMissingCapability) {
  const Privileges all{bit(kCapBpf) | bit(kCapPerfmon) | bit(kCapSysAdmin), true};
  EXPECT_EQ(refusal_of(EPERM, all, kCapBpf), Refusal::Seccomp);
  EXPECT_EQ(refusal_of(EACCES, all, kCapPerfmon), Refusal::Seccomp);
  // Without a filter, an EPERM with the capability held is something else.
  EXPECT_EQ(refusal_of(EPERM, Privileges{all.effective, false}, kCapBpf), Refusal::Other);
  // CAP_SYS_ADMIN stands for CAP_BPF and CAP_PERFMON, as the kernel takes it.
  EXPECT_EQ(refusal_of(EPERM, Privileges{bit(kCapSysAdmin), true}, kCapBpf), Refusal::Seccomp);
  EXPECT_EQ(refusal_of(EPERM, Privileges{bit(kCapPerfmon), true}, kCapBpf), Refusal::Capability);
  EXPECT_EQ(refusal_of(EPERM, Privileges{0, false}, kCapPerfmon), Refusal::Capability);
  // Not a refusal at all.
  EXPECT_EQ(refusal_of(EINVAL, all, kCapBpf), Refusal::Other);
  EXPECT_EQ(refusal_of(ENOMEM, Privileges{0, true}, kCapBpf), Refusal::Other);
}

// /sys/kernel/security/lockdown: the mode in brackets.
TEST(Environment, OnlyAConfidentialityLockdownRefusesTheStart) {
  EXPECT_EQ(lockdown_refusal("[none] integrity confidentiality"), "");
  EXPECT_EQ(lockdown_refusal("none [integrity] confidentiality"), "");
  EXPECT_EQ(lockdown_refusal(""), "");  // no lockdown LSM: no file
  const std::string no = lockdown_refusal("none integrity [confidentiality]");
  EXPECT_TRUE(no.starts_with("the kernel is locked down for confidentiality (/sys/kernel/security/lockdown): ")) << no;
  EXPECT_NE(no.find("no tracefs files"), std::string::npos) << no;
  EXPECT_NE(no.find("boot with lockdown=integrity"), std::string::npos) << no;
  // The word alone, not in brackets, is a mode the kernel could be put in.
  EXPECT_EQ(lockdown_refusal("none integrity confidentiality"), "");
}

}  // namespace
}  // namespace histd::daemon
