#pragma once
/// Builds small ELF64 images for the tests of util/elf.h and
/// engine/linked_backends.h: a dynamic section (DT_NEEDED, DT_RUNPATH) inside
/// one PT_LOAD segment, and optionally a symbol table with its string table.
/// Laid out as a linker would, so that the same reader parses these and the
/// real files on the machine.

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

namespace moetune::testing {

struct ElfSpec {
  std::vector<std::string> needed;
  std::string run_path;                // "" = no DT_RUNPATH
  bool use_rpath = false;              // DT_RPATH instead of DT_RUNPATH
  std::vector<std::string> symbols;    // defined symbols (in .symtab)
  std::vector<std::string> undefined;  // undefined symbols (in .symtab)
  bool dynamic = true;                 // false: a static executable (no PT_DYNAMIC)
};

// The ELF header of an x86-64 image with its program headers at `phoff` (two
// when `dynamic`, else one) and three section headers at `shoff`.
inline Elf64_Ehdr ElfHeader(bool dynamic, uint64_t phoff, uint64_t shoff) {
  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS64;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = dynamic ? ET_DYN : ET_EXEC;
  h.e_machine = EM_X86_64;
  h.e_version = EV_CURRENT;
  h.e_phoff = phoff;
  h.e_ehsize = sizeof(Elf64_Ehdr);
  h.e_phentsize = sizeof(Elf64_Phdr);
  h.e_phnum = dynamic ? 2 : 1;
  h.e_shoff = shoff;
  h.e_shentsize = sizeof(Elf64_Shdr);
  h.e_shnum = 3;
  return h;
}

inline std::string BuildElf(const ElfSpec& spec) {
  constexpr uint64_t kBase = 0x400000;
  // Dynamic string table: "\0" then each name.
  std::string dynstr(1, '\0');
  std::vector<Elf64_Dyn> dyn;
  for (const auto& n : spec.needed) {
    dyn.push_back({DT_NEEDED, {dynstr.size()}});
    dynstr += n + '\0';
  }
  if (!spec.run_path.empty()) {
    dyn.push_back({spec.use_rpath ? DT_RPATH : DT_RUNPATH, {dynstr.size()}});
    dynstr += spec.run_path + '\0';
  }
  // Layout: Ehdr | 2 Phdr | dynamic entries (+STRTAB, STRSZ, NULL) | dynstr |
  // symstr | symtab | section headers.
  const uint64_t phoff = sizeof(Elf64_Ehdr);
  const uint64_t dyn_off = phoff + 2 * sizeof(Elf64_Phdr);
  const uint64_t n_dyn = dyn.size() + 3;
  const uint64_t dynstr_off = dyn_off + n_dyn * sizeof(Elf64_Dyn);
  dyn.push_back({DT_STRTAB, {kBase + dynstr_off}});
  dyn.push_back({DT_STRSZ, {dynstr.size()}});
  dyn.push_back({DT_NULL, {0}});

  std::string symstr(1, '\0');
  std::vector<Elf64_Sym> syms(1);  // index 0 is the null symbol
  auto add_sym = [&](const std::string& name, bool defined) {
    Elf64_Sym s{};
    s.st_name = static_cast<Elf64_Word>(symstr.size());
    s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    s.st_shndx = defined ? 1 : SHN_UNDEF;
    syms.push_back(s);
    symstr += name + '\0';
  };
  for (const auto& s : spec.symbols) add_sym(s, true);
  for (const auto& s : spec.undefined) add_sym(s, false);
  const uint64_t symstr_off = dynstr_off + dynstr.size();
  const uint64_t symtab_off = (symstr_off + symstr.size() + 7) & ~uint64_t{7};
  const uint64_t shoff = symtab_off + syms.size() * sizeof(Elf64_Sym);
  const uint64_t size = shoff + 3 * sizeof(Elf64_Shdr);

  std::string img(size, '\0');
  const Elf64_Ehdr h = ElfHeader(spec.dynamic, phoff, shoff);
  std::memcpy(img.data(), &h, sizeof h);

  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_offset = 0;
  load.p_vaddr = kBase;
  load.p_filesz = size;
  load.p_memsz = size;
  std::memcpy(img.data() + phoff, &load, sizeof load);
  if (spec.dynamic) {
    Elf64_Phdr d{};
    d.p_type = PT_DYNAMIC;
    d.p_offset = dyn_off;
    d.p_vaddr = kBase + dyn_off;
    d.p_filesz = n_dyn * sizeof(Elf64_Dyn);
    d.p_memsz = d.p_filesz;
    std::memcpy(img.data() + phoff + sizeof(Elf64_Phdr), &d, sizeof d);
    std::memcpy(img.data() + dyn_off, dyn.data(), n_dyn * sizeof(Elf64_Dyn));
  }
  std::memcpy(img.data() + dynstr_off, dynstr.data(), dynstr.size());
  std::memcpy(img.data() + symstr_off, symstr.data(), symstr.size());
  std::memcpy(img.data() + symtab_off, syms.data(), syms.size() * sizeof(Elf64_Sym));
  // Sections: 0 null, 1 .strtab (symbol names), 2 .symtab linking section 1.
  Elf64_Shdr sh[3]{};
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = symstr_off;
  sh[1].sh_size = symstr.size();
  sh[2].sh_type = SHT_SYMTAB;
  sh[2].sh_offset = symtab_off;
  sh[2].sh_size = syms.size() * sizeof(Elf64_Sym);
  sh[2].sh_entsize = sizeof(Elf64_Sym);
  sh[2].sh_link = 1;
  std::memcpy(img.data() + shoff, sh, sizeof sh);
  return img;
}

}  // namespace moetune::testing
