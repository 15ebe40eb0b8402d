// SPDX-License-Identifier: GPL-2.0-only
// instances/: mkdir makes an instance, rmdir removes it (histd/instances.h),
// and the tree's per-instance state (open files, trace_pipes).
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "fs/context.h"

namespace histd::fs {

TracePipe::Source pipe_source(engine::Engine& engine, int cpu, bool raw) {
  deploy::TraceRing& ring = engine.trace_ring();
  if (raw)
    return [&ring, cpu](size_t, const render::Options&, bool last_try) {
      return ring.take_raw_page(uint32_t(cpu), last_try);
    };
  if (cpu >= 0)
    return [&ring, cpu](size_t max, const render::Options& o, bool) {
      return ring.consume_trace_cpu(uint32_t(cpu), max, o.hide_kernel_addresses);
    };
  return [&ring](size_t max, const render::Options& o, bool) {
    return ring.consume_trace(std::chrono::milliseconds(0), max, o.hide_kernel_addresses);
  };
}

TracePipe* Tree::Context::pipe_of(const OpenFile& file) {
  if (file.instance.empty() && file.cpu < 0) return &pipe;
  std::lock_guard lock(instances_mu);
  const PipeKey key{file.instance, file.cpu, file.raw};
  auto it = instance_pipes.find(key);
  if (it != instance_pipes.end()) return it->second.pipe.get();
  auto engine = ns.engine(file.instance);
  if (!engine) return nullptr;
  InstancePipe& p = instance_pipes[key];
  p.engine = std::move(engine);
  p.pipe = std::make_unique<TracePipe>(pipe_source(*p.engine, file.cpu, file.raw));
  if (pipes_started) p.pipe->start();
  return p.pipe.get();
}

bool Tree::Context::opened(const std::string& instance) {
  if (instance.empty()) return true;
  std::lock_guard lock(instances_mu);
  if (!ns.engine(instance)) return false;
  ++open_files[instance];
  return true;
}

void Tree::Context::released(const std::string& instance) {
  if (instance.empty()) return;
  std::lock_guard lock(instances_mu);
  auto it = open_files.find(instance);
  if (it != open_files.end() && --it->second == 0) open_files.erase(it);
}

int Tree::Context::remove_instance(const std::string& name) {
  if (!ns.instances()) return -EPERM;
  std::vector<InstancePipe> gone;  // their engine outlives their pipes' threads
  {
    std::lock_guard lock(instances_mu);
    if (open_files.count(name)) return -EBUSY;
    auto removed = ns.instances()->remove(name);
    if (!removed) return -removed.error().err;
    for (auto it = instance_pipes.begin(); it != instance_pipes.end();) {
      if (std::get<0>(it->first) != name) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = instance_pipes.erase(it);
    }
  }
  // No reader is parked in them (its files are all closed): the threads end.
  for (InstancePipe& p : gone) p.pipe->stop();
  // What the instance had (its printer, trace lines, the buffers of its
  // programs' loads) is free now, mostly below the heap's trim threshold:
  // handed back, or each instance that recorded would leave its room.
  trim_soon();
  return 0;
}

void Tree::Context::start_pipes() {
  pipe.start();
  std::lock_guard lock(instances_mu);
  pipes_started = true;
  for (auto& [name, p] : instance_pipes) p.pipe->start();
}

void Tree::Context::stop_pipes() {
  pipe.stop();
  std::lock_guard lock(instances_mu);
  for (auto& [name, p] : instance_pipes) p.pipe->stop();
}

namespace {

// Only instances/ takes mkdir and rmdir; elsewhere EPERM, as tracefs.
bool in_instances_dir(Tree::Context& ctx, fuse_ino_t parent) {
  return ctx.node_of(parent).kind == Node::Kind::InstancesDir;
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t) {
  Tree::Context& ctx = context_of(req);
  if (!in_instances_dir(ctx, parent) || !ctx.ns.instances()) {
    fuse_reply_err(req, EPERM);
    return;
  }
  auto made = ctx.ns.instances()->create(name);
  if (!made) {
    // Past the limit: said in the top tree's error_log, as a trigger past
    // one of its limits is.
    if (made.error().err == ENOSPC)
      if (const auto top = ctx.ns.engine(std::string())) {
        const std::string command = fmt::format("mkdir instances/{}", name);
        top->log_config_error(
            "instances", Diagnostic{ErrorCode::InstanceLimit, Span{6, static_cast<uint32_t>(command.size())}, command,
                                    made.error().context});
      }
    fuse_reply_err(req, made.error().err);
    return;
  }
  const std::string path = InodeTable::child("/instances", name);
  reply_entry(req, ctx, ctx.ns.resolve(path), path);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Tree::Context& ctx = context_of(req);
  if (!in_instances_dir(ctx, parent)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  fuse_reply_err(req, -ctx.remove_instance(name));
}

}  // namespace

void add_instance_ops(fuse_lowlevel_ops& ops) {
  ops.mkdir = op_mkdir;
  ops.rmdir = op_rmdir;
}

}  // namespace histd::fs
