// SPDX-License-Identifier: GPL-2.0-only
// histd-cc keeps the files its compiles read in memory for the next
// (daemon/histd-cc/file_cache.h). A header that changed on disk since must be
// read again: replaced as editors and package managers do (a new file
// renamed over it) or rewritten in place to another size. Driven through
// histd-cc's own protocol, as histd talks to it; no root needed.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "compiler_support.h"
#include "runtime/cc_protocol.h"

namespace histd::runtime {
namespace {

namespace fs = std::filesystem;

class CcServer {
 public:
  explicit CcServer(const fs::path& server) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(sv[1], 3);
      execl(server.c_str(), server.c_str(), "--fd", "3", nullptr);
      _exit(127);
    }
    close(sv[1]);
    fd_ = sv[0];
  }
  ~CcServer() {
    if (fd_ >= 0) close(fd_);  // the server exits at the end of its input
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  CcServer(const CcServer&) = delete;
  CcServer& operator=(const CcServer&) = delete;

  // The answer to `source`, which includes from `dir`: the object, or
  // the diagnostics.
  std::pair<cc::CcStatus, std::string> request(const fs::path& dir, const std::string& source) {
    const cc::CcRequest r{{"-O2", "-target", "bpf", "-I", dir.string(), "-c", "u.c", "-o", "u.o"}, "u.c", source};
    const std::string bytes = cc::encode(r);
    std::pair<cc::CcStatus, std::string> answer{cc::CcStatus::ServerError, ""};
    if (!cc::write_all(fd_, bytes.data(), bytes.size())) return answer;
    (void)cc::read_response(fd_, answer.first, answer.second);
    return answer;
  }
  // The object; "" when there is none.
  std::string compile(const fs::path& dir, const std::string& source) {
    auto [status, payload] = request(dir, source);
    EXPECT_EQ(status, cc::CcStatus::Object) << payload;
    return status == cc::CcStatus::Object ? payload : "";
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

TEST(CcFileCache, AHeaderChangedOnDiskIsReadAgain) {
  const BpfPaths paths = paths_with();
  if (paths.cc_server.empty()) GTEST_SKIP() << "histd-cc is not built here";
  TempDir dir;
  const fs::path header = fs::path(dir.path()) / "x.h";
  const std::string source = "#include \"x.h\"\nint f(void) { return N; }\n";
  CcServer server(paths.cc_server);

  write_file(header, "#define N 1\n");
  const std::string one = server.compile(dir.path(), source);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(server.compile(dir.path(), source), one);
  // Replaced: a new file renamed over it.
  write_file(header.string() + ".new", "#define N 2\n");
  fs::rename(header.string() + ".new", header);
  const std::string two = server.compile(dir.path(), source);
  EXPECT_NE(two, one);
  // Rewritten in place, to another size.
  write_file(header, "#define N 1 /* again */\n");
  EXPECT_EQ(server.compile(dir.path(), source), one);
  // Gone: the compile says so, as clang would.
  fs::remove(header);
  auto [status, diagnostics] = server.request(dir.path(), source);
  EXPECT_EQ(status, cc::CcStatus::Failed);
  EXPECT_NE(diagnostics.find("'x.h' file not found"), std::string::npos) << diagnostics;
}

}  // namespace
}  // namespace histd::runtime
