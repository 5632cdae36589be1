// What a dynamically linked exec file needs inside an otherwise empty root: its ELF interpreter
// and the shared libraries it (and they) name in DT_NEEDED, found where the interpreter looks
// when there is no /etc/ld.so.cache (the system directories). A static binary needs nothing.
#pragma once

#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct RuntimeFile {
  std::string jail_path;  // the path the loader opens (inside the jail)
  std::string host_path;  // the same file on the host (symlinks resolved)
};

// Interpreter first, then libraries in discovery order; no duplicates. Errors when the file is
// not a 64-bit ELF, or a needed library is not found in the system directories.
Result<std::vector<RuntimeFile>> elf_runtime_files(const std::string& exec_file);

}  // namespace carapace
