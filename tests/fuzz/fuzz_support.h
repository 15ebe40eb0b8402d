// SPDX-License-Identifier: GPL-2.0-only
// Shared by the fuzz targets: fixture formats compiled in (no file I/O per
// input).
#pragma once

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/parse.h"

namespace histd::fuzz {

inline std::vector<std::shared_ptr<const catalog::EventFormat>> fixture_formats() {
  static const char* kTexts[] = {
      "name: kmalloc\nID: 1\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n"
      "\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n"
      "\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"x\"\n",
      "name: sched_process_exec\nID: 2\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
      "\tfield:pid_t pid;\toffset:28;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"x\"\n",
  };
  std::vector<std::shared_ptr<const catalog::EventFormat>> out;
  for (const char* t : kTexts) {
    auto f = catalog::parse_format(t, "fuzz");
    if (!f) __builtin_trap();
    out.push_back(std::make_shared<const catalog::EventFormat>(std::move(*f)));
  }
  return out;
}

}  // namespace histd::fuzz
