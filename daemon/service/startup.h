// SPDX-License-Identifier: GPL-2.0-only
// What histd checks at start, before it mounts, listens or pins anything:
// options that would only fail later (every trigger refused, a tree hiding
// its own socket), and the directories it trusts as root. Each failure's
// context is the whole message histd exits with (status 1).
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "histd/fd.h"
#include "histd/result.h"
#include "service/options.h"

namespace histd::daemon {

// The options alone: --socket fits a sun_path; --mount is a directory (or
// will be made) and holds neither the socket nor the state directory;
// --pin-dir is on bpffs (or will be: /sys/fs/bpf, mounted when empty) and
// none of the directories histd would make there has a '.', which bpffs
// refuses; a --clang path can be run; --group names a group (its gid in
// `group`, 0 when none given).
// Looks, changes nothing.
Status check_options(const Options& opt, gid_t& group);

// A directory histd keeps what it later trusts as root in (the state
// directory, the object cache, the pin directory): made 0700 if missing
// (`parents`: with its parents), else refused if it is a symlink, not a
// directory, not histd's user's or writable by group or others; then made
// 0700. Its parents must not let anyone else replace it (owned by root or
// histd's user, not writable by others unless sticky). `what` names it in
// messages ("the state directory"). Returns it open (O_DIRECTORY,
// O_NOFOLLOW), for flock().
Expected<Fd> open_private_dir(const std::filesystem::path& dir, const char* what, bool parents);

// The saved state's file, if there: a regular file of histd's user that no
// one else may write (never a symlink: it is not followed).
Status check_state_file(const std::filesystem::path& file);

}  // namespace histd::daemon
