// Changes to the tree's names, refused as tracefs refuses them: a file
// cannot be created (EACCES), nor a directory, link or symbolic link made,
// nor anything removed or renamed (EPERM; ENOENT for what is not there).
// Without these, the FUSE defaults answered ENOSYS, which no tool driving
// tracefs expects ("Function not implemented" for `echo 1 > nosuch`).
#include <cerrno>
#include <string>

#include "fs/context.h"

namespace histd::fs {

namespace {

// EPERM for a name that exists, ENOENT for one that does not.
void refuse_existing(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Tree::Context& ctx = context_of(req);
  auto dir = ctx.inodes.path(parent);
  const bool exists = dir && ctx.ns.resolve(InodeTable::child(*dir, name)).kind != Node::Kind::None;
  fuse_reply_err(req, exists ? EPERM : ENOENT);
}

void op_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, struct fuse_file_info*) { fuse_reply_err(req, EACCES); }
void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EACCES); }
void op_mkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EPERM); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) { refuse_existing(req, parent, name); }
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) { refuse_existing(req, parent, name); }
void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t, const char*, unsigned int) {
  refuse_existing(req, parent, name);
}

}  // namespace

void add_refusal_ops(fuse_lowlevel_ops& ops) {
  ops.create = op_create;
  ops.mknod = op_mknod;
  ops.mkdir = op_mkdir;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.rename = op_rename;
}

}  // namespace histd::fs
