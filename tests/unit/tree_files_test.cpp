// SPDX-License-Identifier: GPL-2.0-only
// The tree's file table (daemon/fs/files.h): which files each directory
// has, as tracefs lays them out, and rows whose parts agree (a file that
// takes writes is shown writable; one that is shown writable takes them).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fs/files.h"

namespace histd::fs {
namespace {

std::vector<std::string> names_at(Place place) {
  std::vector<std::string> out;
  for (const TreeFile& f : tree_files())
    if ((f.places & place) != 0) out.emplace_back(f.name);
  return out;
}

TEST(TreeFiles, EachDirectoryHasTracefsFiles) {
  EXPECT_EQ(names_at(kTopRoot), (std::vector<std::string>{
                                    "README",         "available_events",    "error_log",           "synthetic_events",
                                    "trace",          "trace_pipe",          "trace_marker",        "snapshot",
                                    "tracing_on",     "current_tracer",      "available_tracers",   "dynamic_events",
                                    "set_event",      "set_event_pid",       "kprobe_events",       "uprobe_events",
                                    "trace_options",  "trace_clock",         "timestamp_mode",      "tracing_cpumask",
                                    "printk_formats", "saved_cmdlines",      "saved_cmdlines_size", "saved_tgids",
                                    "buffer_size_kb", "buffer_total_size_kb"}));
  EXPECT_EQ(names_at(kInstanceRoot),
            (std::vector<std::string>{"error_log", "trace", "trace_pipe", "trace_marker", "snapshot", "tracing_on",
                                      "current_tracer", "available_tracers", "set_event", "set_event_pid",
                                      "trace_options", "trace_clock", "timestamp_mode", "tracing_cpumask",
                                      "buffer_size_kb", "buffer_total_size_kb"}));
  EXPECT_EQ(names_at(kEventsDir), (std::vector<std::string>{"enable", "header_event", "header_page"}));
  EXPECT_EQ(names_at(kSystemDir), (std::vector<std::string>{"enable", "filter"}));
  EXPECT_EQ(names_at(kEventDir), (std::vector<std::string>{"format", "hist", "hist.json", "hist_debug", "id", "trigger",
                                                           "enable", "filter"}));
  // The kernel's trace_options, in its order (6.12, the nop tracer's own two aside).
  EXPECT_EQ(names_at(kOptionsDir), (std::vector<std::string>{"print-parent",
                                                             "sym-offset",
                                                             "sym-addr",
                                                             "verbose",
                                                             "raw",
                                                             "hex",
                                                             "bin",
                                                             "block",
                                                             "fields",
                                                             "trace_printk",
                                                             "annotate",
                                                             "userstacktrace",
                                                             "sym-userobj",
                                                             "printk-msg-only",
                                                             "context-info",
                                                             "latency-format",
                                                             "record-cmd",
                                                             "record-tgid",
                                                             "overwrite",
                                                             "disable_on_free",
                                                             "irq-info",
                                                             "markers",
                                                             "event-fork",
                                                             "trace_printk_dest",
                                                             "copy_trace_marker",
                                                             "hash-ptr",
                                                             "function-trace",
                                                             "stacktrace"}));
  EXPECT_EQ(names_at(kCpuDir), (std::vector<std::string>{"trace", "trace_pipe", "trace_pipe_raw", "stats"}));
}

TEST(TreeFiles, ANameIsOneFileInEachDirectory) {
  for (const Place place : {kTopRoot, kInstanceRoot, kEventsDir, kSystemDir, kEventDir, kOptionsDir, kCpuDir}) {
    const std::vector<std::string> names = names_at(place);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << place;
  }
}

TEST(TreeFiles, AnInstanceHasNoFileTheTopTreeLacks) {
  // tracefs gives an instance its own buffer's files; definitions (events,
  // probes) and README are the top tree's.
  for (const TreeFile& f : tree_files())
    if ((f.places & kInstanceRoot) != 0) {
      EXPECT_NE(f.places & kTopRoot, 0u) << f.name;
    }
}

TEST(TreeFiles, WhatTakesWritesIsShownWritableAndNothingElse) {
  for (const TreeFile& f : tree_files()) {
    EXPECT_EQ(f.write != nullptr, f.access != Access::ReadOnly) << f.name;
    // Truncating, compiling and probing all come with writing.
    if (f.truncate || f.warms_compiler) {
      EXPECT_NE(f.write, nullptr) << f.name;
    }
  }
}

TEST(TreeFiles, HowEachFileIsReadAgreesWithItsOpening) {
  std::map<Opening, std::vector<std::string>> by;
  for (const TreeFile& f : tree_files()) {
    by[f.opening].emplace_back(f.name);
    // trace_pipe is read as it is consumed, never made at open.
    if (f.opening == Opening::Pipe || f.opening == Opening::RawPipe) {
      EXPECT_EQ(f.read, nullptr) << f.name;
    }
    if (f.opening == Opening::Hist) {
      EXPECT_NE(f.read, nullptr) << f.name;
    }
    if (f.polls_tables) {
      EXPECT_EQ(f.opening, Opening::Hist) << f.name;
    }
  }
  EXPECT_EQ(by[Opening::Hist], (std::vector<std::string>{"hist", "hist.json"}));
  // The tree's and each CPU's.
  EXPECT_EQ(by[Opening::Pipe], (std::vector<std::string>{"trace_pipe", "trace_pipe"}));
  EXPECT_EQ(by[Opening::RawPipe], (std::vector<std::string>{"trace_pipe_raw"}));
}

TEST(TreeFiles, OnlyTheKernelsProbeFilesAreRootsAlone) {
  std::vector<std::string> root_writes;
  for (const TreeFile& f : tree_files())
    if (f.access == Access::RootWrites) root_writes.emplace_back(f.name);
  EXPECT_EQ(root_writes, (std::vector<std::string>{"kprobe_events", "uprobe_events"}));
}

}  // namespace
}  // namespace histd::fs
