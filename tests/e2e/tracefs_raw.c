// SPDX-License-Identifier: GPL-2.0-only
/* A libtracefs reader of raw events, as tools built on libtracefs read the
 * per-CPU ring buffers (per_cpu/cpuN/trace_pipe_raw, parsed by
 * libtraceevent's kbuffer with the event formats), pointed at a tracing
 * directory (histd's tree) with tracefs_set_tracing_dir():
 *   tracefs_raw DIR SYSTEM EVENT FIELD VALUE
 *     reads every raw event there is (tracefs_iterate_raw_events) and
 *     prints "events N", the events of all kinds read, "matched M", those
 *     of SYSTEM:EVENT whose FIELD is VALUE (tep_get_field_val), "missed K"
 *     the events the pages said were lost, and for the first match
 *     "first pid PID cpu CPU: INFO", its task and its fields as
 *     libtraceevent prints them.
 * Exit 0 on success; 1 with the failing call and errno otherwise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracefs/tracefs.h>

struct counts {
  const char *system, *event, *field;
  unsigned long long value;
  long events, matched, missed;
};

static int failed(const char *what) {
  fprintf(stderr, "%s: %s\n", what, strerror(errno));
  return 1;
}

static int on_event(struct tep_event *event, struct tep_record *record, int cpu, void *data) {
  struct counts *c = data;
  unsigned long long v = 0;
  struct trace_seq s;
  c->events++;
  if (record->missed_events > 0) c->missed += record->missed_events;
  if (strcmp(event->system, c->system) != 0 || strcmp(event->name, c->event) != 0) return 0;
  if (tep_get_field_val(NULL, event, c->field, record, &v, 0) < 0 || v != c->value) return 0;
  if (c->matched++ == 0) {
    /* As trace-cmd report prints the event after its task and time. */
    trace_seq_init(&s);
    tep_print_event(event->tep, &s, record, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&s);
    printf("first pid %d cpu %d: %s\n", tep_data_pid(event->tep, record), cpu, s.buffer);
    trace_seq_destroy(&s);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: tracefs_raw DIR SYSTEM EVENT FIELD VALUE\n");
    return 2;
  }
  if (tracefs_set_tracing_dir(argv[1]) < 0) return failed("tracefs_set_tracing_dir");
  struct tep_handle *tep = tracefs_local_events(argv[1]);
  if (!tep) return failed("tracefs_local_events");
  struct counts c = {argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0), 0, 0, 0};
  if (tracefs_iterate_raw_events(tep, NULL, NULL, 0, on_event, &c) < 0) return failed("tracefs_iterate_raw_events");
  printf("events %ld\nmatched %ld\nmissed %ld\n", c.events, c.matched, c.missed);
  tep_free(tep);
  return 0;
}
