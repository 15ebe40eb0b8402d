// SPDX-License-Identifier: GPL-2.0-only
// Changes to the tree's names, refused as tracefs refuses them: a file
// cannot be created (EACCES), nor a node, link or symbolic link made, nor
// a file removed or anything renamed (EPERM; the kernel's lookup has
// already answered ENOENT for a name that is not there). Directories are
// made and removed in instances/ only (instance_dirs.cpp).
// Without these, the FUSE defaults answered ENOSYS, which no tool driving
// tracefs expects ("Function not implemented" for `echo 1 > nosuch`).
#include <cerrno>

#include "fs/context.h"

namespace histd::fs {

namespace {

void op_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, struct fuse_file_info*) { fuse_reply_err(req, EACCES); }
void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EPERM); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_unlink(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int) {
  fuse_reply_err(req, EPERM);
}

}  // namespace

void add_refusal_ops(fuse_lowlevel_ops& ops) {
  ops.create = op_create;
  ops.mknod = op_mknod;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.unlink = op_unlink;
  ops.rename = op_rename;
}

}  // namespace histd::fs
