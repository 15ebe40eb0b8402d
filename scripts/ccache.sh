# SPDX-License-Identifier: GPL-2.0-only
# Sourced by scripts/build.sh and scripts/build-sanitized.sh: when ccache is
# installed (the test command installs it), the builds reuse what this
# machine compiled before, in ccache's own directory outside the checkout,
# whatever the checkout's path (CI builds a fresh clone each time): paths
# under the checkout are hashed relative to it, and the build directory is
# left out of the hash. The sanitized build (clang) is reused only at the
# path it was compiled at: its precompiled headers are given by absolute
# path after -Xclang, and name their build directory inside (every unit
# that includes one hashes its bytes). Sets CCACHE_LAUNCHER
# to cmake's arguments (none without ccache). The settings go into the
# build's compiler launcher, so a later `ninja` in the build directory uses
# them too.
CCACHE_LAUNCHER=()
if command -v ccache >/dev/null; then
  # The precompiled headers' defines and time macros are the same for every
  # unit that includes them (ccache's manual, "Precompiled headers").
  ccache_env="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache"
  CCACHE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_env" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_env")
fi

# ccache_forget_stale_pch BUILD_DIR: a build configured before without this
# launcher (the quick start's, made before ccache was installed) compiles
# everything again, its precompiled headers too. Those are removed first:
# ccache takes a .gch lying beside its header for a precompiled header in
# use, keys the header's compile apart from every fresh build's, and every
# unit that includes the new .gch then misses too.
ccache_forget_stale_pch() {
  local cache=$1/CMakeCache.txt
  [ "${#CCACHE_LAUNCHER[@]}" -gt 0 ] && [ -f "$cache" ] || return 0
  grep -qxF "CMAKE_CXX_COMPILER_LAUNCHER:UNINITIALIZED=$ccache_env" "$cache" && return 0
  find "$1" -name '*.gch' -delete
}
