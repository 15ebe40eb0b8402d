// SPDX-License-Identifier: GPL-2.0-only
// Fleet configuration: triggers and synthetic events declared in the files
// of a directory (histd --config-dir, /etc/histd/triggers.d), applied at
// start and on every reload (SIGHUP, `histctl reload`).
//
// Files: DIR/*.conf, read in lexical (byte) order; dotfiles, editor backups
// (`x.conf~`, `x.conf.dpkg-old`, ...) and other names are ignored. Lines:
//   # a comment (a line whose first non-blank character is '#'), or blank
//   wakeup_latency u64 lat; pid_t pid        a synthetic event, as written to synthetic_events
//   sched:sched_switch hist:keys=next_pid    SYSTEM:EVENT, then a command as written to its trigger file
// A line whose first word holds a ':' is a trigger; any other a definition
// (a synthetic event's name cannot hold one). Triggers are hist:...,
// enable_hist:... and disable_hist:...; `pause` may be declared, the actions
// `!`, `cont` and `clear` may not.
//
// Stages: parse_file (pure) -> diff (pure) -> reconcile (the engine). The
// triggers and synthetic events a reload made are the configuration's
// (engine::ConfigItem): a later reload adds, changes and removes them to
// match the files, and leaves every other trigger alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/engine.h"
#include "histd/result.h"

namespace histd::config {

inline constexpr const char* kDefaultDir = "/etc/histd/triggers.d";

// Where a declaration was written: a file and its 1-based line.
struct Origin {
  std::string file;
  uint32_t line = 0;          // 0: the file as a whole
  std::string where() const;  // "file:line", or "file"
};

// A line that was not applied (or a file not read): the shape of a
// compiler's error, which `histctl reload` and histd's log print.
//   /etc/histd/triggers.d/10-web.conf:3: error: Couldn't find field
//     syscalls:sys_enter_write hist:keys=fdd
//                                        ^
struct Problem {
  Origin origin;
  Diagnostic diagnostic;  // its command and span, as the engine or parser gave them
  std::string line;       // the line as written ("" for a file)
  uint32_t column = 0;    // the caret's column in `line`
  std::string text() const;
};

// One declared trigger or synthetic event.
struct Declaration {
  engine::ConfigItem item;  // what is applied: the event, and the text as declared
  Origin origin;
  std::string line;     // the whole line, for messages
  uint32_t column = 0;  // where item.text starts in `line`
  // Identity across edits: two declarations with the same identity, or
  // without one the same key, are the same trigger...
  //  - identity: a hist trigger's as the engine matches triggers
  //    (ConfigItem::identity, engine::ConfigItems::identity): one for every
  //    spelling of it. Set by reconcile, which asks the engine; "" when
  //    the command cannot be planned before the reload applies (its event
  //    is absent, it reads a variable defined in the same reload).
  //  - key: as written: a hist trigger's event and command without `size=`
  //    and `pause`; an enable's target; a synthetic event's name.
  std::string key;
  std::string identity;
  // ...and with the same shape the same in every respect: the table's size
  // as the kernel rounds it (a synthetic event's fields).
  std::string shape;
  bool paused = false;
  // Names it depends on and provides: synthetic events it sits on or
  // generates ("synthetic:NAME"), variables it reads or defines ("$name").
  std::vector<std::string> uses;
  std::vector<std::string> provides;
};

struct ParsedFile {
  std::vector<Declaration> declarations;
  std::vector<Problem> problems;
};

// Parses one file's text; a bad line is a Problem and the others still
// count. Pure.
ParsedFile parse_file(const std::string& file, std::string_view text);

// The declaration an item histd holds stands for (its origin unknown):
// what diff compares the files with. Fails only for text histd did not
// write itself.
Result<Declaration, Diagnostic> declaration_of(const engine::ConfigItem& item);

// What a reload does, in order: removals first (enables, then hist
// triggers newest first, then synthetic events), then additions in the
// files' order (synthetic events before triggers).
struct Step {
  enum class Op {
    Remove,  // `held`
    Add,     // `declared` (from its saved entry, when one did not restore)
    Update,  // `held` declared anew as `declared`: the same trigger in other words, or paused or not
  };
  Op op = Op::Add;
  engine::ConfigItem held;
  Declaration declared;
  // Part of a change: a removal and an addition of the same key (or of a
  // declaration that depends on a changed one), counted once, as changed.
  bool change = false;
  // An Update that pauses or continues nothing: the same trigger in other
  // words, counted unchanged.
  bool reworded = false;
};

struct Plan {
  std::vector<Step> steps;
  size_t unchanged = 0;
  size_t kept = 0;                // no longer declared but kept (!remove_undeclared)
  std::vector<Problem> problems;  // declarations made twice
};

// Compares what the files declare with what histd holds (engine::ConfigItems::items()).
// A held item is the declaration of its identity, or else (no identity on
// either side: a saved entry that did not restore, a command not planned)
// of its key.
// What depends on something removed or changed (a trigger on or generating
// a synthetic event, a reader of a variable) is removed and added again
// too. Without `remove_undeclared` (a line that did not parse, a file not
// read: what they declare is unknown) nothing is removed but to be
// replaced, and what is no longer declared is kept, counted unchanged.
// Pure.
Plan diff(const std::vector<Declaration>& declared, const std::vector<engine::ConfigItem>& held,
          bool remove_undeclared = true);

// The files of `dir` as parse_file reads them, in order. A missing
// directory holds none. A file (or the directory) that another user could
// have written, or that cannot be read, is a Problem of its own and is
// skipped.
struct DirFile {
  std::string path;
  std::string text;
};
std::vector<DirFile> read_dir(const std::filesystem::path& dir, std::vector<Problem>& problems);

struct Report {
  std::filesystem::path dir;
  size_t added = 0;
  size_t changed = 0;
  size_t removed = 0;
  size_t unchanged = 0;
  size_t kept = 0;  // no longer declared, kept since some line or file could not be read
  std::vector<Problem> problems;
  // "added syscalls:sys_enter_write hist:keys=fd (10-web.conf:3)", and for
  // a trigger declared in other words "unchanged ... (10-web.conf:3): the
  // same trigger as hist:keys=fd"
  std::vector<std::string> changes;
  // "configuration /etc/histd/triggers.d: 1 added, 0 changed, 0 removed, 4 unchanged, 1 error"
  std::string summary() const;
};

// Brings histd's configuration triggers and synthetic events to what the
// files of `dir` declare. Each bad line is reported (error_log too) and
// the rest applied. Each program is compiled once, at the end
// (engine::ConfigItems::begin_batch); a trigger that fails there is still
// reported at its file and line.
Report reconcile(engine::Engine& engine, const std::filesystem::path& dir);

}  // namespace histd::config
