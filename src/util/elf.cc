#include "util/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "util/checked.h"
#include "util/unique_fd.h"

namespace moetune {
namespace {

// Bounds on what is read from an untrusted file. Real engine binaries have a
// dozen program headers, a few dozen dynamic entries, dynamic string tables of
// a few KiB and symbol string tables of a few MiB (libggml-cuda.so: ~10 MiB).
constexpr uint64_t kMaxProgramHeaders = 4096;
constexpr uint64_t kMaxSections = 65535;
constexpr uint64_t kMaxDynamicBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxStringTableBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxSymbols = uint64_t{1} << 24;
constexpr std::size_t kSymbolChunk = 4096;

Error Malformed(std::string_view what) {
  return Error(ErrorKind::kFormat, fmt::format("malformed ELF file: {}", what));
}

Result<Elf64_Ehdr> ReadHeader(const ElfByteReader& read) {
  unsigned char ident[EI_NIDENT];
  if (!read(0, sizeof ident, ident) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return Error(ErrorKind::kFormat, "not an ELF file");
  }
  // The structures are read as they lie in memory: the host must be
  // little-endian like the file.
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
      std::endian::native != std::endian::little) {
    return Error(ErrorKind::kUnsupported, "only 64-bit little-endian ELF files are read");
  }
  Elf64_Ehdr h{};
  if (!read(0, sizeof h, &h)) return Malformed("truncated header");
  return h;
}

// Reads `count` fixed-size entries of `entsize` bytes (at least sizeof(T);
// larger entries are allowed by the format) starting at `offset`.
template <typename T>
Result<std::vector<T>> ReadTable(const ElfByteReader& read, uint64_t offset, uint64_t count,
                                 uint64_t entsize, uint64_t max_count, const char* what) {
  if (count == 0) return std::vector<T>{};
  if (entsize < sizeof(T) || count > max_count) return Malformed(what);
  std::vector<T> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    const auto at = CheckedAdd(offset, i * entsize);  // i * entsize < 2^16 * 2^32: no overflow
    if (!at || !read(*at, sizeof(T), &out[i])) return Malformed(what);
  }
  return out;
}

// A virtual address inside a PT_LOAD segment's file image -> its file offset.
std::optional<uint64_t> VaddrToOffset(const std::vector<Elf64_Phdr>& phdrs, uint64_t vaddr) {
  for (const auto& p : phdrs) {
    if (p.p_type != PT_LOAD || vaddr < p.p_vaddr) continue;
    const uint64_t delta = vaddr - p.p_vaddr;
    if (delta < p.p_filesz) return CheckedAdd(p.p_offset, delta);
  }
  return std::nullopt;
}

// The NUL-terminated string at `index` of a string table held in memory.
std::optional<std::string_view> StringAt(std::string_view table, uint64_t index) {
  if (index >= table.size()) return std::nullopt;
  const std::string_view rest = table.substr(index);
  const std::size_t end = rest.find('\0');
  if (end == std::string_view::npos) return std::nullopt;
  return rest.substr(0, end);
}

Result<std::string> ReadBytes(const ElfByteReader& read, uint64_t offset, uint64_t size,
                              uint64_t max, const char* what) {
  if (size > max) return Malformed(what);
  std::string s(size, '\0');
  if (size > 0 && !read(offset, size, s.data())) return Malformed(what);
  return s;
}

void SplitPath(std::string_view path, std::vector<std::string>* out) {
  while (!path.empty()) {
    const std::size_t colon = path.find(':');
    const std::string_view part = path.substr(0, colon);
    if (!part.empty()) out->emplace_back(part);
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
}

// One symbol table section: its entries are streamed in chunks, the names
// looked up in the linked string table.
Status CollectSymbols(const ElfByteReader& read, const std::vector<Elf64_Shdr>& sections,
                      const Elf64_Shdr& table, std::string_view prefix,
                      std::vector<std::string>* out) {
  if (table.sh_link >= sections.size()) return Malformed("symbol table links no string table");
  const Elf64_Shdr& strings = sections[table.sh_link];
  if (table.sh_entsize < sizeof(Elf64_Sym)) return Malformed("symbol entry size");
  const uint64_t count = table.sh_size / table.sh_entsize;
  if (count > kMaxSymbols) return Malformed("too many symbols");
  MOETUNE_ASSIGN_OR_RETURN(const std::string names,
                           ReadBytes(read, strings.sh_offset, strings.sh_size, kMaxStringTableBytes,
                                     "symbol string table"));
  std::vector<Elf64_Sym> chunk;
  for (uint64_t first = 0; first < count; first += kSymbolChunk) {
    const uint64_t n = std::min<uint64_t>(kSymbolChunk, count - first);
    const auto at = CheckedAdd(table.sh_offset, first * table.sh_entsize);
    if (!at) return Malformed("symbol table offset");
    MOETUNE_ASSIGN_OR_RETURN(
        chunk, ReadTable<Elf64_Sym>(read, *at, n, table.sh_entsize, kSymbolChunk, "symbol table"));
    for (const auto& sym : chunk) {
      if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) continue;
      const auto name = StringAt(names, sym.st_name);
      if (name && name->starts_with(prefix)) out->emplace_back(*name);
    }
  }
  return OkStatus();
}

