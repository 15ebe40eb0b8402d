// SPDX-License-Identifier: GPL-2.0-only
// The prelude: the #include lines every generated unit opens with
// (linux/bpf.h and histd's helpers, which pull in libbpf's declarations of
// every BPF helper). Parsing them was about 20 ms of a one-trigger unit's
// 50 to 70 ms compile; histd-cc compiles them once into a precompiled
// header and has each unit that opens with the same lines, compiled with
// the same arguments, read that instead. Clang checks the headers' sizes
// and times against the ones it precompiled, so a header changed on disk
// (a package upgrade) makes the precompiled one refused, never wrong.
//
// These are the pure parts (which lines, which arguments) and the one
// resource (the precompiled file); the compiles are main.cpp's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "histd/fd.h"

namespace histd::cc_server {

// Where the prelude's text is, in each compile's in-memory file system:
// clang records the header a precompiled one was made from and looks for it
// again (same size and time) whenever it is read.
inline constexpr const char* kPreludeHeader = "/histd-cc-prelude/prelude.h";

// The run of #include lines `source` opens with, after one-line /* */
// comments and blank lines; "" when anything else comes first.
std::string leading_includes(std::string_view source);

// `source` with the CO-RE types it uses (struct histd_rec, the record
// fields a unit reads by name; btf_entry.bpf.h's task types) named for this
// compile (histd_rec___c<compile>, task_struct___histd_btf_c<compile>) from
// just after its leading includes on, a #line keeping the lines' numbers;
// `source` unchanged when it uses none. Why: LLVM 14's CO-RE pass keeps
// the relocation globals it makes in a map of the whole process, by type
// name and access, and hands a later module a global of an earlier, freed
// one for the same access (histd-cc crashed there, every second compile of
// a unit entered BTF-typed). libbpf matches a type by its name before the
// last "___", so the object relocates as the unit's text says.
std::string with_distinct_core_names(std::string_view source, uint64_t compile);

// The request's driver arguments without its input and its output (-o X):
// a precompiled prelude serves only requests with the same key.
std::vector<std::string> prelude_key(const std::vector<std::string>& args, const std::string& input);

// The arguments that precompile kPreludeHeader into `pch`, from a request's
// (same options, so that clang accepts it for that request).
std::vector<std::string> prelude_build_args(const std::vector<std::string>& args, const std::string& input,
                                            const std::string& pch);

// The request's arguments, reading the precompiled `pch` first.
std::vector<std::string> with_prelude(const std::vector<std::string>& args, const std::string& input,
                                      const std::string& pch);

// A file without a name (O_TMPFILE in /tmp) for clang to write a
// precompiled prelude into, through fd_path(): nothing is left on disk
// however histd-cc ends, even killed in the middle of the write. Empty when
// none can be had (then units compile without a prelude).
Fd unnamed_file();
// How clang names an open file of this process.
std::string fd_path(int fd);

// The precompiled prelude kept, if any.
class Prelude {
 public:
  Prelude() = default;
  bool ready() const { return static_cast<bool>(file_); }
  bool serves(const std::vector<std::string>& key, const std::string& lines) const {
    return ready() && key == key_ && lines == lines_;
  }
  // The path clang reads it by; valid while ready().
  std::string path() const { return fd_path(file_.get()); }
  // Keeps `file` (a precompiled prelude, unnamed_file()) for `key` and `lines`.
  void keep(Fd file, std::vector<std::string> key, std::string lines);
  void forget();

 private:
  Fd file_;
  std::vector<std::string> key_;
  std::string lines_;
};

}  // namespace histd::cc_server
