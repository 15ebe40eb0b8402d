// SPDX-License-Identifier: GPL-2.0-only
// Shared by the deployer's tests without root: a deploy::Deployer over a
// FakeKernel (fake_kernel.h), on the fixture tracefs, driven as the engine
// drives it (the registry decides, the deployer carries out, the registry
// is committed when it succeeded). Units are generated and compiled for
// real (clang needs no root; objects are cached by content for the run):
// the kernel's load is the first step faked, so the layout, the maps bound
// and the checks before the load are the deployer's own.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler_support.h"
#include "fake_kernel.h"
#include "histd/deploy.h"
#include "registry_support.h"
#include "test_paths.h"

namespace histd::testing {

// One object cache for every test of the run: the same unit compiles once.
inline const std::filesystem::path& fake_deploy_cache() {
  static const runtime::TempDir dir;
  return dir.path();
}

// Attached, pinned (in the fake: nothing reaches bpffs), chained four a program.
inline deploy::Options fake_deploy_options() {
  deploy::Options o;
  o.pin_dir = "/fake-bpffs/histd-kif";
  return o;
}

class FakeDeploy {
 public:
  // `cache`: the object cache (the run's shared one unless another is named).
  explicit FakeDeploy(deploy::Options options = fake_deploy_options(),
                      const std::filesystem::path& cache = fake_deploy_cache())
      : catalog_(open_catalog()),
        compiler_(runtime::paths_with(std::filesystem::path{}), cache),
        kernel_(std::make_shared<FakeKernel>()),
        registry_(catalog_, registry::Options{}) {
    auto made = deploy::Deployer::create(
        catalog_, compiler_, std::move(options),
        [this](const catalog::EventId*, const Diagnostic* d, const std::string& note) {
          notes_.push_back(d ? d->message() : note);
        },
        kernel_);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().context);
    if (made) deployer_ = std::move(*made);
  }
  ~FakeDeploy() { deployer_.reset(); }

  // A write of `text` to `event`'s trigger file; the registry moves on
  // only when the deployer carried it out.
  CommandResult run(const catalog::EventId& event, std::string_view text) {
    return run(write(event, text), &event, text);
  }
  // Any command (`event`: the one written to; none for synthetic_events).
  CommandResult run(const registry::Command& command, const catalog::EventId* event, std::string_view text) {
    auto applied = registry_.apply(command);
    if (!applied) {
      ADD_FAILURE() << "the registry refused " << text;
      return system_failure(Error{ErrorKind::Invalid, EINVAL, "refused"});
    }
    CommandResult r = deployer_->deploy(applied->changes, applied->next, event, std::string(text));
    if (r) registry_ = std::move(applied->next);
    return r;
  }
  // The uid the registry gave the newest trigger of `event`.
  uint64_t newest_uid(const catalog::EventId& event) const {
    const registry::EventTriggers* t = registry_.triggers(event);
    return t && !t->hist.empty() ? t->hist.back().uid : 0;
  }

  FakeKernel& kernel() { return *kernel_; }
  const runtime::Compiler& compiler() const { return compiler_; }
  deploy::Deployer& deployer() { return *deployer_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  static catalog::Catalog open_catalog() {
    auto c = catalog::Catalog::open(histd::testing::test_data_dir() / "fixtures" / "tracefs");
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  catalog::Catalog catalog_;
  runtime::Compiler compiler_;
  std::shared_ptr<FakeKernel> kernel_;
  registry::Registry registry_;
  std::vector<std::string> notes_;
  std::unique_ptr<deploy::Deployer> deployer_;
};

}  // namespace histd::testing