// A pread-based reader over an open regular file.
Result<std::pair<std::shared_ptr<UniqueFd>, ElfByteReader>> OpenElf(const std::string& path) {
  auto fd = std::make_shared<UniqueFd>(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd->get() < 0) {
    const int e = errno;
    return Error(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                 fmt::format("cannot open '{}': {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument, fmt::format("'{}' is not a regular file", path));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  ElfByteReader reader = [fd, size](uint64_t offset, std::size_t n, void* out) {
    const auto end = CheckedAdd(offset, n);
    if (!end || *end > size) return false;
    auto* p = static_cast<char*>(out);
    for (std::size_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd->get(), p + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      done += static_cast<std::size_t>(got);
    }
    return true;
  };
  return std::make_pair(std::move(fd), std::move(reader));
}

}  // namespace

Result<ElfDynamic> ParseElfDynamic(const ElfByteReader& read) {
  MOETUNE_ASSIGN_OR_RETURN(const Elf64_Ehdr h, ReadHeader(read));
  MOETUNE_ASSIGN_OR_RETURN(const auto phdrs,
                           ReadTable<Elf64_Phdr>(read, h.e_phoff, h.e_phnum, h.e_phentsize,
                                                 kMaxProgramHeaders, "program headers"));
  ElfDynamic out;
  const auto dyn_it = std::find_if(phdrs.begin(), phdrs.end(),
                                   [](const Elf64_Phdr& p) { return p.p_type == PT_DYNAMIC; });
  if (dyn_it == phdrs.end()) return out;  // statically linked
  if (dyn_it->p_filesz > kMaxDynamicBytes) return Malformed("dynamic section too large");
  MOETUNE_ASSIGN_OR_RETURN(
      const auto entries,
      ReadTable<Elf64_Dyn>(read, dyn_it->p_offset, dyn_it->p_filesz / sizeof(Elf64_Dyn),
                           sizeof(Elf64_Dyn), kMaxDynamicBytes, "dynamic section"));
  std::optional<uint64_t> strtab_addr;
  uint64_t strtab_size = 0;
  std::vector<uint64_t> needed;
  std::optional<uint64_t> runpath;
  std::optional<uint64_t> rpath;
  for (const auto& d : entries) {
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_NEEDED:
        needed.push_back(d.d_un.d_val);
        break;
      case DT_STRTAB:
        strtab_addr = d.d_un.d_ptr;
        break;
      case DT_STRSZ:
        strtab_size = d.d_un.d_val;
        break;
      case DT_RUNPATH:
        runpath = d.d_un.d_val;
        break;
      case DT_RPATH:
        rpath = d.d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (needed.empty() && !runpath && !rpath) return out;
  if (!strtab_addr) return Malformed("dynamic section without a string table");
  const auto strtab_offset = VaddrToOffset(phdrs, *strtab_addr);
  if (!strtab_offset) return Malformed("dynamic string table outside the file");
  MOETUNE_ASSIGN_OR_RETURN(
      const std::string strtab,
      ReadBytes(read, *strtab_offset, strtab_size, kMaxStringTableBytes, "dynamic string table"));
  for (const uint64_t index : needed) {
    const auto name = StringAt(strtab, index);
    if (!name) return Malformed("DT_NEEDED outside the string table");
    out.needed.emplace_back(*name);
  }
  // The loader ignores DT_RPATH when DT_RUNPATH is present (ld.so(8)).
  if (const auto path_index = runpath ? runpath : rpath) {
    const auto path = StringAt(strtab, *path_index);
    if (!path) return Malformed("run path outside the string table");
    SplitPath(*path, &out.run_path);
  }
  return out;
}

Result<std::vector<std::string>> ParseElfSymbols(const ElfByteReader& read,
                                                 std::string_view prefix) {
  MOETUNE_ASSIGN_OR_RETURN(const Elf64_Ehdr h, ReadHeader(read));
  MOETUNE_ASSIGN_OR_RETURN(const auto sections,
                           ReadTable<Elf64_Shdr>(read, h.e_shoff, h.e_shnum, h.e_shentsize,
                                                 kMaxSections, "section headers"));
  std::vector<std::string> out;
  for (const auto& s : sections) {
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    MOETUNE_TRY(CollectSymbols(read, sections, s, prefix, &out));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ElfByteReader MemoryElfReader(std::string_view bytes) {
  return [bytes](uint64_t offset, std::size_t n, void* out) {
    const auto end = CheckedAdd(offset, n);
    if (!end || *end > bytes.size()) return false;
    std::memcpy(out, bytes.data() + offset, n);
    return true;
  };
}

Result<ElfDynamic> ReadElfDynamic(const std::string& path) {
  MOETUNE_ASSIGN_OR_RETURN(auto file, OpenElf(path));
  auto r = ParseElfDynamic(file.second);
  if (!r.ok()) return std::move(r).take_error().Context(path);
  return r;
}

Result<std::vector<std::string>> ReadElfSymbols(const std::string& path, std::string_view prefix) {
  MOETUNE_ASSIGN_OR_RETURN(auto file, OpenElf(path));
  auto r = ParseElfSymbols(file.second, prefix);
  if (!r.ok()) return std::move(r).take_error().Context(path);
  return r;
}

}  // namespace moetune
