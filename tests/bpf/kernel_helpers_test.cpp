// SPDX-License-Identifier: GPL-2.0-only
// The kernel's side of runtime::kernel_helpers(): this kernel has every
// helper histd calls, the probe says so of each and not of an id past the
// kernel's last, and the verifier's own log of such a call is read as a
// helper the kernel lacks.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cerrno>
#include <string>

#include "histd/runtime.h"

namespace histd::runtime {
namespace {

// An id no kernel has yet (the newest have ~212).
constexpr int kNoSuchHelper = 4000;

TEST(KernelHelpersOnThisKernel, EveryHelperHistdCallsIsKnown) {
  for (const KernelHelper& h : kernel_helpers()) EXPECT_TRUE(kernel_knows_helper(h.id)) << h.name;
}

TEST(KernelHelpersOnThisKernel, AnIdPastTheKernelsLastIsNot) { EXPECT_FALSE(kernel_knows_helper(kNoSuchHelper)); }

TEST(KernelHelpersOnThisKernel, TheVerifiersLogOfSuchACallNamesTheHelperMissing) {
  const std::string log = helper_call_log(kNoSuchHelper);
  EXPECT_EQ(verifier_refusal(log, EINVAL, "this one")
                .rfind("this kernel (this one) has no BPF helper #4000, which the generated program calls (", 0),
            0u)
      << log;
  // A helper the kernel has: loaded, or refused for its arguments.
  EXPECT_EQ(helper_refusal(helper_call_log(BPF_FUNC_loop), "this one"), "");
}

}  // namespace
}  // namespace histd::runtime
