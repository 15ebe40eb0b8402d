// SPDX-License-Identifier: GPL-2.0-only
/* A libtracefs client, as sqlhist and other tools built on libtracefs are:
 * it points libtracefs at a tracing directory (histd's tree), creates a
 * synthetic event from SQL with tracefs_sql(), and destroys it again when
 * told. The commands name variables after the client's pid, so the one
 * that created them destroys them.
 *   tracefs_sql DIR NAME SQL   prints the commands and "created", waits for
 *                              a line on stdin, destroys, prints "destroyed"
 * Exit 0 on success; 1 with libtracefs's error otherwise. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <tracefs/tracefs.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s DIR NAME SQL\n", argv[0]);
    return 2;
  }
  if (tracefs_set_tracing_dir(argv[1]) < 0) {
    fprintf(stderr, "tracefs_set_tracing_dir: %s\n", strerror(errno));
    return 1;
  }
  struct tep_handle *tep = tracefs_local_events(argv[1]);
  if (!tep) {
    fprintf(stderr, "tracefs_local_events: %s\n", strerror(errno));
    return 1;
  }
  char *err = NULL;
  struct tracefs_synth *synth = tracefs_sql(tep, argv[2], argv[3], &err);
  if (!synth) {
    fprintf(stderr, "tracefs_sql: %s\n", err ? err : strerror(errno));
    return 1;
  }
  struct trace_seq seq;
  trace_seq_init(&seq);
  tracefs_synth_echo_cmd(&seq, synth);
  trace_seq_terminate(&seq);
  fputs(seq.buffer, stdout);
  trace_seq_destroy(&seq);
  int rc = tracefs_synth_create(synth);
  if (rc < 0) {
    fprintf(stderr, "tracefs_synth_create: %s\n", strerror(errno));
  } else {
    printf("created\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof(line), stdin)) line[0] = 0;
    rc = tracefs_synth_destroy(synth);
    if (rc < 0) fprintf(stderr, "tracefs_synth_destroy: %s\n", strerror(errno));
    else printf("destroyed\n");
  }
  tracefs_synth_free(synth);
  tep_free(tep);
  return rc < 0 ? 1 : 0;
}
