# SPDX-License-Identifier: GPL-2.0-only
# Shared by the e2e tests: start histd on a temp mount, stop it by pid,
# unmount what was mounted. Source it; call histd_start first.
set -euo pipefail

HISTD_BIN=${1:?usage: test.sh HISTD HISTCTL}
HISTCTL_BIN=${2:?usage: test.sh HISTD HISTCTL}
WORK=$(mktemp -d /tmp/histd-e2e.XXXXXX)
# Its owner, this test (pid, start time): tests/sweep.sh sweeps what a test
# killed by its timeout left, never what a running one has.
OWNER_STAT=$(cat /proc/$$/stat)
echo "$$ $(awk '{print $20}' <<<"${OWNER_STAT##*) }")" >"$WORK/owner"
MNT=$WORK/mnt
PIN=/sys/fs/bpf/histd-test-${WORK##*.}
# This test's random suffix (mktemp's): in what must be unique on the
# machine (kernel probe names, comms). Never $$: a container's tests have
# pids of their namespace, counted from 1 as another container's are.
UNIQ=${WORK##*.}
# own_number BASE SPAN: a number of this test's own in [BASE, BASE+SPAN),
# from UNIQ: a write size its filters count, a port.
own_number() { echo $(($1 + $(printf '%s' "$UNIQ" | cksum | cut -d' ' -f1) % $2)); }
HISTD_PID=
FAILURES=0

cleanup() {
  if [ -n "${CHILD:-}" ] && kill -0 "$CHILD" 2>/dev/null; then kill -KILL "$CHILD" 2>/dev/null || true; fi
  if [ -n "$HISTD_PID" ] && kill -0 "$HISTD_PID" 2>/dev/null; then
    kill -TERM "$HISTD_PID"
    for _ in $(seq 50); do kill -0 "$HISTD_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  if mountpoint -q "$MNT" 2>/dev/null || ! stat "$MNT" >/dev/null 2>&1; then
    fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
  fi
  # A test's own undo (mounts it made, probe events), once histd is gone.
  if declare -F test_cleanup >/dev/null; then test_cleanup || true; fi
  if [ -n "${EXPORTER_USER:-}" ]; then
    for _ in $(seq 50); do pgrep -u "$EXPORTER_USER" >/dev/null || break; sleep 0.1; done
    userdel "$EXPORTER_USER" 2>/dev/null || true
  fi
  rm -rf "$WORK" "$PIN"
}

# exporter_user: a user of this test's own for histd-exporter (the package
# makes histd-exporter; a test must not depend on it nor share one), made
# once and deleted at the end. Sets EXPORTER_USER.
exporter_user() {
  if [ -z "${EXPORTER_USER:-}" ]; then
    EXPORTER_USER=hx-$(tr 'A-Z' 'a-z' <<<"${WORK##*.}")
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$EXPORTER_USER"
  fi
}
trap cleanup EXIT

# histd_start [OPTION...]: extra options go to histd (--clang, --tracefs, ...).
# Without --config-dir, the test's own (empty) one: never the machine's
# /etc/histd/triggers.d.
histd_start() {
  mkdir -p "$MNT" 2>/dev/null || true  # histd itself detaches a stale mount of a killed histd
  local config=(--config-dir "$WORK/triggers.d")
  case " $* " in *" --config-dir "*) config=() ;; esac
  case " $* " in *" --metrics-listen "*" --metrics-user "* | *" --metrics-user "*) ;;
    *" --metrics-listen "*) exporter_user; config+=(--metrics-user "$EXPORTER_USER") ;; esac
  "$HISTD_BIN" --foreground --mount "$MNT" --socket "$WORK/histd.sock" --state-dir "$WORK/state" \
    --pin-dir "$PIN" "${config[@]}" "$@" >>"$WORK/histd.log" 2>&1 &
  HISTD_PID=$!
  await_tree "$MNT" "$HISTD_PID" "$WORK/histd.log"
}

