// histd's side of the control socket: a thread that accepts histctl
// connections and turns each request into one engine call. Changes need
// root (peer credentials); reads are open to anyone who can connect.
#pragma once

#include <filesystem>
#include <memory>
#include <thread>

#include "histd/engine.h"
#include "histd/result.h"
#include "histd/runtime.h"

namespace histd::control {

class Server {
 public:
  static Expected<std::unique_ptr<Server>> start(engine::Engine& engine, const std::filesystem::path& socket_path);
  ~Server();

 private:
  Server() = default;
  void serve();
  void handle(int fd);

  engine::Engine* engine_ = nullptr;
  std::filesystem::path path_;
  runtime::Fd listen_;
  runtime::Fd stop_;  // eventfd that ends serve()
  std::thread thread_;
};

}  // namespace histd::control
