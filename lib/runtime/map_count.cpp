// SPDX-License-Identifier: GPL-2.0-only
// Which maps the programs of a compiled object use, from its ELF
// relocations, before anything is loaded. The kernel refuses a program that
// uses more than 64 maps (MAX_USED_MAPS) with a bare E2BIG, and only once
// the load is under way (after histd created the new trigger's maps); read
// here, the limit can be named in the command's refusal. And a map the
// object declares but no program uses (the ring, in a unit that sends
// nothing) need not exist at all.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "histd/runtime.h"

namespace histd::runtime {

namespace {

// A typed read at `off`, false when it would leave the object.
template <typename T>
bool read_at(std::string_view obj, uint64_t off, T& out) {
  if (off > obj.size() || obj.size() - off < sizeof(T)) return false;
  std::memcpy(&out, obj.data() + off, sizeof(T));
  return true;
}

std::string_view name_at(std::string_view obj, const Elf64_Shdr& strtab, uint32_t off) {
  if (strtab.sh_offset > obj.size() || off >= strtab.sh_size || strtab.sh_offset + off >= obj.size()) return {};
  const char* p = obj.data() + strtab.sh_offset + off;
  return {p, strnlen(p, obj.size() - (strtab.sh_offset + off))};
}

}  // namespace

Expected<ObjectMaps> object_maps(std::string_view obj) {
  auto bad = [] {
    return fail(ErrorKind::Compile, EINVAL, "the compiled object is not a 64-bit little-endian ELF file");
  };
  Elf64_Ehdr eh;
  if (!read_at(obj, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr))
    return bad();
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i)
    if (!read_at(obj, eh.e_shoff + i * sizeof(Elf64_Shdr), sh[i])) return bad();
  if (eh.e_shstrndx >= sh.size()) return bad();
  auto section_name = [&](size_t i) { return name_at(obj, sh[eh.e_shstrndx], sh[i].sh_name); };
  size_t maps_index = 0, text_index = 0;
  // A global data section (.rodata.chain, .rodata.consts, ...) is one map
  // of its own to the kernel, whatever variable in it a program reads.
  std::set<size_t> data_sections;
  for (size_t i = 1; i < sh.size(); ++i) {
    const std::string_view name = section_name(i);
    if (name == ".maps") maps_index = i;
    if (name == ".text") text_index = i;
    for (std::string_view data : {".rodata", ".data", ".bss"})
      if (name.substr(0, data.size()) == data && !(sh[i].sh_flags & SHF_EXECINSTR)) data_sections.insert(i);
  }
  // The maps each code section refers to: a map by its symbol, a data
  // section by its index (the top bit set, apart from symbols).
  constexpr uint64_t kDataSection = uint64_t{1} << 63;
  std::map<size_t, std::set<uint64_t>> refs;
  ObjectMaps out;
  for (const Elf64_Shdr& rel : sh) {
    if (rel.sh_type != SHT_REL || rel.sh_link >= sh.size() || rel.sh_info >= sh.size() || maps_index == 0) continue;
    const Elf64_Shdr& symtab = sh[rel.sh_link];
    for (uint64_t off = 0; off + sizeof(Elf64_Rel) <= rel.sh_size; off += sizeof(Elf64_Rel)) {
      Elf64_Rel r;
      Elf64_Sym sym;
      if (!read_at(obj, rel.sh_offset + off, r)) return bad();
      if (!read_at(obj, symtab.sh_offset + ELF64_R_SYM(r.r_info) * sizeof(Elf64_Sym), sym)) return bad();
      if (sym.st_shndx == maps_index) {
        refs[rel.sh_info].insert(ELF64_R_SYM(r.r_info));
        // Code's, not .BTF's (which names every map).
        if (sh[rel.sh_info].sh_flags & SHF_EXECINSTR)
          out.referenced.insert(std::string(name_at(obj, sh[symtab.sh_link], sym.st_name)));
      }
      if (data_sections.count(sym.st_shndx)) refs[rel.sh_info].insert(kDataSection | sym.st_shndx);
    }
  }
  // A program uses its own section's maps and its subprograms' (all in
  // .text: counting every one of them bounds what it calls).
  for (size_t i = 1; i < sh.size(); ++i) {
    if (!(sh[i].sh_flags & SHF_EXECINSTR) || i == text_index) continue;
    std::set<uint64_t> used = refs[i];
    if (text_index) used.insert(refs[text_index].begin(), refs[text_index].end());
    out.most_per_program = std::max(out.most_per_program, used.size());
  }
  return out;
}

}  // namespace histd::runtime
