// histd's side of the control socket: a thread that accepts histctl
// connections and turns each request into one engine call. Changes need
// root (peer credentials); reads are open to anyone who can connect.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "histd/engine.h"
#include "histd/result.h"
#include "histd/runtime.h"

namespace histd::control {

class Server {
 public:
  // Root, and members of `group` (0: none), may change triggers.
  static Expected<std::unique_ptr<Server>> start(engine::Engine& engine, const std::filesystem::path& socket_path,
                                                 gid_t group = 0);
  ~Server();

 private:
  Server() = default;
  void serve();
  void handle(int fd);

  bool may_change(int fd) const;
  engine::Engine* engine_ = nullptr;
  gid_t group_ = 0;
  std::filesystem::path path_;
  runtime::Fd listen_;
  runtime::Fd stop_;  // eventfd that ends serve()
  std::thread thread_;
};

}  // namespace histd::control
