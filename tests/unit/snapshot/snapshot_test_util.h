// Helpers shared by the snapshot tests: a temporary directory, a small valid state, and guest
// memory with recognisable contents.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "snapshot/state_file.h"
#include "vmm/memory/guest_memory.h"

namespace carapace::testing {

inline constexpr uint64_t kPage = 4096;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/carapace-snap-XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "";
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A state with a few sections; `tag` goes into the VM section so tests can tell snapshots apart.
inline StateFile make_state(uint32_t tag = 7) {
  StateFile s;
  s.cpu_template = "baseline";
  s.host_cpu = CpuSignature{"GenuineIntel", 6, 143, 8};
  s.memory.regions = {{GuestAddress(0), 16 * kPage}};
  std::vector<uint8_t> vm = {1, 2, 3, static_cast<uint8_t>(tag), static_cast<uint8_t>(tag >> 8)};
  EXPECT_TRUE(s.add_section(SectionType::kVm, 0, 1, vm).ok());
  EXPECT_TRUE(s.add_section(SectionType::kVcpu, 0, 2, std::vector<uint8_t>(40, 0xab)).ok());
  EXPECT_TRUE(s.add_section(SectionType::kVcpu, 1, 2, std::vector<uint8_t>(40, 0xcd)).ok());
  EXPECT_TRUE(s.add_section(SectionType::kDevice, 3, 1, {}).ok());
  return s;
}

inline GuestMemory make_memory(const std::vector<RegionSpec>& specs) {
  auto mem = GuestMemory::create_anonymous(specs);
  EXPECT_TRUE(mem.ok()) << mem.error().describe();
  return std::move(mem).value();
}

// Writes `tag` (8 bytes) at the start of every `stride`-th page of every region.
inline void stamp_pages(const GuestMemory& mem, uint64_t tag, uint64_t stride) {
  for (const auto& r : mem.regions()) {
    for (uint64_t off = 0; off < r.size; off += stride * kPage)
      ASSERT_TRUE(mem.write_obj(GuestAddress(r.start.value + off), tag ^ off).ok());
  }
}

// `copy` holds the same bytes as `mem` in every region of `mem`.
inline void expect_same_bytes(const GuestMemory& mem, const GuestMemory& copy) {
  for (const auto& r : mem.regions()) {
    auto a = mem.slice(r.start, r.size);
    auto b = copy.slice(r.start, r.size);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(std::memcmp(a->data(), b->data(), r.size), 0);
  }
}

}  // namespace carapace::testing
