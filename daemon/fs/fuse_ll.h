// SPDX-License-Identifier: GPL-2.0-only
// libfuse's low-level API, at the version the tree is written against.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse3/fuse_lowlevel.h>
