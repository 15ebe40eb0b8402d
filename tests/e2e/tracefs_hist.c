// SPDX-License-Identifier: GPL-2.0-only
/* A libtracefs client of the hist and synthetic event APIs, as trace-cmd and
 * other tools built on libtracefs use them, pointed at a tracing directory
 * (histd's tree) with tracefs_set_tracing_dir():
 *   tracefs_hist DIR INSTANCE SIZE
 *     in a new instance INSTANCE (tracefs_instance_create: mkdir
 *     instances/INSTANCE), a histogram of sys_enter_write keyed by count,
 *     summing count, for writes of SIZE bytes (tracefs_hist_alloc,
 *     tracefs_hist_add_value, tracefs_hist_start after the filter);
 *     prints "started", waits for a line on stdin, prints the hist file
 *     (tracefs_event_file_read), destroys the histogram and the instance,
 *     prints "destroyed".
 *   tracefs_hist DIR - NAME
 *     a synthetic event NAME: sched_waking -> sched_switch on pid, with the
 *     delta of their timestamps as lat (tracefs_synth_alloc,
 *     tracefs_synth_add_compare_field, tracefs_synth_create); prints
 *     "created", waits for a line, destroys it, prints "destroyed".
 * Exit 0 on success; 1 with the failing call and errno otherwise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs/tracefs.h>

static int failed(const char *what) {
  fprintf(stderr, "%s: %s\n", what, strerror(errno));
  return 1;
}

static void wait_line(void) {
  char line[16];
  if (!fgets(line, sizeof(line), stdin)) line[0] = 0;
}

static int hist_in_instance(struct tep_handle *tep, const char *name, const char *size) {
  struct tracefs_instance *instance = tracefs_instance_create(name);
  if (!instance) return failed("tracefs_instance_create");
  struct tracefs_hist *hist = tracefs_hist_alloc(tep, "syscalls", "sys_enter_write", "count", TRACEFS_HIST_KEY_NORMAL);
  if (!hist) return failed("tracefs_hist_alloc");
  if (tracefs_hist_add_value(hist, "count") < 0) return failed("tracefs_hist_add_value");
  if (tracefs_hist_append_filter(hist, TRACEFS_FILTER_COMPARE, "count", TRACEFS_COMPARE_EQ, size) < 0)
    return failed("tracefs_hist_append_filter");
  if (tracefs_hist_start(instance, hist) < 0) return failed("tracefs_hist_start");
  printf("started\n");
  fflush(stdout);
  wait_line();
  char *text = tracefs_event_file_read(instance, "syscalls", "sys_enter_write", "hist", NULL);
  if (!text) return failed("tracefs_event_file_read");
  fputs(text, stdout);
  free(text);
  if (tracefs_hist_destroy(instance, hist) < 0) return failed("tracefs_hist_destroy");
  tracefs_hist_free(hist);
  if (tracefs_instance_destroy(instance) < 0) return failed("tracefs_instance_destroy");
  tracefs_instance_free(instance);
  printf("destroyed\n");
  return 0;
}

static int synth_event(struct tep_handle *tep, const char *name) {
  struct tracefs_synth *synth =
      tracefs_synth_alloc(tep, name, "sched", "sched_waking", "sched", "sched_switch", "pid", "next_pid", "pid");
  if (!synth) return failed("tracefs_synth_alloc");
  if (tracefs_synth_add_compare_field(synth, TRACEFS_TIMESTAMP_USECS, TRACEFS_TIMESTAMP_USECS,
                                      TRACEFS_SYNTH_DELTA_END, "lat") < 0)
    return failed("tracefs_synth_add_compare_field");
  if (tracefs_synth_create(synth) < 0) return failed("tracefs_synth_create");
  printf("created\n");
  fflush(stdout);
  wait_line();
  if (tracefs_synth_destroy(synth) < 0) return failed("tracefs_synth_destroy");
  tracefs_synth_free(synth);
  printf("destroyed\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s DIR INSTANCE SIZE | %s DIR - NAME\n", argv[0], argv[0]);
    return 2;
  }
  if (tracefs_set_tracing_dir(argv[1]) < 0) return failed("tracefs_set_tracing_dir");
  struct tep_handle *tep = tracefs_local_events(argv[1]);
  if (!tep) return failed("tracefs_local_events");
  int rc = strcmp(argv[2], "-") == 0 ? synth_event(tep, argv[3]) : hist_in_instance(tep, argv[2], argv[3]);
  tep_free(tep);
  return rc;
}
