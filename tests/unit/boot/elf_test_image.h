// Test helpers for the ELF kernel loader: a little ELF writer for both classes (header, program
// headers, then each segment's payload in order), notes, and a fixture with 4 MiB of guest RAM.
// Tests that want a broken file build a valid one and patch the serialized bytes.
#pragma once

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/boot/elf_loader.h"

namespace carapace::elf_test {

inline constexpr uint64_t kMiB = 1 << 20;
inline constexpr uint64_t kRamSize = 4 * kMiB;
using Bytes = std::vector<uint8_t>;

// Little-endian x86 ELF of either class: ELF64/EM_X86_64 or ELF32/EM_386.
template <typename Ehdr, typename Phdr>
struct BasicElfImage {
  static constexpr bool k64 = sizeof(Ehdr) == sizeof(Elf64_Ehdr);
  Ehdr eh{};
  std::vector<Phdr> ph;
  std::vector<Bytes> payload;

  BasicElfImage() {
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = k64 ? ELFCLASS64 : ELFCLASS32;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = k64 ? EM_X86_64 : EM_386;
    eh.e_version = EV_CURRENT;
    eh.e_entry = kMiB;
    eh.e_ehsize = sizeof(Ehdr);
    eh.e_phentsize = sizeof(Phdr);
  }
  BasicElfImage& load(uint64_t paddr, Bytes data, uint64_t memsz) {
    Phdr p{};
    p.p_type = PT_LOAD;
    p.p_paddr = p.p_vaddr = static_cast<decltype(p.p_paddr)>(paddr);
    p.p_filesz = static_cast<decltype(p.p_filesz)>(data.size());
    p.p_memsz = static_cast<decltype(p.p_memsz)>(memsz);
    p.p_flags = PF_R | PF_X;
    ph.push_back(p);
    payload.push_back(std::move(data));
    return *this;
  }
  BasicElfImage& note(Bytes data) {
    Phdr p{};
    p.p_type = PT_NOTE;
    p.p_filesz = p.p_memsz = static_cast<decltype(p.p_filesz)>(data.size());
    ph.push_back(p);
    payload.push_back(std::move(data));
    return *this;
  }
  Bytes bytes() const {
    Ehdr h = eh;
    h.e_phoff = sizeof(Ehdr);
    h.e_phnum = static_cast<uint16_t>(ph.size());
    std::vector<Phdr> p = ph;
    uint64_t off = sizeof(Ehdr) + p.size() * sizeof(Phdr);
    for (size_t i = 0; i < p.size(); ++i) {
      p[i].p_offset = static_cast<decltype(p[i].p_offset)>(off);
      off += payload[i].size();
    }
    Bytes out(sizeof h + p.size() * sizeof(Phdr));
    std::memcpy(out.data(), &h, sizeof h);
    if (!p.empty()) std::memcpy(out.data() + sizeof h, p.data(), p.size() * sizeof(Phdr));
    for (const auto& d : payload)
      out.insert(out.end(), d.begin(), d.end());
    return out;
  }
};

using ElfImage = BasicElfImage<Elf64_Ehdr, Elf64_Phdr>;
using ElfImage32 = BasicElfImage<Elf32_Ehdr, Elf32_Phdr>;

// An ELF note: header, name padded to 4, descriptor padded to 4.
inline Bytes make_note(const char* name, uint32_t type, const Bytes& desc) {
  Elf64_Nhdr nh{static_cast<Elf64_Word>(std::strlen(name) + 1),
                static_cast<Elf64_Word>(desc.size()), type};
  Bytes out(sizeof nh + nh.n_namesz);
  std::memcpy(out.data(), &nh, sizeof nh);
  std::memcpy(out.data() + sizeof nh, name, nh.n_namesz);
  out.resize((out.size() + 3) & ~size_t{3});
  out.insert(out.end(), desc.begin(), desc.end());
  out.resize((out.size() + 3) & ~size_t{3});
  return out;
}

inline Bytes le32(uint32_t v) {
  return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
}

inline Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

template <typename Ehdr = Elf64_Ehdr>
void patch_ehdr(Bytes& file, const std::type_identity_t<std::function<void(Ehdr&)>>& f) {
  Ehdr h;
  std::memcpy(&h, file.data(), sizeof h);
  f(h);
  std::memcpy(file.data(), &h, sizeof h);
}

template <typename Ehdr = Elf64_Ehdr, typename Phdr = Elf64_Phdr>
void patch_phdr(Bytes& file, size_t i, const std::type_identity_t<std::function<void(Phdr&)>>& f) {
  size_t off = sizeof(Ehdr) + i * sizeof(Phdr);
  Phdr p;
  std::memcpy(&p, file.data() + off, sizeof p);
  f(p);
  std::memcpy(file.data() + off, &p, sizeof p);
}

inline UniqueFd memfd_with(const Bytes& data) {
  UniqueFd fd(::memfd_create("elf_loader_test", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  return fd;
}

// A change to a valid image's ELF header and the refusal it must bring.
template <typename Ehdr>
struct HeaderCase {
  const char* why;
  std::function<void(Ehdr&)> patch;
};

class ElfLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = GuestMemory::create_anonymous({{GuestAddress(0), kRamSize}});
    ASSERT_TRUE(m.ok());
    mem_ = std::move(m).value();
  }
  Result<LoadedKernel> load(const Bytes& file) {
    UniqueFd fd = memfd_with(file);
    return load_elf_kernel(fd.get(), file.size(), mem_);
  }
  Bytes guest(uint64_t addr, size_t len) {
    Bytes out(len);
    EXPECT_TRUE(mem_.read(GuestAddress(addr), out).ok());
    return out;
  }
  bool ram_all_zero() {
    auto s = mem_.slice(GuestAddress(0), kRamSize);
    return s.ok() && std::all_of(s->begin(), s->end(), [](uint8_t b) { return b == 0; });
  }
  // The load fails with a message containing `why`, and guest RAM is untouched.
  void expect_refused(const Bytes& file, const std::string& why) {
    auto r = load(file);
    ASSERT_FALSE(r.ok()) << "expected refusal: " << why;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
    EXPECT_TRUE(ram_all_zero()) << "a refused kernel wrote to guest RAM";
  }
  // Each case, applied to a copy of `good`, is refused with its own message.
  template <typename Ehdr, size_t N>
  void expect_header_cases_refused(const Bytes& good, const HeaderCase<Ehdr> (&cases)[N]) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.why);
      Bytes file = good;
      patch_ehdr<Ehdr>(file, c.patch);
      expect_refused(file, c.why);
    }
  }

  // A valid two-segment kernel whose first segment is fine, so refusals prove nothing is copied
  // even when only a later segment is bad.
  static ElfImage two_segments() {
    ElfImage img;
    img.load(kMiB, pattern(0x100, 1), 0x1000).load(2 * kMiB, pattern(0x40, 2), 0x40);
    return img;
  }

  GuestMemory mem_;
};

}  // namespace carapace::elf_test
