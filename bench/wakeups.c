// SPDX-License-Identifier: GPL-2.0-only
// Runs a command with bench/wakeups.bpf.c's programs attached, then prints
// their counts and the kernel's recursion misses of each:
//   histd_bench_wakeups OBJECT CURRENT_COMM -- COMMAND...
//   -> "classic N raw N raw_by_current N classic_misses N raw_misses N"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long long misses(struct bpf_object *o, const char *name) {
  struct bpf_prog_info info;
  __u32 len = sizeof(info);
  memset(&info, 0, sizeof(info));
  bpf_obj_get_info_by_fd(bpf_program__fd(bpf_object__find_program_by_name(o, name)), &info, &len);
  return info.recursion_misses;
}

int main(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) {
    fprintf(stderr, "usage: %s OBJECT CURRENT_COMM -- COMMAND...\n", argv[0]);
    return 2;
  }
  struct bpf_object *o = bpf_object__open_file(argv[1], NULL);
  if (!o) {
    perror(argv[1]);
    return 1;
  }
  if (bpf_object__load(o) != 0) {
    fprintf(stderr, "loading %s failed\n", argv[1]);
    return 1;
  }
  char name[16] = {0};
  strncpy(name, argv[2], sizeof(name) - 1);
  const __u32 zero = 0;
  bpf_map_update_elem(bpf_object__find_map_fd_by_name(o, "current_comm"), &zero, name, BPF_ANY);
  struct bpf_link *classic = bpf_program__attach(bpf_object__find_program_by_name(o, "classic"));
  struct bpf_link *raw = bpf_program__attach(bpf_object__find_program_by_name(o, "raw"));
  if (!classic || !raw) {
    fprintf(stderr, "attaching failed\n");
    return 1;
  }
  pid_t child = fork();
  if (child == 0) {
    execvp(argv[4], argv + 4);
    _exit(127);
  }
  waitpid(child, NULL, 0);
  usleep(300000);  // the last wakeups' programs have run
  int fd = bpf_object__find_map_fd_by_name(o, "counts");
  unsigned long long v[3] = {0, 0, 0};
  for (__u32 k = 0; k < 3; k++) bpf_map_lookup_elem(fd, &k, &v[k]);
  printf("classic %llu raw %llu raw_by_current %llu classic_misses %llu raw_misses %llu\n", v[0], v[1], v[2],
         misses(o, "classic"), misses(o, "raw"));
  bpf_link__destroy(classic);
  bpf_link__destroy(raw);
  bpf_object__close(o);
  return 0;
}
