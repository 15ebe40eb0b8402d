// SPDX-License-Identifier: GPL-2.0-only
// histd's options, as its command line and config file give them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace histd::daemon {

struct Options {
  bool foreground = false;
  bool verbose = false;
  // Paths are absolute once main() has read them.
  std::string mount = "/run/histd/tracing";
  std::string socket = "/run/histd/histd.sock";
  std::string state_dir = "/var/lib/histd";
  std::string tracefs;  // default: find it (mounting tracefs if needed)
  std::string pin_dir = "/sys/fs/bpf/histd";
  std::string group;  // may read the tree, use the socket and change triggers besides root
  std::string clang;  // default: the clang found at build time
  // Triggers and synthetic events declared in files (config::reconcile).
  std::string config_dir = "/etc/histd/triggers.d";
  // Limits (histd::engine::EngineOptions).
  size_t max_triggers = 1024;
  size_t max_synthetic_events = 1024;
  uint64_t max_map_memory = uint64_t{256} << 20;  // the top tree and its instances together
  size_t max_instances = 32;
  uint64_t percpu_table_limit = uint64_t{16} << 20;
  uint64_t trace_buffer_size = uint64_t{4} << 20;
  bool raw_syscalls = false;
  bool btf_tracepoints = true;      // deploy::Options, where the kernel has BTF
  size_t triggers_per_program = 4;  // deploy::Options
  // Seconds without a compile after which histd-cc gives back its memory
  // and stays (0: never), or stops altogether (0: never).
  int compiler_idle_shed = 60;
  int compiler_idle_stop = 0;
  // Prometheus metrics over HTTP (daemon::MetricsListener): off when empty.
  std::string metrics_listen;
  std::string metrics_user = "histd-exporter";  // runs histd-exporter: a user of its own
  size_t metrics_max_series = 10000;            // label sets of a table a scrape writes
  // The metrics as a file for node_exporter (daemon::TextfileWriter): off when empty.
  std::string textfile_dir;
  int textfile_interval = 15;  // seconds
  int page_interval = 10;      // seconds a column of the page's heatmaps spans
};

}  // namespace histd::daemon
