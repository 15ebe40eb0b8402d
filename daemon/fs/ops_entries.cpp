// SPDX-License-Identifier: GPL-2.0-only
// The tree's names: lookup and forget (the inode table), getattr, setattr
// (truncate) and directory listings. Every one answers at once.
#include <fcntl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fs/context.h"

namespace histd::fs {

namespace {

// libfuse's high-level API numbers directory entries so; `ls -i` shows it.
constexpr ino_t kUnknownIno = 0xffffffff;

// Seconds the kernel keeps a fixed node's name and attributes
// (Namespace::fixed). The others change under us: the kernel asks again
// every time. A path walk to events/SYS/EVENT/trigger was four lookups and
// a getattr each (ftracetest reads every trigger file, twice per test).
constexpr double kFixedTimeout = 10;
double timeout_of(const Tree::Context& ctx, const Node& n) { return ctx.ns.fixed(n) ? kFixedTimeout : 0; }

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Tree::Context& ctx = context_of(req);
  auto dir = ctx.inodes.path(parent);
  if (!dir) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  const std::string path = InodeTable::child(*dir, name);
  const Node n = ctx.ns.resolve(path);
  if (n.kind == Node::Kind::None) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  reply_entry(req, ctx, n, path);
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  context_of(req).inodes.forget(ino, nlookup);
  fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data* forgets) {
  Tree::Context& ctx = context_of(req);
  for (size_t i = 0; i < count; ++i) ctx.inodes.forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind == Node::Kind::None) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st {};
  ctx.fill_stat(n, ino, &st);
  fuse_reply_attr(req, &st, timeout_of(ctx, n));
}

// The size may be set (to truncate a writable file, as tracefs does), and
// times are taken as tracefs takes them (`touch` succeeds, nothing is
// kept); modes and owners are the tree's (--group), EPERM.
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat*, int to_set, struct fuse_file_info*) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind == Node::Kind::None) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  constexpr int kFixed = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID;
  if (to_set & kFixed) {
    fuse_reply_err(req, EPERM);
    return;
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (n.kind != Node::Kind::File || !writable(n)) {
      fuse_reply_err(req, EACCES);
      return;
    }
    if (const int rc = truncate_file(ctx, n, fuse_req_ctx(req)->uid); rc < 0) {
      fuse_reply_err(req, -rc);
      return;
    }
  }
  struct stat st {};
  ctx.fill_stat(n, ino, &st);
  fuse_reply_attr(req, &st, timeout_of(ctx, n));
}

// A directory's listing is taken at opendir and served from there, so that
// readdir offsets stay valid while events come and go.
struct Listing {
  std::vector<std::pair<std::string, bool>> entries;  // name, is a directory
};

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind == Node::Kind::None) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (!n.is_dir()) {
    fuse_reply_err(req, ENOTDIR);
    return;
  }
  auto listing = std::make_unique<Listing>();
  listing->entries = {{".", true}, {"..", true}};
  // Each entry's type as a lookup of it finds it (d_type: ls -F, os.walk
  // and find trust it without a stat): events/ holds the systems and the
  // files enable, header_page and header_event; a system its events and
  // its enable and filter.
  const auto dir_path = ctx.inodes.path(ino);
  for (std::string& name : ctx.ns.list(n)) {
    const bool dir = dir_path && ctx.ns.resolve(InodeTable::child(*dir_path, name)).is_dir();
    listing->entries.emplace_back(std::move(name), dir);
  }
  fi->fh = reinterpret_cast<uint64_t>(listing.release());
  if (fuse_reply_open(req, fi) != 0) delete reinterpret_cast<Listing*>(fi->fh);
}

void op_readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info* fi) {
  const auto* listing = reinterpret_cast<const Listing*>(fi->fh);
  if (!listing || off < 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < listing->entries.size(); ++i) {
    struct stat st {};
    st.st_ino = kUnknownIno;
    st.st_mode = listing->entries[i].second ? S_IFDIR : S_IFREG;
    const size_t need = fuse_add_direntry(req, buf.data() + used, size - used, listing->entries[i].first.c_str(), &st,
                                          static_cast<off_t>(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_releasedir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  delete reinterpret_cast<Listing*>(fi->fh);
  fi->fh = 0;
  fuse_reply_err(req, 0);
}

}  // namespace

void reply_entry(fuse_req_t req, Tree::Context& ctx, const Node& n, const std::string& path) {
  fuse_entry_param e{};
  e.ino = ctx.inodes.lookup(path);
  e.attr_timeout = e.entry_timeout = timeout_of(ctx, n);
  ctx.fill_stat(n, e.ino, &e.attr);
  if (fuse_reply_entry(req, &e) != 0) ctx.inodes.forget(e.ino, 1);  // the kernel never got it
}

Node Tree::Context::node_of(fuse_ino_t ino) const {
  auto p = inodes.path(ino);
  return p ? ns.resolve(*p) : Node{};
}

void Tree::Context::fill_stat(const Node& n, fuse_ino_t ino, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_uid = 0;
  st->st_gid = group;
  // The kernel checks these modes (default_permissions).
  st->st_mode = node_mode(n, group);
  st->st_nlink = n.is_dir() ? 2 : 1;
  st->st_atim = st->st_mtim = st->st_ctim = mounted;
}

void add_entry_ops(fuse_lowlevel_ops& ops) {
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.releasedir = op_releasedir;
}

}  // namespace histd::fs
