// SPDX-License-Identifier: GPL-2.0-only
// The tree's files, one row each: where a file is, who may write it, and
// what a read, a write and a truncate of it do (the kernel's
// file_operations idea). A new tree file is a row in files.cpp and its
// handlers; lookups, listings, modes, opens, writes and truncates read the
// rows.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>

#include "histd/engine.h"
#include "histd/render.h"
#include "histd/runtime.h"

namespace histd::fs {

class Namespace;
struct Node;

// Where a file is, a bit each: one row may sit in several places
// (`enable` in events/, a system and an event).
enum Place : unsigned {
  kTopRoot = 1u << 0,       // the tree's root
  kInstanceRoot = 1u << 1,  // an instance's directory
  kEventsDir = 1u << 2,     // events/
  kSystemDir = 1u << 3,     // events/<system>/
  kEventDir = 1u << 4,      // events/<system>/<event>/
  kOptionsDir = 1u << 5,    // options/
  kCpuDir = 1u << 6,        // per_cpu/cpuN/
  kRoots = kTopRoot | kInstanceRoot,
};

// Who may do what, as tracefs has it: the owner is root; with --group its
// members read, and write what root writes, except the probe files (a
// probe reads any kernel or process memory: root alone defines one).
enum class Access { ReadOnly, ReadWrite, RootWrites };

// How an open file gets what it reads.
enum class Opening {
  Content,  // made at open by `read`
  Hist,     // the tables rendered, shared between readers (Renderings)
  Pipe,     // nothing at open: each read takes lines out of the buffer
  RawPipe,  // the same, whole pages of raw events (trace_pipe_raw)
};

// What a handler is given: the file, its engine, and who asks.
struct FileCall {
  const Namespace& ns;
  engine::Engine& engine;
  const Node& node;
  render::Options options;  // how the reader is shown kernel addresses
  uid_t uid = 0;
  pid_t pid = 0;                           // in histd's PID namespace, as FUSE names it
  runtime::HostPids* host_pids = nullptr;  // trace_marker: the writer's pid as the kernel shows it
};

// 0 or a negative errno; a write returns the bytes it took.
using ReadFile = int (*)(const FileCall& call, std::string& out);
using WriteFile = int (*)(const FileCall& call, std::string_view data);
using TruncateFile = int (*)(const FileCall& call);

struct TreeFile {
  std::string_view name;
  unsigned places = 0;  // Place bits
  Access access = Access::ReadOnly;
  Opening opening = Opening::Content;
  ReadFile read = nullptr;
  WriteFile write = nullptr;        // null: read-only (EACCES)
  TruncateFile truncate = nullptr;  // null: O_TRUNC drops nothing
  bool polls_tables = false;        // poll() waits for the tables to change
  bool warms_compiler = false;      // a write may compile: wake the compiler at open
  // Whether the file `name` is there (null: always), in directory `dir`.
  bool (*present)(const Namespace& ns, const Node& dir, std::string_view name) = nullptr;
};

// Every row, in the order directories list them.
std::span<const TreeFile> tree_files();
// The row for `name` in `place` (one Place bit) of directory `dir`, if the
// file is there.
const TreeFile* find_file(const Namespace& ns, const Node& dir, Place place, std::string_view name);

}  // namespace histd::fs
