// SPDX-License-Identifier: GPL-2.0-only
// histd --textfile-dir DIR: the metrics for node_exporter's
// textfile collector, for sites that run node_exporter and open no new
// port. Every interval the text format is written to DIR/histd.prom whole:
// into a new file of its own (O_EXCL: no name another user planted is
// followed or truncated), then renamed over the old one, so the collector
// never reads half a file. A write that fails (a full disk) leaves the
// last whole file and no partial one, and is reported once per cause.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "histd/result.h"

namespace histd::daemon {

class TextfileWriter {
 public:
  // DIR must be a directory: a refusal stops histd at start.
  static Expected<std::unique_ptr<TextfileWriter>> open(std::filesystem::path dir, std::chrono::seconds interval);
  ~TextfileWriter();  // stops writing; the last file stays (node_textfile_mtime_seconds dates it)
  TextfileWriter(const TextfileWriter&) = delete;
  TextfileWriter& operator=(const TextfileWriter&) = delete;

  // After daemonizing: writes what `render` returns now and every interval.
  void start(std::function<std::string()> render);
  // One write, as the thread does it.
  Status write(const std::string& text) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  TextfileWriter() = default;
  void loop();

  std::filesystem::path dir_, path_;
  std::chrono::seconds interval_{15};
  std::function<std::string()> render_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace histd::daemon
