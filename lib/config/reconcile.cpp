// SPDX-License-Identifier: GPL-2.0-only
// A reload: read the directory, parse, diff against what histd holds, and
// apply the plan through the engine, one step at a time. A step that fails
// is a problem of its line; the others still apply.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "config/problem.h"
#include "histd/config.h"

namespace histd::config {

namespace {

using engine::ConfigItem;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Failures the engine does not put in error_log (as the kernel's silent
// ENOENT and EBUSY): a declared line's must be there.
bool engine_logged(const engine::CommandFailure& f) {
  return f.diagnostic || (f.error.kind != ErrorKind::NotFound && f.error.kind != ErrorKind::Busy);
}

// A failed step of a declared line, with the caret where the engine put
// it, or under the event (no such event) or the command (the rest).
Problem line_problem(const Declaration& d, const engine::CommandFailure& f) {
  if (f.diagnostic) return problem_at(d.origin, d.line, d.column, *f.diagnostic);
  const bool no_event = f.error.kind == ErrorKind::NotFound && d.item.kind == ConfigItem::Kind::Trigger;
  const size_t event_column = d.line.find_first_not_of(" \t");
  const std::string& command = no_event ? d.item.event : d.item.text;
  return problem_at(d.origin, d.line, no_event ? event_column : d.column,
                    Diagnostic{ErrorCode::CommandFailed, Span{0, static_cast<uint32_t>(command.size())}, command,
                               first_line(f.error.context)});
}

// A removal that failed: what histd holds has no line to point at.
Problem held_problem(const std::filesystem::path& dir, const ConfigItem& item, const engine::CommandFailure& f) {
  Problem p;
  p.origin = Origin{dir.string(), 0};
  const std::string what =
      item.kind == ConfigItem::Kind::Synthetic ? "synthetic event " + item.event : item.event + " " + item.text;
  p.diagnostic =
      Diagnostic{ErrorCode::CommandFailed,
                 Span{0, 0},
                 {},
                 fmt::format("removing {} (no longer declared as it was): {}", what, first_line(f.message()))};
  return p;
}

std::string described(const Declaration& d) {
  return d.item.kind == ConfigItem::Kind::Synthetic ? "synthetic event " + d.item.event
                                                    : d.item.event + " " + d.item.text;
}

class Applier {
 public:
  Applier(engine::Engine& engine, Report& report) : engine_(engine), report_(report) {}

  void run(const Step& s) {
    switch (s.op) {
      case Step::Op::Remove:
        return remove(s);
      case Step::Op::Update:
        return update(s);
      case Step::Op::Add:
        return add(s);
    }
  }

  // An addition the kernel refused at the batch's end (ConfigItems::end_batch):
  // not added after all, as if its command had failed.
  void refused(const engine::BatchRefusal& r, const std::vector<Step>& steps) {
    for (const Step& s : steps) {
      const Declaration& d = s.declared;
      if (s.op != Step::Op::Add || d.item.event != r.item.event || d.item.text != r.item.text) continue;
      const std::string said =
          fmt::format("{} {} ({})", s.change ? "changed" : "added", described(d), d.origin.where());
      if (std::erase(report_.changes, said) == 0) continue;  // its command had failed already
      --(s.change ? report_.changed : report_.added);
      return failed(d, r.failure, true);
    }
    report_.problems.push_back(held_problem(report_.dir, r.item, r.failure));
  }

 private:
  void remove(const Step& s) {
    auto r = engine_.config().remove(s.held);
    if (r) {
      if (!s.change) {
        ++report_.removed;
        report_.changes.push_back("removed " + described(s.declared));
      }
      return;
    }
    // The addition that would replace it cannot: it is still there.
    if (s.change) unreplaced_.insert(s.declared.key);
    report_.problems.push_back(held_problem(report_.dir, s.held, r.error()));
    if (!engine_logged(r.error())) engine_.log_config_error(report_.dir.string(), report_.problems.back().diagnostic);
  }

  void update(const Step& s) {
    auto r = engine_.config().update(s.held, s.declared.item.text, s.declared.paused);
    if (!r) return failed(s.declared, r.error(), engine_logged(r.error()));
    if (s.reworded) {
      // Said, so that an edit that changed nothing is not a surprise later.
      ++report_.unchanged;
      report_.changes.push_back(fmt::format("unchanged {} ({}): the same trigger as {}", described(s.declared),
                                            s.declared.origin.where(), s.held.text));
      return;
    }
    ++report_.changed;
    report_.changes.push_back(fmt::format("changed {} ({})", described(s.declared), s.declared.origin.where()));
  }

  void add(const Step& s) {
    const Declaration& d = s.declared;
    if (s.change && unreplaced_.count(d.key)) {
      failed(d,
             engine::CommandFailure{std::nullopt, Error{ErrorKind::Busy, EBUSY,
                                                        "not replaced: what it declared "
                                                        "before could not be removed"}},
             false);
      return;
    }
    auto r = engine_.config().add(d.item, d.origin.where());
    if (!r) return failed(d, r.error(), engine_logged(r.error()));
    ++(s.change ? report_.changed : report_.added);
    report_.changes.push_back(
        fmt::format("{} {} ({})", s.change ? "changed" : "added", described(d), d.origin.where()));
  }

  void failed(const Declaration& d, const engine::CommandFailure& f, bool logged) {
    report_.problems.push_back(line_problem(d, f));
    if (!logged) engine_.log_config_error(d.origin.where(), report_.problems.back().diagnostic);
  }

  engine::Engine& engine_;
  Report& report_;
  std::set<std::string> unreplaced_;  // keys whose old version stayed
};

}  // namespace

std::string Report::summary() const {
  std::string s = fmt::format("configuration {}: {} added, {} changed, {} removed, {} unchanged", dir.string(), added,
                              changed, removed, unchanged);
  if (kept) s += fmt::format(", {} no longer declared but kept (a line or file could not be read)", kept);
  return s + fmt::format(", {} error{}", problems.size(), problems.size() == 1 ? "" : "s");
}

Report reconcile(engine::Engine& engine, const std::filesystem::path& dir) {
  Report report;
  report.dir = dir;
  std::vector<DirFile> files = read_dir(dir, report.problems);
  std::vector<Declaration> declared;
  for (const DirFile& f : files) {
    ParsedFile parsed = parse_file(f.path, f.text);
    for (Declaration& d : parsed.declarations) declared.push_back(std::move(d));
    for (Problem& p : parsed.problems) report.problems.push_back(std::move(p));
  }
  // Each hist trigger by what it is, as the engine would hold it: an edit
  // into other words (`vals=hitcount` spelled out, `keys=` for `key=`) is
  // the same trigger, and keeps its table and counts.
  for (Declaration& d : declared) d.identity = engine.config().identity(d.item);
  // What a line that did not parse, or a file not read, declares is unknown:
  // nothing goes but to be replaced.
  const bool complete = report.problems.empty();
  Plan plan = diff(declared, engine.config().items(), complete);
  for (Problem& p : plan.problems) report.problems.push_back(std::move(p));
  for (const Problem& p : report.problems) engine.log_config_error(p.origin.where(), p.diagnostic);
  report.unchanged = plan.unchanged;
  report.kept = plan.kept;
  Applier applier(engine, report);
  // Each event's program compiled and loaded once, not once per trigger.
  engine.config().begin_batch();
  for (const Step& s : plan.steps) applier.run(s);
  for (const engine::BatchRefusal& r : engine.config().end_batch()) applier.refused(r, plan.steps);
  // In the files' order, whichever stage found them.
  std::stable_sort(report.problems.begin(), report.problems.end(), [](const Problem& a, const Problem& b) {
    return std::tie(a.origin.file, a.origin.line) < std::tie(b.origin.file, b.origin.line);
  });
  return report;
}

}  // namespace histd::config
