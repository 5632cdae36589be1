// The snapshot state file: everything about a VM except its RAM. The container knows the header
// (CPU template, host CPU, the memory image's layout) and treats each section as an opaque,
// individually versioned blob; what goes inside a section is up to its owner (VM, vCPU, device).
//
// Layout (all integers little-endian; see snapshot/FORMAT.md):
//   magic "CARAPACE" | format version u32 | cpu template (u32 len + bytes) | host cpu signature
//   | memory generation u64 | memory layout | sections... | XXH3-64 of all preceding bytes (u64)
//   section: type u32 | index u32 | version u32 | payload (u64 len + bytes)
// The number of sections is not stored: they run up to the checksum.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "snapshot/cpu_signature.h"
#include "snapshot/memory_layout.h"

namespace carapace {

inline constexpr std::string_view kStateMagic = "CARAPACE";
inline constexpr uint32_t kStateFormatVersion = 1;
// Files above this are refused before a byte is read: real state is kilobytes, and the whole file
// is held in memory while it is checked.
inline constexpr uint64_t kMaxStateFileSize = 64ull << 20;
inline constexpr uint32_t kMaxStateSections = 4096;
inline constexpr uint32_t kMaxCpuTemplateNameLen = 64;

// Section types. The values are on disk: never renumber, only add. The index tells sections of
// one type apart (vCPU number, device slot); singletons use index 0.
enum class SectionType : uint32_t {
  kInvalid = 0,  // refused: a zeroed header is corruption, not a section
  kMachineConfig = 1,
  kVm = 2,               // VM-wide KVM state: irqchip, PIT, clock
  kVcpu = 3,             // index = vCPU number
  kDevice = 4,           // index = device slot
  kVirtioTransport = 5,  // index = virtio-mmio slot
  // 6..0x7fffffff: free for future types.
  kFirstTest = 0x80000000,  // tests and experiments; never written by a release
};

struct StateSection {
  uint32_t type = 0;
  uint32_t index = 0;
  uint32_t version = 0;  // the section owner's own format version
  std::vector<uint8_t> payload;

  bool operator==(const StateSection&) const = default;
};

struct StateFile {
  std::string cpu_template;
  CpuSignature host_cpu;
  // Names the memory image in a snapshot directory ("memory-<generation>"); the directory code
  // fills it in.
  uint64_t memory_generation = 0;
  MemoryLayout memory;
  std::vector<StateSection> sections;

  // Appends a section; refuses a duplicate (type, index) or kInvalid.
  Status add_section(SectionType type, uint32_t index, uint32_t version,
                     std::vector<uint8_t> payload);
  Status add_section(uint32_t type, uint32_t index, uint32_t version, std::vector<uint8_t> payload);
  // nullptr when absent.
  const StateSection* find(SectionType type, uint32_t index = 0) const;

  bool operator==(const StateFile&) const = default;
};

// Refuses what decode would refuse (duplicates, a bad layout, oversized fields), so anything
// encoded decodes.
Result<std::vector<uint8_t>> encode_state_file(const StateFile& state);

// Size bounds, then the magic, then the checksum over the whole file, and only then parsing: a
// flipped bit anywhere is reported as corruption before any length in the file is believed.
// A file of another format version is refused with both versions in the message.
Result<StateFile> decode_state_file(std::span<const uint8_t> bytes);

// XXH3-64 of `bytes` (the checksum the trailer holds for the bytes before it).
uint64_t state_checksum(std::span<const uint8_t> bytes);
// Whether the last 8 bytes hold the checksum of the others (false for files under 8 bytes).
bool state_checksum_ok(std::span<const uint8_t> bytes);

// "vcpu", "device", ...; "type-<n>" for values this build does not know.
std::string section_type_name(uint32_t type);

}  // namespace carapace
