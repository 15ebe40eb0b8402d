// SPDX-License-Identifier: GPL-2.0-only
#include "histd/engine.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"

namespace histd::engine {

namespace {

registry::Options registry_options(const EngineOptions& o) {
  return registry::Options{.limits = o.limits,
                           .possible_cpus = static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1))};
}

}  // namespace

Engine::Engine(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> compiler, EngineOptions options)
    : catalog_(std::move(catalog)),
      compiler_(std::move(compiler)),
      options_(std::move(options)),
      errors_(std::make_unique<ErrorLog>(options_.error_log_entries)),
      registry_(catalog_, registry_options(options_)) {}

Engine::~Engine() { shutdown(); }

Expected<std::unique_ptr<Engine>> Engine::create(catalog::Catalog catalog, runtime::Compiler compiler,
                                                 EngineOptions options) {
  return make(std::move(catalog), std::make_shared<runtime::Compiler>(std::move(compiler)), std::move(options), true);
}

Expected<std::unique_ptr<Engine>> Engine::create(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> shared,
                                                 EngineOptions options) {
  return make(std::move(catalog), std::move(shared), std::move(options), false);
}

Expected<std::unique_ptr<Engine>> Engine::make(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> compiler,
                                               EngineOptions options, bool owns_compiler) {
  if (options.limits.max_triggers == 0 || options.limits.max_triggers > kMaxTriggers)
    return fail(
        ErrorKind::Invalid, EINVAL,
        fmt::format("the trigger limit must be from 1 to {}, not {}", kMaxTriggers, options.limits.max_triggers));
  if (options.limits.max_synthetic_events == 0 || options.limits.max_synthetic_events > kMaxSyntheticEvents)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the synthetic event limit must be from 1 to {}, not {}", kMaxSyntheticEvents,
                            options.limits.max_synthetic_events));
  if (options.limits.max_map_memory == 0) return fail(ErrorKind::Invalid, EINVAL, "the map memory limit must not be 0");
  if (options.deploy.trace_buffer_size < 4096)
    return fail(
        ErrorKind::Invalid, EINVAL,
        fmt::format("the trace buffer must hold at least 4096 bytes, not {}", options.deploy.trace_buffer_size));
  std::unique_ptr<Engine> engine(new Engine(std::move(catalog), std::move(compiler), std::move(options)));
  Engine& e = *engine;
  e.owns_compiler_ = owns_compiler;
  auto deployer = deploy::Deployer::create(
      e.catalog_, *e.compiler_, e.options_.deploy,
      [&e](const catalog::EventId* event, const Diagnostic* d, const std::string& note) {
        e.commands_->deployer_log(event, d, note);
      },
      deploy::bpf_kernel(e.compiler_->paths()));
  if (!deployer) return unexpected(std::move(deployer).error());
  e.deployer_ = std::move(*deployer);
  e.state_ = std::make_unique<StateFile>(e.options_.state_file, e.options_.deploy.pin_dir, e.registry_,
                                         e.deployer_->reads(), e.deployer_->event_pids());
  e.commands_ = std::make_unique<Commands>(
      Commands::State{e.catalog_, e.options_, e.registry_, *e.deployer_, *e.errors_, *e.state_});
  e.restorer_ = std::make_unique<Restorer>(Restorer::Parts{e.mu_, *e.commands_, *e.state_, *e.errors_, *e.deployer_});
  e.config_ = std::make_unique<ConfigItems>(
      ConfigItems::Parts{e.mu_, *e.commands_, *e.state_, *e.errors_, e.registry_, *e.deployer_});
  e.reads_ = std::make_unique<Reads>(
      Reads::Parts{e.mu_, e.catalog_, e.options_, e.registry_, *e.deployer_, *e.commands_, *e.state_, *e.errors_});
  // The resident compiler loads its libraries now, not on the first command.
  if (owns_compiler) {
    e.compiler_->set_idle_shed(e.options_.compiler.shed);
    e.compiler_->start_server();
    e.compiler_->set_idle_stop(e.options_.compiler.stop);
  }
  if (!e.options_.defer_consumer) e.start_consumer();
  return engine;
}

void Engine::start_consumer() {
  deployer_->ring().start_consumer(mu_);
  // A thread too, so after daemonizing as well.
  if (owns_compiler_) compiler_->watch_server();
}

void Engine::log_config_error(const std::string& location, const Diagnostic& d) {
  std::lock_guard lock(mu_);
  errors_->add(location, d);
}

void Engine::clear_error_log() {
  std::lock_guard lock(mu_);
  errors_->clear();
}

CommandResult Engine::truncate_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  return commands_->truncate_triggers(system, event);
}

CommandResult Engine::write_trigger(const std::string& system, const std::string& event, std::string_view text,
                                    bool may_see_addresses) {
  return compiled_outside([&] {
    return commands_->write_trigger(system, event, text, registry::kMaxCommandBytes, nullptr, may_see_addresses);
  });
}

CommandResult Engine::compiled_outside(const std::function<CommandResult()>& command) {
  // Each run but the last may stop before a compile, and leaves the next
  // run its object. A trigger on a synthetic event stops twice (its own
  // program, then its first generator's); any other stop again means that
  // the state changed meanwhile, and the last run compiles under mu_.
  constexpr int kRuns = 3;
  deploy::CompileOutside outside;
  std::chrono::duration<double> compiling{0};
  for (int run = 1;; ++run) {
    {
      std::lock_guard lock(mu_);
      outside.leave = outside.leave && run < kRuns;
      commands_->set_compile_time(compiling);
      deployer_->compile_outside(&outside);
      CommandResult r = command();
      deployer_->compile_outside(nullptr);
      commands_->set_compile_time({});
      if (!outside.needed) return r;
    }
    const auto began = std::chrono::steady_clock::now();
    // A failure is the next run's to report: it compiles the unit where it
    // is needed, as any command does, and fails as such a compile fails.
    if (auto object = compiler_->compile(*outside.needed))
      outside.compiled[*outside.needed] = std::move(*object);
    else
      outside.leave = false;
    outside.needed.reset();
    compiling += std::chrono::steady_clock::now() - began;
  }
}

Expected<bool> Engine::inject(const std::string& system, const std::string& event, std::span<const uint8_t> record) {
  std::lock_guard lock(mu_);
  return deployer_->inject(catalog::EventId{system, event}, record);
}

void Engine::shutdown() {
  if (!deployer_) return;
  // The consumer takes the lock for each batch: stop it before taking it here.
  deployer_->ring().stop_consumer();
  std::lock_guard lock(mu_);
  deployer_->shutdown();
}

}  // namespace histd::engine
