// SPDX-License-Identifier: GPL-2.0-only
#include "prelude.h"

#include <fcntl.h>

#include <algorithm>

namespace histd::cc_server {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool one_line_comment(std::string_view line) {
  return starts_with(line, "/*") && line.size() >= 4 && line.substr(line.size() - 2) == "*/" &&
         line.find("*/") == line.size() - 2;
}

}  // namespace

std::string leading_includes(std::string_view source) {
  size_t pos = 0, first = std::string_view::npos, end = 0;
  while (pos < source.size()) {
    size_t nl = source.find('\n', pos);
    if (nl == std::string_view::npos) break;  // a last line without its newline is never part of it
    const std::string_view line = source.substr(pos, nl - pos);
    if (starts_with(line, "#include ")) {
      if (first == std::string_view::npos) first = pos;
      end = nl + 1;
    } else if (first != std::string_view::npos || !(line.empty() || one_line_comment(line))) {
      break;
    }
    pos = nl + 1;
  }
  if (first == std::string_view::npos) return {};
  return std::string(source.substr(first, end - first));
}

namespace {

// The CO-RE types of generated units, each with what in a unit's text says
// it has them.
struct CoreType {
  std::string_view name;
  std::string_view used_when;
};
constexpr CoreType kCoreTypes[] = {
    {"histd_rec", "struct histd_rec {"},
    {"task_struct___histd_btf", "#include \"btf_entry.bpf.h\""},
    {"thread_info___histd_btf", "#include \"btf_entry.bpf.h\""},
};

// libbpf matches a type by its name up to the last "___" (a flavor): a
// name with one already keeps it.
std::string compile_name(std::string_view name, uint64_t compile) {
  const char* sep = name.find("___") == std::string_view::npos ? "___c" : "_c";
  return std::string(name) + sep + std::to_string(compile);
}

}  // namespace

std::string with_distinct_core_names(std::string_view source, uint64_t compile) {
  std::string defines;
  for (const CoreType& t : kCoreTypes)
    if (source.find(t.used_when) != std::string_view::npos)
      defines += "#define " + std::string(t.name) + " " + compile_name(t.name, compile) + "\n";
  if (defines.empty()) return std::string(source);
  const std::string lines = leading_includes(source);
  const size_t at = lines.empty() ? 0 : source.find(lines) + lines.size();
  const size_t line = static_cast<size_t>(std::count(source.begin(), source.begin() + at, '\n')) + 1;
  return std::string(source.substr(0, at)) + defines + "#line " + std::to_string(line) + "\n" +
         std::string(source.substr(at));
}

std::vector<std::string> prelude_key(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> key;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      ++i;
    } else if (args[i] != input) {
      key.push_back(args[i]);
    }
  }
  return key;
}

std::vector<std::string> prelude_build_args(const std::vector<std::string>& args, const std::string& input,
                                            const std::string& pch) {
  std::vector<std::string> out = prelude_key(args, input);
  for (const char* a : {"-x", "c-header", kPreludeHeader, "-o"}) out.emplace_back(a);
  out.push_back(pch);
  return out;
}

std::vector<std::string> with_prelude(const std::vector<std::string>& args, const std::string& input,
                                      const std::string& pch) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    if (a == input) {
      out.emplace_back("-include-pch");
      out.push_back(pch);
    }
    out.push_back(a);
  }
  return out;
}

Fd unnamed_file() { return Fd(open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)); }

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

void Prelude::keep(Fd file, std::vector<std::string> key, std::string lines) {
  file_ = std::move(file);
  key_ = std::move(key);
  lines_ = std::move(lines);
}

void Prelude::forget() {
  file_ = Fd();
  key_.clear();
  lines_.clear();
}

}  // namespace histd::cc_server
