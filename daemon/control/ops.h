// SPDX-License-Identifier: GPL-2.0-only
// What histd does with one control request: the peer's access is checked,
// then the request's op is looked up in a table of small functions, each one
// engine call.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "histd/config.h"
#include "histd/engine.h"
#include "histd/instances.h"
#include "histd/render.h"

namespace histd::control {

// Who is on the other end of a connection, as the kernel recorded it at
// connect(): the process cannot change it afterwards. Also the seam for
// #18's kptr_restrict work: an op that renders kernel addresses gets the
// reader here.
struct Peer {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<gid_t> groups;  // supplementary groups
};

// The peer of a connected unix socket; one whose credentials cannot be read
// keeps uid and gid -1, which no access rule admits.
Peer peer_of(int fd);

// Who may use the control socket at all, reads and changes alike: root, and
// members of `group` (0: no group). Reads are not open to everyone: tables
// and traces carry kernel text and heap addresses that tracefs shows to root
// only.
struct Access {
  gid_t group = 0;
  std::string group_name;  // for the refusal's text
  // A metrics socket (histd --metrics-listen): its peers may read the
  // metrics and nothing else, to read as to change (EPERM).
  bool metrics_only = false;

  bool allows(const Peer& peer) const;
  // The reply to anyone else: EACCES, with "denied": true for histctl.
  nlohmann::json refusal() const;
};

// {"ok": false, "errno": err, "error": message}
nlohmann::json failure(int err, const std::string& message);

// What `histctl reload` runs: histd's configuration directory reconciled
// (config::reconcile, serialized with SIGHUP's). Empty: the op is refused.
using ReloadHook = std::function<config::Report()>;

// What the ops need besides the engine.
struct Services {
  ReloadHook reload;
  // Label sets of a table a metrics scrape writes (histd --metrics-max-series).
  size_t metrics_max_series = 10000;
  // The tree's instances, whose tables the metrics carry too (null: none).
  const instances::Instances* instances = nullptr;
  // What the page's latency heatmaps draw (empty: no heatmaps).
  std::function<std::vector<render::TableHistory>()> page_history;
};

// Answers one request from `peer`: access, the members' types, then the op.
// A bad request gets an error reply; nothing a client sends throws.
nlohmann::json dispatch(engine::Engine& engine, const nlohmann::json& request, const Peer& peer, const Access& access,
                        const Services& services = {});

// Every event of `engine` that has hist triggers, with its tables. Triggers
// that did not restore have no table.
std::vector<readout::EventHist> hist_events(engine::Engine& engine);
// The events with a trigger keyed by a .log2 or .buckets key (the page's
// heatmap sampler reads only these).
std::vector<readout::EventHist> histogram_events(engine::Engine& engine);

// A metrics request's "folded:ID" (kFoldedPrefix; histd-exporter's
// /folded?table=ID): the folded stacks of the page's table ID, or ENOENT
// with kNoStackTable when no stack-keyed table has that id. None for
// another command.
std::optional<Expected<std::string>> folded_stacks(engine::Engine& engine, std::string_view command);

// The page a metrics request's command asks for: "html" (linear y scales)
// or "html-log"; none for another command.
std::optional<render::PageOptions> page_options(std::string_view command);

// What a metrics scrape answers (op "metrics", histd --textfile-dir): every
// table, the top tree's and then each instance's (`instances` may be null),
// then histd's own state (docs/metrics.md).
std::string metrics_text(engine::Engine& engine, const instances::Instances* instances,
                         const render::MetricsOptions& options);

}  // namespace histd::control
