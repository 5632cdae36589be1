#include "process_sandbox/init_title.h"

#include <linux/prctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace carapace {
namespace {

// The memory-map fields of /proc/self/stat (proc(5)), by field number. The comm field (2) may
// hold spaces and parentheses, so counting starts after the last ')'.
Result<std::vector<unsigned long>> read_stat_fields() {
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return make_error("/proc/self/stat: unexpected format");
  std::istringstream in(stat.substr(paren + 1));
  std::vector<unsigned long> fields(52, 0);
  std::string word;
  for (size_t i = 3; i < fields.size() && (in >> word); ++i)
    fields[i] = i == 3 ? 0 : std::strtoul(word.c_str(), nullptr, 10);  // 3 is the state letter
  if (fields[51] == 0) return make_error("/proc/self/stat: no argument and environment bounds");
  return fields;
}

void zero(unsigned long start, unsigned long end) {
  if (end > start) std::memset(reinterpret_cast<void*>(start), 0, end - start);
}

}  // namespace

// Why PR_SET_MM_MAP: it replaces every bound at once, checked as a whole, and needs no capability
// when /proc/PID/exe stays as it is (the single-field PR_SET_MM_ARG_START & co. need
// CAP_SYS_RESOURCE, which container hosts often withhold even from root).
// Why not exec a minimal init instead: PID 1 must stay the agent's reaper with the supervisor's
// control socket and the agent's pid, and an exec'd init would be dumpable again by the sandbox's
// uid unless it re-hardened itself. Rewriting the kernel's view of the areas changes exactly what
// /proc shows; the rest of PID 1's memory is closed to the workload because PID 1 is non-dumpable
// and the workload has no CAP_SYS_PTRACE over its namespace.
Status become_anonymous_init() {
  std::vector<unsigned long> f = TRY(read_stat_fields());
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return sys_error("mmap for the init's command line");
  std::memcpy(page, kSandboxInitName, sizeof kSandboxInitName);
  const auto args = reinterpret_cast<unsigned long>(page);
  prctl_mm_map map{};
  map.start_code = f[26];
  map.end_code = f[27];
  map.start_stack = f[28];
  map.start_data = f[45];
  map.end_data = f[46];
  map.start_brk = f[47];
  map.brk = static_cast<unsigned long>(::syscall(SYS_brk, 0));  // the kernel's, not libc's cache
  map.arg_start = args;
  map.arg_end = args + sizeof kSandboxInitName;
  map.env_start = map.env_end = map.arg_end;  // no environment
  map.exe_fd = static_cast<uint32_t>(-1);     // /proc/PID/exe unchanged (and unreadable)
  if (::prctl(PR_SET_MM, PR_SET_MM_MAP, &map, sizeof map, 0) != 0)
    return sys_error("prctl(PR_SET_MM, PR_SET_MM_MAP)");
  // The old strings on the stack: nothing reads them any more (the config was copied, the agent
  // gets a fresh environment), and zeroed they cannot surface through any later leak.
  zero(f[48], f[49]);
  zero(f[50], f[51]);
  if (::prctl(PR_SET_NAME, kSandboxInitName, 0, 0, 0) != 0) return sys_error("PR_SET_NAME");
  return ok_status();
}

}  // namespace carapace
