// SPDX-License-Identifier: GPL-2.0-only
// Reloading histd's configuration directory (config::reconcile): at start,
// on SIGHUP (systemd's ExecReload=), and for `histctl reload`. One at a
// time; each logs what it did and every line it could not apply (stderr,
// the journal under systemd; error_log too).
#pragma once

#include <filesystem>
#include <mutex>
#include <thread>

#include "histd/config.h"
#include "histd/engine.h"
#include "histd/fd.h"

namespace histd::daemon {

class Reloader {
 public:
  // From now on SIGHUP asks for a reload instead of ending histd (its
  // default action, and libfuse's handler's): the handler only writes an
  // eventfd, which start()'s thread answers. Signals that arrive before
  // start() are answered then. Installed before the FUSE loop sets its
  // handlers, which then leave SIGHUP alone (libfuse replaces only default
  // dispositions). One Reloader per process.
  static Expected<std::unique_ptr<Reloader>> install(std::filesystem::path dir);
  // SIGHUP is ignored from then on: a late one must not end histd halfway
  // through its shutdown.
  ~Reloader();
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // One reload, logged; waits for one already running.
  config::Report reload(engine::Engine& engine);
  // The thread that answers SIGHUP (start it after any fork).
  void start(engine::Engine& engine);
  // Ends that thread, after the reload it may be running.
  void stop();

 private:
  explicit Reloader(std::filesystem::path dir) : dir_(std::move(dir)) {}
  void serve(engine::Engine& engine);

  std::filesystem::path dir_;
  std::mutex mu_;  // one reload at a time
  Fd hup_;         // eventfd the SIGHUP handler writes
  Fd stop_;        // eventfd: stop()
  std::thread thread_;
};

}  // namespace histd::daemon