# await_tree MNT PID LOG: until histd PID has mounted its tree at MNT;
# should it end first, or take longer than HISTD_START_TIMEOUT seconds
# (default 60: a loaded machine starts slowly, and the wait ends as soon as
# the tree is there), the test ends with its log.
await_tree() {
  for _ in $(seq $((${HISTD_START_TIMEOUT:-60} * 10))); do
    [ -e "$1/events" ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "histd did not come up at $1:"; cat "$3"; exit 1
}

# In a child PID namespace (a container), a shell's pids are not the ones
# events record. Kernel threads have pids in the first PID namespace only:
# a /proc whose pid 2 is a kernel thread (kthreadd: PF_KTHREAD, 0x00200000,
# in its flags) is that namespace's, and this shell is in it when its own
# ns/pid link is kthreadd's. Comparing with /proc/1/ns/pid would say
# nothing: in a container /proc/1 is the container's init, in the shell's
# namespace. With no pid 2, or one that is not a kernel thread, /proc is a
# child namespace's, and so is this shell.
in_child_pid_namespace() {
  local stat flags
  stat=$(cat /proc/2/stat 2>/dev/null) || return 0
  flags=$(cut -d' ' -f7 <<<"${stat##*) }")  # the 9th field, after "pid (comm) "
  [[ "$flags" =~ ^[0-9]+$ ]] && ((flags & 0x00200000)) || return 0
  [ "$(readlink /proc/self/ns/pid)" != "$(readlink /proc/2/ns/pid)" ]
}
# in_ns TREE CMD...: CMD in a mount namespace of its own where TREE
# (histd's tree, or "kernel") is the tracefs at every tracefs mount point,
# as trace-cmd and the kernel's selftests find it there. trace-cmd record
# writes /proc/sys/kernel/ftrace_enabled, which this machine refuses even
# for the kernel's own tracefs: a file holding 1 covers it. For the
# kernel's tracefs the function tracer's files it may not open are
# covered by an empty file (trace-cmd's forked workload dies on them).
# trace-cmd copies /proc/kallsyms into its file, reading it twice, and
# gives up when its size changed between the two reads, as it does each
# time a BPF program is loaded or freed anywhere: a copy covers it.
in_ns() {
  echo 1 >"$WORK/one"
  : >"$WORK/empty"
  unshare -m --propagation private bash -c '
    set -e
    tree=$1 work=$2; shift 2
    points=$(awk '\''$3 == "tracefs" { print $2 }'\'' /proc/mounts)
    if [ -z "$points" ]; then mount -t tracefs nodev /sys/kernel/tracing; points=/sys/kernel/tracing; fi
    if [ "$tree" = kernel ]; then
      for f in set_ftrace_pid set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace; do
        p=/sys/kernel/tracing/$f
        if [ -e "$p" ] && ! cat "$p" >/dev/null 2>&1; then mount --bind "$work/empty" "$p"; fi
      done
    else
      for p in $points; do mount --bind "$tree" "$p"; done
      if [ -d /sys/kernel/debug/tracing ] && ! mountpoint -q /sys/kernel/debug/tracing; then
        mount --bind "$tree" /sys/kernel/debug/tracing
      fi
    fi
    mount --bind "$work/one" /proc/sys/kernel/ftrace_enabled
    cat /proc/kallsyms >"$work/kallsyms"
    mount --bind "$work/kallsyms" /proc/kallsyms
    exec "$@"' _ "$1" "$WORK" "${@:2}"
}

source "$(dirname "${BASH_SOURCE[0]}")/../expect.sh"

finish() {
  if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# Tests never filter on their own pid. BPF, like the kernel's hist
# triggers, sees a task's pid in the machine's first PID namespace, while $$,
# $! and a child's getpid() are pids of the test's own: another namespace in
# a container, where a filter on them matches nothing. A test filters on
# what its workload is instead: a comm of its own (common_comm == "..."),
# given by running the workload through a link of that name (the kernel
# names a task after the last part of the path it execs, a link's name
# included; an exec of anything else renames it). docs/design/tests.md.
#
# own_comm TAG: prints a comm no other task on the machine has: TAG (8
# characters at most) and this test's random suffix.
own_comm() { printf '%s-%s' "${1:0:8}" "$UNIQ"; }
# comm_link COMM PROGRAM: prints the path of a link named COMM to PROGRAM
# (a path, or a command found in PATH); what runs through it is named COMM.
comm_link() {
  local target
  target=$(command -v "$2") || { echo "comm_link: no program $2" >&2; return 1; }
  mkdir -p "$WORK/bin"
  ln -sfn "$target" "$WORK/bin/$1"
  printf '%s' "$WORK/bin/$1"
}

# Where a test is about the pid itself (a pid key, .execname), it learns the
# pid the tables show from a table: shown_pid_on EVENT COMM... counts COMM's
# events on EVENT (system/event) by common_pid.execname, before the task
# makes them; shown_pid EVENT COMM then prints the pid its entry shows.
shown_pid_on() {
  local ev=$1 filter= c; shift
  for c in "$@"; do filter="${filter:+$filter || }common_comm == \"$c\""; done
  echo "hist:keys=common_pid.execname if $filter" >>"$MNT/events/$ev/trigger"
}
shown_pid() { sed -n "s/^{ common_pid: $2 *\[ *\([0-9]*\)\] }.*/\1/p" "$MNT/events/$1/hist" | head -1; }

# marker_pid TEXT: the pid the tables show for the task whose trace_marker
# write TEXT is the newest such line in trace (as the kernel, histd records
# a writer under the machine's pid, not the one $$ gives in a container).
marker_pid() {
  sed -n "s/^.*-\([0-9][0-9]*\) *\[[0-9]*\] .* tracing_mark_write: $1\$/\1/p" "$MNT/trace" | tail -1
}

# child_start SCRIPT: starts `bash -c SCRIPT` blocked on a fifo until
# child_go, named CHILD_COMM (a new comm each time: `common_comm ==
# \"$CHILD_COMM\"` is the child); sets CHILD to its pid (for wait and kill:
# never in a filter). A program the script runs is named after itself: an
# exec renames (bash may exec a script's last command in place).
CHILDREN=0
child_start() {
  rm -f "$WORK/go"; mkfifo "$WORK/go"
  CHILDREN=$((CHILDREN + 1))
  CHILD_COMM=$(own_comm "child$CHILDREN")
  "$(comm_link "$CHILD_COMM" bash)" -c "read -r _ < '$WORK/go'; $1" &
  CHILD=$!
}
child_go() { echo go > "$WORK/go"; wait "$CHILD" || true; }

# The entry lines of a hist file's first table.
rows() { awk '/^#/ {next} /^$/ {if (seen) exit; next} {seen=1; print}' "$1"; }

# The fault tests' witness: writes of exactly $SIZE bytes (dd writes each block
# once) counted on sys_enter_write. Sets W and SIZE; writes N makes N of them,
# hits prints their count.
counted_writes() {
  W=$MNT/events/syscalls/sys_enter_write
  SIZE=$(own_number 20000 40000)
  echo "hist:keys=count:vals=hitcount if count == $SIZE" >"$W/trigger"
}
writes() { dd if=/dev/zero of=/dev/null bs="$SIZE" count="$1" status=none; }
hits() { rows "$W/hist" | sed -n 's/.*hitcount: *\([0-9]*\)$/\1/p'; }
