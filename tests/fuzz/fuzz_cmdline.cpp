// Fuzzes the kernel command line on both ends: the VMM's Cmdline (what `carapace run` flags and
// a template's boot_args become, written into guest RAM), the `carapace run` flag parser that
// feeds it, and what the guest agent reads back: parse_kernel_cmdline (/proc/cmdline, whose
// carapace.token= a template's boot_args can set) and its own flags (parse_agent_args).
//
// Input: [mode:1] then
//   mode % 4 == 0 (Cmdline): [capacity:2][addr:4] then pieces, each [len:1] + len bytes, appended
//     in order. The line never holds NUL, never starts or ends with a space and always fits the
//     capacity with its NUL; write_to succeeds exactly when the line fits one region of the fake
//     guest memory, and then the guest reads it back NUL-terminated.
//   mode % 4 == 1: parse_kernel_cmdline of the rest; what it keeps must be valid.
//   mode % 4 == 2: parse_agent_args of the rest split at NUL bytes.
//   mode % 4 == 3: parse_run_args of the rest split at NUL bytes; an accepted command line goes
//     into a Cmdline of the size the machine reserves for it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "guest/agent/options.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"
#include "vmm/boot/cmdline.h"
#include "vmm/cli/run_args.h"
#include "vmm/memory/layout.h"

using namespace carapace;
using carapace::fuzz::Input;

namespace {

std::vector<std::string> split_args(const Input& in) {
  std::vector<std::string> args;
  std::string_view rest(reinterpret_cast<const char*>(in.data()), in.size());
  if (rest.empty()) return args;
  for (;;) {
    size_t nul = rest.find('\0');
    args.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  return args;
}

bool fits_one_region(const GuestMemory& mem, uint64_t addr, uint64_t len) {
  for (const auto& r : mem.regions()) {
    const uint64_t start = r.start.value;
    if (addr >= start && addr - start <= r.size && len <= r.size - (addr - start)) return true;
  }
  return false;
}

void fuzz_builder(Input& in) {
  const uint64_t capacity = in.take<uint16_t>();
  const uint64_t addr = in.take<uint32_t>() % (fuzz::kRegion1 + 2 * fuzz::kRegionSize);
  Cmdline c(capacity);
  while (!in.empty()) {
    const size_t len = std::min<size_t>(in.take<uint8_t>(), in.size());
    (void)c.append(std::string_view(reinterpret_cast<const char*>(in.data()), len));
    in = Input(in.data() + len, in.size() - len);
  }
  const std::string& line = c.str();
  if (line.find('\0') != std::string::npos) __builtin_trap();
  if (!line.empty() && (line.front() == ' ' || line.back() == ' ')) __builtin_trap();
  if (!line.empty() && c.size_with_nul() > capacity) __builtin_trap();

  const GuestMemory& mem = fuzz::fuzz_memory();
  const bool fits = fits_one_region(mem, addr, c.size_with_nul());
  if (c.write_to(mem, GuestAddress(addr)).ok() != fits) __builtin_trap();
  if (!fits) return;
  std::vector<uint8_t> back(c.size_with_nul());
  if (!mem.read(GuestAddress(addr), back).ok()) __builtin_trap();
  if (back.back() != 0 ||
      std::string_view(reinterpret_cast<const char*>(back.data()), line.size()) != line)
    __builtin_trap();
}

void fuzz_kernel_cmdline(const Input& in) {
  auto k = agent::parse_kernel_cmdline(
      std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
  if (!k.token.empty() && !agent::valid_token(k.token)) __builtin_trap();
  if (!k.selftest.empty() && !agent::valid_selftest_name(k.selftest)) __builtin_trap();
}

void fuzz_run_args(const Input& in) {
  auto args = parse_run_args(split_args(in));
  if (!args.ok()) return;
  Cmdline c(layout::kCmdlineMax);
  (void)c.append(args->machine.cmdline);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_one_mode(
      data, size,
      {fuzz_builder, fuzz_kernel_cmdline,
       [](Input& in) { (void)agent::parse_agent_args(split_args(in)); }, fuzz_run_args});
}
