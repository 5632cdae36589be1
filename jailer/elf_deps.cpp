#include "jailer/elf_deps.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "common/base/unique_fd.h"

namespace carapace {
namespace {

// glibc's ld.so searches these (x86-64, multiarch Debian) when it has no cache.
constexpr const char* kSystemDirs[] = {"/lib/x86_64-linux-gnu",
                                       "/usr/lib/x86_64-linux-gnu",
                                       "/lib64",
                                       "/usr/lib64",
                                       "/lib",
                                       "/usr/lib"};

// Headers and strings of one ELF file; only what the loader's search needs.
struct ElfInfo {
  std::string interp;
  std::vector<std::string> needed;
};

// The file is read with pread where needed: the VMM binary with debug info is tens of MiB.
struct ElfFile {
  UniqueFd fd;
  uint64_t size = 0;
};

Result<ElfFile> open_elf(const std::string& path) {
  ElfFile f;
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.fd.valid()) return sys_error("open " + path);
  struct stat st {};
  if (::fstat(f.fd.get(), &st) != 0) return sys_error("stat " + path);
  f.size = static_cast<uint64_t>(st.st_size);
  return f;
}

template <typename T>
bool read_at(const ElfFile& f, uint64_t off, T* out) {
  if (off > f.size || f.size - off < sizeof(T)) return false;
  return ::pread(f.fd.get(), out, sizeof(T), static_cast<off_t>(off)) ==
         static_cast<ssize_t>(sizeof(T));
}

// A NUL-terminated string at `off`, bounded by the file and by PATH_MAX.
bool string_at(const ElfFile& f, uint64_t off, std::string* out) {
  if (off >= f.size) return false;
  char buf[PATH_MAX];
  ssize_t n = ::pread(f.fd.get(), buf, sizeof buf, static_cast<off_t>(off));
  if (n <= 0) return false;
  const void* nul = memchr(buf, '\0', static_cast<size_t>(n));
  if (nul == nullptr) return false;
  out->assign(buf, static_cast<size_t>(static_cast<const char*>(nul) - buf));
  return true;
}

Result<ElfInfo> parse_elf(const std::string& path) {
  ElfFile data = TRY(open_elf(path));
  Elf64_Ehdr eh;
  if (!read_at(data, 0, &eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
    return as_invalid_input(make_error(path + ": not a 64-bit ELF file"));
  std::vector<Elf64_Phdr> phdrs;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_at(data, eh.e_phoff + uint64_t{i} * sizeof ph, &ph))
      return make_error(path + ": truncated program headers");
    phdrs.push_back(ph);
  }
  // Dynamic-section addresses are virtual; the PT_LOAD segments map them to file offsets.
  auto vaddr_to_off = [&](uint64_t va, uint64_t* off) {
    for (const auto& ph : phdrs)
      if (ph.p_type == PT_LOAD && va >= ph.p_vaddr && va - ph.p_vaddr < ph.p_filesz) {
        *off = ph.p_offset + (va - ph.p_vaddr);
        return true;
      }
    return false;
  };
  ElfInfo info;
  for (const auto& ph : phdrs) {
    if (ph.p_type == PT_INTERP && !string_at(data, ph.p_offset, &info.interp))
      return make_error(path + ": bad PT_INTERP");
    if (ph.p_type != PT_DYNAMIC) continue;
    std::vector<uint64_t> needed_offs;
    uint64_t strtab = 0;
    for (uint64_t off = ph.p_offset; off + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      if (!read_at(data, off, &d) || d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) needed_offs.push_back(d.d_un.d_val);
      if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    }
    if (needed_offs.empty()) continue;
    uint64_t str_off = 0;
    if (!vaddr_to_off(strtab, &str_off)) return make_error(path + ": bad DT_STRTAB");
    for (uint64_t n : needed_offs) {
      std::string name;
      if (!string_at(data, str_off + n, &name) || name.empty() ||
          name.find('/') != std::string::npos)
        return make_error(path + ": bad DT_NEEDED entry");
      info.needed.push_back(name);
    }
  }
  return info;
}

Result<std::string> real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return sys_error("realpath " + p);
  return std::string(buf);
}

}  // namespace

Result<std::vector<RuntimeFile>> elf_runtime_files(const std::string& exec_file) {
  std::vector<RuntimeFile> out;
  ElfInfo top = TRY(parse_elf(exec_file));
  if (top.interp.empty()) return out;  // static: nothing else to bring in
  if (top.interp[0] != '/') return make_error(exec_file + ": relative ELF interpreter");
  out.push_back({top.interp, TRY(real_path(top.interp))});
  std::set<std::string> seen;
  std::vector<std::string> todo = top.needed;
  // A breadth-first walk over DT_NEEDED, bounded by the number of distinct names.
  while (!todo.empty()) {
    std::string name = todo.front();
    todo.erase(todo.begin());
    if (!seen.insert(name).second) continue;
    if (seen.size() > 256) return make_error(exec_file + ": too many shared libraries");
    std::string found;
    for (const char* dir : kSystemDirs) {
      std::string candidate = std::string(dir) + "/" + name;
      if (::access(candidate.c_str(), R_OK) == 0) {
        found = candidate;
        break;
      }
    }
    if (found.empty())
      return make_error(exec_file + ": shared library " + name + " not found in system dirs");
    std::string host = TRY(real_path(found));
    if (host != out[0].host_path) out.push_back({found, host});
    ElfInfo lib = TRY(parse_elf(host));
    todo.insert(todo.end(), lib.needed.begin(), lib.needed.end());
  }
  return out;
}

}  // namespace carapace
