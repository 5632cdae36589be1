// Fuzzes the snapshot state file decoder (snapshot/state_file, machine_state_codec, cpu_compat):
// what `carapace restore` and the daemon's pool read back from disk, where anyone who can write
// a snapshot directory controls every byte (snapshot/FORMAT.md).
//
// Input: [flags:1] then the state file. Unless flags bit 0 is set the file is taken without its
// XXH3 trailer and the target appends the right one, so mutated fields get past the checksum and
// reach the parsers behind it (with bit 0 the input is the whole file, checksum included).
// Whatever decodes must survive a round trip: decode(encode(state file)) is the same state file,
// and a machine state re-encodes to the very sections it came from. The CPU compatibility check
// then runs against a fixed host that supports every feature bit.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "common/base/log.h"
#include "snapshot/cpu_compat.h"
#include "snapshot/machine_state_codec.h"
#include "snapshot/state_file.h"

using namespace carapace;

namespace {

const CpuidTable& permissive_host() {
  static const CpuidTable table = [] {
    std::vector<kvm_cpuid_entry2> entries;
    for (uint32_t function : {0u, 1u, 7u, 0x80000000u, 0x80000001u}) {
      kvm_cpuid_entry2 e{};
      e.function = function;
      e.eax = function == 0 ? 0xd : function == 0x80000000u ? 0x80000008u : 0;
      e.ebx = e.ecx = e.edx = function == 0 || function == 0x80000000u ? 0 : 0xffffffffu;
      entries.push_back(e);
    }
    return CpuidTable(std::move(entries));
  }();
  return table;
}

std::vector<StateSection> sorted(std::vector<StateSection> s) {
  std::sort(s.begin(), s.end(), [](const StateSection& a, const StateSection& b) {
    return std::tie(a.type, a.index) < std::tie(b.type, b.index);
  });
  return s;
}

void check_machine_state(const StateFile& file) {
  auto state = decode_machine_state(file);
  if (!state.ok()) {
    if (state.error().kind != ErrorKind::kInvalidInput) __builtin_trap();
    return;
  }
  auto again = encode_machine_state(*state);
  if (!again.ok()) __builtin_trap();  // decode accepted what encode refuses
  if (again->cpu_template != file.cpu_template || !(again->memory == file.memory) ||
      sorted(again->sections) != sorted(file.sections))
    __builtin_trap();
  (void)check_snapshot_cpu(file.host_cpu, *state, CpuSignature{"GenuineIntel", 6, 143, 8},
                           permissive_host());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_log_level(LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool whole_file = data[0] & 1;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (!whole_file) {
    const uint64_t sum = state_checksum(bytes);
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<uint8_t>(sum >> (8 * i)));
  }
  auto file = decode_state_file(bytes);
  if (!file.ok()) {
    if (file.error().kind != ErrorKind::kInvalidInput) __builtin_trap();
    return 0;
  }
  auto encoded = encode_state_file(*file);
  if (!encoded.ok()) __builtin_trap();  // decode accepted what encode refuses
  auto back = decode_state_file(*encoded);
  if (!back.ok() || !(*back == *file)) __builtin_trap();
  check_machine_state(*file);
  return 0;
}
