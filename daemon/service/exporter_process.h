// SPDX-License-Identifier: GPL-2.0-only
// How histd runs histd-exporter (daemon::MetricsListener): as a user of its
// own, from a descriptor opened before privileges drop, with the
// descriptors it needs, so that it starts whatever the modes of the
// directories histd was started from; and what histd answers on the port
// while the exporter is not running.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "histd/fd.h"
#include "histd/result.h"

namespace histd::daemon {

struct ExporterUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// `name` as the exporter's user: refused for root, for nobody (which other
// daemons share), and for a user some other program runs as (which could
// take the exporter's socket or signal it).
Expected<ExporterUser> exporter_user(const std::string& name);

// What the exporter is handed: fds 3 (the listening socket), 4 (the stop
// pipe's end) and 5 (histd's metrics socket, opened O_PATH).
struct ExporterFds {
  int listen = -1;
  int stop = -1;
  int metrics_socket = -1;
};

// Starts the exporter (`exe`, opened O_PATH) as `user`: its pid, or why it
// could not start (the exec's own errno, reported back through a pipe).
Expected<pid_t> spawn_exporter(int exe, const ExporterUser& user, const ExporterFds& fds);

// One connection that came while the exporter is not running, answered
// "503 Service Unavailable" with `why` and closed; false if none was waiting.
bool answer_unavailable(int listen_fd, std::string_view why);

}  // namespace histd::daemon
