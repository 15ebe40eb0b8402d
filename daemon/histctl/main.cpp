// SPDX-License-Identifier: GPL-2.0-only
// histctl: the command-line front end of histd. Talks to histd's control
// socket, except `check`, which runs the pipeline offline.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "control/protocol.h"
#include "histctl/client.h"
#include "histctl/percentiles.h"
#include "histctl/watch.h"
#include "histd/catalog.h"
#include "histd/pipeline.h"
#include "histd/quantile.h"
#include "histd/runtime.h"

namespace {

using nlohmann::json;

using namespace histd::histctl;

// The exit codes (client.h), as kExitStatus documents them (so do
// docs/histctl.md and the man page: the doc-test compares the first with
// `histctl --help`).
constexpr const char* kExitStatus =
    "Exit status:\n"
    "  0  success\n"
    "  1  the command was refused: histd's error is printed, with a caret under the fault\n"
    "     (restore: some saved entries still do not restore; reload: a line of the configuration was not\n"
    "     applied; check, explain: the command does not compile; show --percentiles: a table has no key\n"
    "     to take them over)\n"
    "  2  histd could not be reached, or the arguments were wrong (an unknown command or option,\n"
    "     a missing argument, a format file that cannot be read)\n"
    "  3  the caller may not use histd's control socket (root, or histd's --group, only)\n";

// check and explain show the program histd loads; which entry it has
// depends on histd's own --raw-syscalls (pipeline::syscall_entry).
constexpr const char* kRawSyscallsHelp =
    "show the program as histd --raw-syscalls loads it: a syscalls event that can be is entered from the raw "
    "sys_enter/sys_exit tracepoint (default: from its own tracepoint)";

// What a command compiled alone cannot know: other events' variables and
// the synthetic events, which histd has.
bool needs_other_events(histd::ErrorCode code) {
  using histd::ErrorCode;
  return code == ErrorCode::VarNotFound || code == ErrorCode::SynthEventNotFound ||
         code == ErrorCode::SynthVarNotFound || code == ErrorCode::ParamNotFound;
}

std::optional<int> explain_by_histd(const std::string& socket_path, const std::string& event,
                                    const std::string& command);

// `histd_socket`: for explain, where to ask histd for a command that needs
// what histd has (null: --tracefs or --raw-syscalls asked for this
// machine's formats or entries alone).
int check(const std::string& command, const std::string& format_path, const std::string& system, bool explain,
          bool raw_syscalls, const std::string& event = {}, const std::string* histd_socket = nullptr) {
  std::ifstream in(format_path);
  if (!in) {
    if (histd_socket) {
      if (auto rc = explain_by_histd(*histd_socket, event, command)) return *rc;
    }
    fmt::print(stderr, "histctl: cannot read {}\n", format_path);
    return kBadArguments;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto format = histd::catalog::parse_format(ss.str(), system);
  if (!format) {
    fmt::print(stderr, "histctl: {}: {}\n", format_path, format.error().context);
    return kBadArguments;
  }
  auto compiled = histd::pipeline::compile(command, *format, {.raw_syscalls = raw_syscalls});
  if (!compiled) {
    const histd::Diagnostic& d = compiled.error();
    const bool others = !event.empty() && needs_other_events(d.code);
    if (others && histd_socket) {
      if (auto rc = explain_by_histd(*histd_socket, event, command)) return *rc;
    }
    fmt::print(stderr, "error: {}\n{}", d.message(), caret_block(d.command, d.span.begin));
    if (others)
      fmt::print(stderr,
                 "histctl: explain compiles a command alone, as the event's only trigger, unless histd answers; "
                 "once histd has it, `histctl explain {}` prints the programs histd runs with it\n",
                 event);
    return kRefused;
  }
  fmt::print("{}\n", compiled->plan.trigger_text());
  if (explain)
    fmt::print("\n{}kernel: {}\n\n{}{}", histd::plan::describe(compiled->plan),
               histd::runtime::kernel_needed(compiled->unit.source), compiled->unit.source,
               histd::codegen::values_comment(compiled->unit));
  return 0;
}

// explain SYSTEM:EVENT COMMAND: the plan and the generated BPF C, from the
// machine's own event format, installing nothing.
int explain_event(const std::string& event, const std::string& command, const std::string& tracefs, bool raw_syscalls,
                  const std::string& socket_path) {
  auto ev = histd::control::split_event(event);
  if (!ev) {
    fmt::print(stderr, "histctl: expected SYSTEM:EVENT, got '{}'\n", event);
    return kBadArguments;
  }
  std::filesystem::path root = tracefs;
  if (root.empty()) {
    auto found = histd::catalog::find_tracefs();
    if (!found) {
      fmt::print(stderr, "histctl: {}\n", found.error().context);
      return kBadArguments;
    }
    root = *found;
  }
  const bool own_formats = !tracefs.empty() || raw_syscalls;
  return check(command, (root / "events" / ev->first / ev->second / "format").string(), ev->first, true, raw_syscalls,
               event, own_formats ? nullptr : &socket_path);
}

// The programs histd answered ("source", "preview"): each plan, the
// oldest Linux release that loads them and their C; a refusal with its
// caret when histd gave one.
int print_programs(const std::optional<json>& reply, int rc) {
  if (!reply) return rc;
  if (!reply->value("ok", false)) {
    fmt::print(stderr, "error: {}\n", reply->value("error", "unknown error"));
    if (reply->contains("caret"))
      fmt::print(stderr, "{}", caret_block(reply->value("command", ""), reply->value("caret", size_t{0})));
    return kRefused;
  }
  const std::string source = reply->value("output", ""), plans = reply->value("plans", "");
  fmt::print("{}{}kernel: {}\n\n{}", plans, plans.empty() ? "" : "\n", histd::runtime::kernel_needed(source), source);
  return 0;
}

// explain SYSTEM:EVENT COMMAND through histd (the control socket's
// "preview"), for a command that needs other events' variables or
// synthetic events, or on an event whose format is histd's alone (a
// synthetic event's): histd plans it with what it has and builds the first
// program it would rebuild, changing nothing. nullopt when histd cannot be
// asked or has no such event either: the caller then says what it knows.
std::optional<int> explain_by_histd(const std::string& socket_path, const std::string& event,
                                    const std::string& command) {
  int rc = 0;
  auto reply = request(socket_path, {{"op", "preview"}, {"event", event}, {"command", command}}, rc);
  if (!reply || (!reply->value("ok", false) && reply->value("errno", 0) == ENOENT)) return std::nullopt;
  return print_programs(reply, rc);
}

// explain SYSTEM:EVENT without a command: the programs histd runs on the
// event now, from histd: what a command that uses other events' variables
// or synthetic events compiles to, which explain cannot build alone.
int explain_running(const std::string& socket_path, const std::string& event) {
  int rc = 0;
  auto reply = request(socket_path, {{"op", "source"}, {"event", event}}, rc);
  return print_programs(reply, rc);
}

// --percentiles' list, or nullopt after saying where it is wrong.
std::optional<std::vector<histd::quantile::Percentile>> percentile_list(const std::string& list) {
  auto parsed = histd::quantile::parse_list(list);
  if (parsed) return *parsed;
  fmt::print(stderr, "histctl: --percentiles: {}\n{}", parsed.error().message,
             caret_block(list, parsed.error().position));
  return std::nullopt;
}

// show --percentiles: the percentiles of each table of the event, as text or
// JSON; exit 1 when a table has none to give (said on stderr, naming it).
int show_percentiles(const std::string& socket_path, const std::string& event, const std::string& list,
                     const std::string& key, bool as_json) {
  auto wanted = percentile_list(list);
  if (!wanted) return kBadArguments;
  int rc = 0;
  auto doc = show_json(socket_path, event, rc);
  if (!doc) return rc;
  const json result = event_percentiles(*doc, KeyRules{key, true}, *wanted);
  if (result["tables"].empty()) {
    fmt::print(stderr, "histctl: {} has no hist trigger: no table to take percentiles of\n", event);
    return kRefused;
  }
  if (as_json)
    fmt::print("{}\n", result.dump(2, ' ', false, json::error_handler_t::replace));
  else
    fmt::print("{}", percentiles_text(result));
  std::fflush(stdout);
  rc = 0;
  size_t index = 0;
  for (const json& t : result["tables"]) {
    ++index;
    if (!t.contains("error")) continue;
    fmt::print(stderr, "histctl: {}, table {} ({}): {}\n", event, index, t.value("trigger", ""), t.value("error", ""));
    rc = kRefused;
  }
  return rc;
}

// One request to histd; prints the output or the error; the exit code (kExitStatus).
int call(const std::string& socket_path, const json& req) {
  int rc = 0;
  auto reply = request(socket_path, req, rc);
  if (!reply) return rc;
  if (reply->value("ok", false)) {
    fmt::print("{}", reply->value("output", ""));
    return 0;
  }
  fmt::print(stderr, "error: {}\n", reply->value("error", "unknown error"));
  if (reply->contains("command"))
    fmt::print(stderr, "{}", caret_block(reply->value("command", ""), reply->value("caret", 0u)));
  return kRefused;
}

// reload: what histd did (stdout) and the lines it could not apply, each
// with its file:line and a caret (stderr, exit 1).
int reload(const std::string& socket_path) {
  int rc = 0;
  auto reply = request(socket_path, {{"op", "reload"}}, rc);
  if (!reply) return rc;
  fmt::print("{}", reply->value("output", ""));
  // What was applied, then what was not, in that order even in one file (2>&1).
  std::fflush(stdout);
  if (reply->value("ok", false)) return 0;
  const std::string error = reply->value("error", "unknown error");
  fmt::print(stderr, "{}{}", error, error.ends_with('\n') ? "" : "\n");
  return kRefused;
}

// Every option of every subcommand, filled by CLI11.
struct Args {
  std::string socket_path = "/run/histd/histd.sock";
  std::string event, command, definition;
  bool json_out = false;
  std::string percentiles = "50,90,99", key;  // show: --percentiles only when given
  double interval = 1.0;
  int count = 0;
  size_t top = 20;
  bool clear_errors = false, clear_trace = false;
  std::string format_path, system = "unknown", tracefs;
  bool explain = false, raw_syscalls = false, openmetrics = false, folded = false;
};

struct Commands {
  CLI::App *add, *remove, *show, *list, *watch, *status, *restore, *reload, *errors;
  CLI::App *synth_add, *synth_remove, *synth_list, *trace, *check, *explain, *metrics;
};

void define_trigger_commands(CLI::App& app, Args& a, Commands& c) {
  c.add = app.add_subcommand("add", "add a hist trigger (any command the trigger file accepts)");
  c.add->add_option("event", a.event, "SYSTEM:EVENT")->required();
  c.add->add_option("command", a.command, "the command, e.g. 'hist:keys=common_pid'")->required();
  c.remove = app.add_subcommand("remove", "remove the hist trigger a command names");
  c.remove->add_option("event", a.event, "SYSTEM:EVENT")->required();
  c.remove->add_option("command", a.command, "the command as added or as listed")->required();
  c.show = app.add_subcommand("show", "print an event's hist file");
  c.show->add_option("event", a.event, "SYSTEM:EVENT")->required();
  c.show->add_flag("--json", a.json_out, "the tables as JSON (as hist.json in the tree)");
  auto* percentiles = c.show->add_option(
      "--percentiles", a.percentiles,
      "the percentiles of each table's .log2 or .buckets key (or lone numeric key), e.g. 50,90,99,99.9: "
      "the bucket that holds each, and an estimate within it, per set of the other keys");
  c.show->add_option("--key", a.key, "with --percentiles: the key to take them over (when the table has several)")
      ->needs(percentiles);
  c.show
      ->add_flag("--folded", a.folded,
                 "the stacks of each table keyed by a stack, folded as flamegraph.pl and inferno read them "
                 "(frames root first, ';' between them, then the hits)")
      ->excludes(percentiles)
      ->excludes("--json");
  c.list = app.add_subcommand("list", "every trigger, one per line, with its event");
  c.list->add_flag("--json", a.json_out, "with each trigger's BPF map memory and the totals against histd's limits");
}

void define_watch_command(CLI::App& app, Args& a, Commands& c) {
  c.watch = app.add_subcommand(
      "watch", "refresh an event's tables: each value's change and rate per interval, and its percentiles");
  c.watch->add_option("event", a.event, "SYSTEM:EVENT")->required();
  c.watch->add_option("--interval", a.interval, "seconds between refreshes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c.watch->add_option("--count", a.count, "stop after this many refreshes, with --json lines (0: until interrupted)");
  c.watch->add_option("--top", a.top, "entries and label sets a table shows per refresh on the terminal")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c.watch->add_flag("--json", a.json_out,
                    "one JSON object a line per interval: each table's deltas, rates per second and percentiles");
  c.watch
      ->add_option("--percentiles", a.percentiles,
                   "the percentiles of the interval's events, for tables with a .log2 or .buckets key")
      ->capture_default_str();
  c.watch->add_option("--key", a.key, "the key to take percentiles over (default: the .log2 or .buckets key)");
}

void define_daemon_commands(CLI::App& app, Args& a, Commands& c) {
  c.status = app.add_subcommand(
      "status",
      "version, uptime, triggers and map memory against the limits, losses, the compiler, what did not restore");
  c.status->add_flag("--json", a.json_out, "as JSON");
  c.restore = app.add_subcommand("restore", "try the saved triggers that did not restore again");
  c.reload = app.add_subcommand(
      "reload", "apply histd's configuration directory again, as SIGHUP does (exit 1 when a line was not applied)");
  c.metrics = app.add_subcommand("metrics", "every table as Prometheus metrics (docs/metrics.md)");
  c.metrics->add_flag("--openmetrics", a.openmetrics, "in OpenMetrics 1.0 (default: the text format 0.0.4)");
  c.errors = app.add_subcommand("errors", "the error log");
  c.errors->add_flag("--clear", a.clear_errors, "empty the error log");
}

void define_synth_commands(CLI::App& app, Args& a, Commands& c) {
  auto* synth = app.add_subcommand("synth", "synthetic events: add, remove, list");
  synth->require_subcommand(1);
  c.synth_add = synth->add_subcommand("add", "define one, as written to synthetic_events");
  c.synth_add->add_option("definition", a.definition, "e.g. 'wakeup_latency u64 lat; pid_t pid'")->required();
  c.synth_remove = synth->add_subcommand("remove", "remove one by name");
  c.synth_remove->add_option("name", a.definition, "the synthetic event's name")->required();
  c.synth_list = synth->add_subcommand("list", "the definitions, as synthetic_events lists them");
  c.trace = app.add_subcommand("trace", "the trace buffer: enabled synthetic events and trace_marker text");
  c.trace->add_flag("--clear", a.clear_trace, "empty it");
}

// What reads a format file or tracefs instead of asking histd.
void define_offline_commands(CLI::App& app, Args& a, Commands& c) {
  c.check = app.add_subcommand("check", "validate a command offline against an event's format file");
  c.check->add_option("command", a.command, "the hist command")->required();
  c.check->add_option("--format", a.format_path, "the event's tracefs format file")->required();
  c.check->add_option("--system", a.system, "the event's system (the format file does not name it)");
  c.check->add_flag("--explain", a.explain, "also print the plan and the generated BPF C");
  c.check->add_flag("--raw-syscalls", a.raw_syscalls, kRawSyscallsHelp);
  c.explain = app.add_subcommand("explain",
                                 "print the plan and the generated BPF C of a command, installing nothing; "
                                 "without a command, the programs histd runs on the event");
  c.explain->add_option("event", a.event, "SYSTEM:EVENT")->required();
  c.explain->add_option("command", a.command,
                        "the hist command (compiled alone, as the event's only trigger); none: ask histd");
  c.explain->add_option("--tracefs", a.tracefs, "tracefs root (default: this machine's)");
  c.explain->add_flag("--raw-syscalls", a.raw_syscalls, kRawSyscallsHelp);
}

Commands define_commands(CLI::App& app, Args& a) {
  Commands c{};
  app.add_option("--socket", a.socket_path, "histd's control socket (env HISTD_SOCKET)")->capture_default_str();
  define_trigger_commands(app, a, c);
  define_watch_command(app, a, c);
  define_daemon_commands(app, a, c);
  define_synth_commands(app, a, c);
  define_offline_commands(app, a, c);
  return c;
}

// explain with a command compiles it here; without, histd shows its own.
int explain(const CLI::App& cmd, const Args& a) {
  if (cmd.count("command") > 0) return explain_event(a.event, a.command, a.tracefs, a.raw_syscalls, a.socket_path);
  // histd's programs are what histd built: its own options made them.
  if (cmd.count("--tracefs") > 0 || a.raw_syscalls) {
    fmt::print(stderr, "histctl: explain: --tracefs and --raw-syscalls go with a command\n");
    return kBadArguments;
  }
  return explain_running(a.socket_path, a.event);
}

int run(const Commands& c, const Args& a) {
  const std::string& sock = a.socket_path;
  if (c.explain->parsed()) return explain(*c.explain, a);
  if (c.check->parsed()) return check(a.command, a.format_path, a.system, a.explain, a.raw_syscalls);
  if (c.add->parsed()) return call(sock, {{"op", "add"}, {"event", a.event}, {"command", a.command}});
  if (c.remove->parsed()) return call(sock, {{"op", "remove"}, {"event", a.event}, {"command", a.command}});
  if (c.show->parsed() && c.show->count("--percentiles") > 0)
    return show_percentiles(sock, a.event, a.percentiles, a.key, a.json_out);
  if (c.show->parsed() && a.folded)
    return call(sock, {{"op", "show"}, {"event", a.event}, {"command", "folded"}, {"json", false}});
  if (c.show->parsed()) return call(sock, {{"op", "show"}, {"event", a.event}, {"json", a.json_out}});
  if (c.list->parsed()) return call(sock, {{"op", "list"}, {"json", a.json_out}});
  if (c.status->parsed()) return call(sock, {{"op", "status"}, {"json", a.json_out}});
  if (c.restore->parsed()) return call(sock, {{"op", "restore"}});
  if (c.reload->parsed()) return reload(sock);
  if (c.watch->parsed()) {
    auto wanted = percentile_list(a.percentiles);
    if (!wanted) return kBadArguments;
    return watch(WatchOptions{.socket_path = sock,
                              .event = a.event,
                              .interval = a.interval,
                              .count = a.count,
                              .json = a.json_out,
                              .top = a.top,
                              .key = KeyRules{a.key, !a.key.empty()},
                              .percentiles = *wanted});
  }
  if (c.synth_add->parsed()) return call(sock, {{"op", "synth_add"}, {"command", a.definition}});
  if (c.synth_remove->parsed()) return call(sock, {{"op", "synth_remove"}, {"command", a.definition}});
  if (c.synth_list->parsed()) return call(sock, {{"op", "synth_list"}});
  if (c.trace->parsed()) return call(sock, {{"op", a.clear_trace ? "clear_trace" : "trace"}});
  if (c.errors->parsed()) return call(sock, {{"op", a.clear_errors ? "clear_errors" : "errors"}});
  if (c.metrics->parsed())
    return call(sock, {{"op", "metrics"}, {"command", a.openmetrics ? "openmetrics" : "prometheus"}});
  return kBadArguments;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"histctl: drive histd, the kernel's hist triggers on eBPF"};
  app.require_subcommand(1);
  app.footer(kExitStatus);
  app.set_version_flag("--version", std::string("histctl ") + HISTD_VERSION, "print histctl's version and exit");
  Args args;
  if (const char* env = std::getenv("HISTD_SOCKET")) args.socket_path = env;
  const Commands commands = define_commands(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (106 for a missing argument, ...) are not histctl's:
    // --help is a success, every wrong argument kBadArguments.
    return app.exit(e) == 0 ? 0 : kBadArguments;
  }
  return run(commands, args);
}
