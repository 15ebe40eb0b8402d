// The fixed program attached to a tracepoint: it tail-calls slot 0 of the
// event's program array, where the engine installs the event program. Swapping
// that slot replaces every trigger of the event at once (ARCHITECTURE decision 2).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} slots SEC(".maps");

SEC("tracepoint")
int dispatch(void *ctx) {
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
