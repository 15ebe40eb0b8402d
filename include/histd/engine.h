// The engine: the registry of events, triggers and tables. It applies each
// command atomically (a failed command changes nothing), owns every BPF map,
// and asks the runtime to rebuild exactly the event a change affects.
// Thread-safe: every public call takes the engine's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/plan.h"
#include "histd/result.h"
#include "histd/runtime.h"
#include "histd/symbols.h"

namespace histd::engine {

// Why a command failed: a diagnostic for the user's text, or a system error.
struct CommandFailure {
  std::optional<Diagnostic> diagnostic;
  Error error;
  std::string message() const;
};

using CommandResult = Result<Unit, CommandFailure>;

struct EngineOptions {
  std::filesystem::path cache_dir;  // compiled objects; empty disables the cache
  size_t error_log_entries = 8;     // as tracefs keeps
  // Attach programs to the real tracepoints. Off for tests that drive a
  // fixture catalog through the test entry only.
  bool attach = true;
  // Where the triggers are saved after every change and restored from at
  // start; empty: not saved.
  std::filesystem::path state_file;
  // A bpffs directory where tables are pinned, so that their counts outlive
  // histd (restart, crash); empty: not pinned.
  std::filesystem::path pin_dir;
};

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> create(catalog::Catalog catalog, runtime::Compiler compiler,
                                                  EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const catalog::Catalog& catalog() const { return catalog_; }

  // One write(2) to events/<system>/<event>/trigger.
  CommandResult write_trigger(const std::string& system, const std::string& event, std::string_view text);
  // Opening the trigger file for writing with O_TRUNC: removes every hist trigger of the event.
  CommandResult truncate_triggers(const std::string& system, const std::string& event);

  std::string read_trigger(const std::string& system, const std::string& event);
  Expected<std::string> read_hist(const std::string& system, const std::string& event);
  // The same tables as JSON (render::render_json).
  Expected<std::string> read_hist_json(const std::string& system, const std::string& event);
  // Changes whenever the event's tables may have changed (hits, drops,
  // commands): what poll() on a hist file waits for.
  uint64_t version(const std::string& system, const std::string& event);
  std::string read_hist_debug(const std::string& system, const std::string& event);
  std::string read_error_log();
  void clear_error_log();
  // "system:event <trigger line>" for every trigger, in event order.
  std::vector<std::string> list_triggers();
  // The generated BPF C of an event as it is loaded now ("" without triggers).
  std::string event_source(const std::string& system, const std::string& event);

  // Runs one record through the event's loaded program (the raw_tp test
  // entry): tests and trace_marker. Returns false when the event has no triggers.
  Expected<bool> inject(const std::string& system, const std::string& event, std::span<const uint8_t> record);

  // Re-applies the triggers saved in the state file. What no longer applies
  // (an event gone, a command the catalog refuses) is returned, not fatal.
  std::vector<std::string> restore();

  // Detaches every program. Pinned tables stay pinned (their counts are
  // kept for the next start); the others are freed.
  void shutdown();

 private:
  struct TableState;
  struct Trigger;
  struct EnableTrigger;
  struct EventState;

  Engine(catalog::Catalog catalog, runtime::Compiler compiler, EngineOptions options, runtime::Fd control);

  Expected<std::string> read_tables(const std::string& system, const std::string& event, bool json);
  CommandResult apply_hist(EventState& ev, std::string_view text);
  CommandResult apply_enable(EventState& ev, std::string_view text);
  static bool is_enable_command(std::string_view text);
  std::string enable_line(const EnableTrigger& e) const;
  std::vector<EnableTrigger*> enables_of(EventState& ev);
  std::vector<Trigger*> triggers_of(EventState& ev);
  // Rebuilds the events whose enable_hist/disable_hist target `target`,
  // after its set of hist triggers changed.
  void refresh_enablers_of(const EventState& target);
  Status rebuild(EventState& ev, const std::vector<Trigger*>& triggers, const std::vector<EnableTrigger*>& enables);
  void release_slot(uint32_t slot);
  void save_state();
  std::string pin_base(const plan::HistPlan& plan) const;
  std::string event_pin_base(const EventState& ev) const;
  // Removes pins nothing uses any more (left by a histd that died with
  // triggers the state file no longer names).
  void sweep_pins();
  Status pin_table(TableState& t);
  bool adopt_pinned(TableState& t);
  bool shutting_down_ = false;
  bool restoring_ = false;
  bool is_paused(uint32_t slot) const;
  Expected<std::shared_ptr<TableState>> acquire_table(const plan::HistPlan& plan);
  Status set_paused(uint32_t slot, bool paused);
  Expected<uint32_t> allocate_slot();
  void release_trigger(Trigger& t);
  EventState& event_state(const std::string& system, const std::string& event);
  void log_error(const std::string& location, const Diagnostic& d);
  CommandResult user_error(EventState& ev, Diagnostic d);

  std::mutex mu_;
  catalog::Catalog catalog_;
  runtime::Compiler compiler_;
  EngineOptions options_;
  runtime::Fd control_;  // the shared per-trigger control array
  std::vector<bool> slot_used_;
  std::map<catalog::EventId, std::unique_ptr<EventState>> events_;
  std::map<std::string, std::weak_ptr<TableState>> named_tables_;
  std::deque<std::string> error_log_;
  symbols::SystemResolver resolver_;
};

}  // namespace histd::engine
