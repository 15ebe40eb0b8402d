// The floor: a tracepoint program that does nothing.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tracepoint")
int empty(void *ctx) { return 0; }

char LICENSE[] SEC("license") = "GPL";
