// SPDX-License-Identifier: GPL-2.0-only
#include "file_cache.h"

#include <llvm/Support/MemoryBuffer.h>

#include <map>
#include <memory>
#include <string>

namespace histd::cc_server {

namespace {

constexpr uint64_t kMaxCachedBytes = uint64_t{4} << 20;

struct Kept {
  llvm::vfs::Status status;
  std::shared_ptr<const std::string> bytes;
};

bool same_file(const llvm::vfs::Status& a, const llvm::vfs::Status& b) {
  return a.getUniqueID() == b.getUniqueID() && a.getSize() == b.getSize() &&
         a.getLastModificationTime() == b.getLastModificationTime();
}

// A file read from memory, named as it was opened.
class KeptFile final : public llvm::vfs::File {
 public:
  KeptFile(llvm::vfs::Status status, std::shared_ptr<const std::string> bytes)
      : status_(std::move(status)), bytes_(std::move(bytes)) {}
  llvm::ErrorOr<llvm::vfs::Status> status() override { return status_; }
  // std::string ends with a NUL, as a buffer that must be terminated does.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> getBuffer(const llvm::Twine& name, int64_t, bool terminated,
                                                               bool) override {
    return llvm::MemoryBuffer::getMemBuffer(*bytes_, name.str(), terminated);
  }
  std::error_code close() override { return {}; }

 private:
  llvm::vfs::Status status_;
  std::shared_ptr<const std::string> bytes_;
};

class CachingFileSystem final : public llvm::vfs::ProxyFileSystem {
 public:
  CachingFileSystem() : ProxyFileSystem(llvm::vfs::getRealFileSystem()) {}

  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine& path) override {
    const std::string name = path.str();
    llvm::ErrorOr<llvm::vfs::Status> now = getUnderlyingFS().status(name);
    if (!now || !now->isRegularFile() || now->getSize() > kMaxCachedBytes || name.rfind("/proc/", 0) == 0)
      return ProxyFileSystem::openFileForRead(path);
    auto kept = kept_.find(name);
    if (kept == kept_.end() || !same_file(kept->second.status, *now)) {
      auto file = ProxyFileSystem::openFileForRead(path);
      if (!file) return file;
      auto buffer = (*file)->getBuffer(name, -1, false, false);
      if (!buffer) return ProxyFileSystem::openFileForRead(path);
      kept = kept_.insert_or_assign(name, Kept{*now, std::make_shared<const std::string>((*buffer)->getBuffer().str())})
                 .first;
    }
    return std::unique_ptr<llvm::vfs::File>(
        new KeptFile(llvm::vfs::Status::copyWithNewName(kept->second.status, name), kept->second.bytes));
  }

 private:
  std::map<std::string, Kept> kept_;
};

}  // namespace

llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> caching_file_system() { return new CachingFileSystem(); }

}  // namespace histd::cc_server
