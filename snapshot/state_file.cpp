#include "snapshot/state_file.h"

#include <xxhash.h>

#include <cstring>
#include <set>
#include <utility>

namespace carapace {

namespace {

constexpr size_t kChecksumBytes = 8;
// magic + version + checksum: anything shorter cannot even be identified.
constexpr size_t kMinStateFileSize = 8 + 4 + kChecksumBytes;

Error bad(const std::string& msg) {
  return as_invalid_input(make_error("snapshot state: " + msg));
}

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{p[i]} << (8 * i);
  return v;
}

bool magic_ok(std::span<const uint8_t> bytes) {
  return bytes.size() >= kStateMagic.size() &&
         std::memcmp(bytes.data(), kStateMagic.data(), kStateMagic.size()) == 0;
}

Status check_sections(const std::vector<StateSection>& sections) {
  if (sections.size() > kMaxStateSections)
    return bad(std::to_string(sections.size()) + " sections, above the limit " +
               std::to_string(kMaxStateSections));
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (const auto& s : sections) {
    if (s.type == static_cast<uint32_t>(SectionType::kInvalid))
      return bad("section of type 0 (invalid)");
    if (!seen.insert({s.type, s.index}).second)
      return bad("duplicate section " + section_type_name(s.type) + " index " +
                 std::to_string(s.index));
  }
  return {};
}

}  // namespace

Status StateFile::add_section(SectionType type, uint32_t index, uint32_t version,
                              std::vector<uint8_t> payload) {
  return add_section(static_cast<uint32_t>(type), index, version, std::move(payload));
}

Status StateFile::add_section(uint32_t type, uint32_t index, uint32_t version,
                              std::vector<uint8_t> payload) {
  if (type == static_cast<uint32_t>(SectionType::kInvalid))
    return bad("section of type 0 (invalid)");
  for (const auto& s : sections) {
    if (s.type == type && s.index == index)
      return bad("duplicate section " + section_type_name(type) + " index " +
                 std::to_string(index));
  }
  sections.push_back({type, index, version, std::move(payload)});
  return {};
}

const StateSection* StateFile::find(SectionType type, uint32_t index) const {
  for (const auto& s : sections) {
    if (s.type == static_cast<uint32_t>(type) && s.index == index) return &s;
  }
  return nullptr;
}

uint64_t state_checksum(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

bool state_checksum_ok(std::span<const uint8_t> bytes) {
  if (bytes.size() < kChecksumBytes) return false;
  size_t body = bytes.size() - kChecksumBytes;
  return state_checksum(bytes.first(body)) == load_le64(bytes.data() + body);
}

Result<std::vector<uint8_t>> encode_state_file(const StateFile& state) {
  if (state.cpu_template.size() > kMaxCpuTemplateNameLen) return bad("cpu template name too long");
  TRY_STATUS(state.memory.validate());
  TRY_STATUS(check_sections(state.sections));

  ByteWriter w;
  w.bytes({reinterpret_cast<const uint8_t*>(kStateMagic.data()), kStateMagic.size()});
  w.u32(kStateFormatVersion);
  w.string(state.cpu_template);
  state.host_cpu.encode(w);
  w.u64(state.memory_generation);
  state.memory.encode(w);
  for (const auto& s : state.sections) {
    w.u32(s.type);
    w.u32(s.index);
    w.u32(s.version);
    w.blob(s.payload);
  }
  if (w.size() + kChecksumBytes > kMaxStateFileSize)
    return bad("encoded state is " + std::to_string(w.size()) + " bytes, above the limit");
  w.u64(state_checksum(w.data()));
  return w.take();
}

Result<StateFile> decode_state_file(std::span<const uint8_t> bytes) {
  if (bytes.size() > kMaxStateFileSize)
    return bad("file is " + std::to_string(bytes.size()) + " bytes, above the " +
               std::to_string(kMaxStateFileSize) + "-byte limit");
  if (bytes.empty()) return bad("file is empty");
  if (bytes.size() < kMinStateFileSize)
    return bad("file truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (!magic_ok(bytes)) return bad("not a carapace snapshot state file (bad magic)");
  if (!state_checksum_ok(bytes)) return bad("checksum mismatch: the file is corrupt or truncated");

  ByteReader r(bytes.first(bytes.size() - kChecksumBytes));
  TRY(r.bytes("magic", kStateMagic.size()));
  uint32_t version = TRY(r.u32("format version"));
  if (version != kStateFormatVersion)
    return bad("snapshot format version " + std::to_string(version) + ", this carapace reads " +
               std::to_string(kStateFormatVersion));

  StateFile state;
  state.cpu_template = TRY(r.string("cpu template", kMaxCpuTemplateNameLen));
  state.host_cpu = TRY(CpuSignature::decode(r));
  state.memory_generation = TRY(r.u64("memory generation"));
  state.memory = TRY(MemoryLayout::decode(r));
  while (!r.at_end()) {
    if (state.sections.size() == kMaxStateSections)
      return bad("more than " + std::to_string(kMaxStateSections) + " sections");
    StateSection s;
    s.type = TRY(r.u32("section type"));
    s.index = TRY(r.u32("section index"));
    s.version = TRY(r.u32("section version"));
    // Bounded by what is left of the file, checked before the payload is copied.
    s.payload = TRY(r.blob("section payload", r.remaining()));
    state.sections.push_back(std::move(s));
  }
  TRY_STATUS(check_sections(state.sections));
  return state;
}

std::string section_type_name(uint32_t type) {
  switch (static_cast<SectionType>(type)) {
    case SectionType::kInvalid:
      return "invalid";
    case SectionType::kMachineConfig:
      return "machine-config";
    case SectionType::kVm:
      return "vm";
    case SectionType::kVcpu:
      return "vcpu";
    case SectionType::kDevice:
      return "device";
    case SectionType::kVirtioTransport:
      return "virtio-transport";
    case SectionType::kFirstTest:
      break;
  }
  return "type-" + std::to_string(type);
}

}  // namespace carapace
