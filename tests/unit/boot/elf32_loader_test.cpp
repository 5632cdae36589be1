// ELF32 kernels (EM_386) for the PVH boot protocol: loaded with the same checks as ELF64 (header,
// program header table and segment bounds in the file and in RAM, overlap, the 1 MiB boot area,
// the PVH note), and refused without a PVH note, since no 64-bit entry can start them.
#include "tests/unit/boot/elf_test_image.h"

namespace carapace {
namespace {

using namespace elf_test;

constexpr uint32_t kPvhEntry = 0x100040;

ElfImage32 pvh32() {
  ElfImage32 img;
  img.eh.e_entry = kPvhEntry;
  img.load(kMiB, pattern(0x100, 1), 0x1000)
      .load(2 * kMiB, pattern(0x40, 2), 0x40)
      .note(make_note("Xen", 18, le32(kPvhEntry)));
  return img;
}

void patch_ehdr32(Bytes& file, const std::function<void(Elf32_Ehdr&)>& f) {
  patch_ehdr<Elf32_Ehdr>(file, f);
}
void patch_phdr32(Bytes& file, size_t i, const std::function<void(Elf32_Phdr&)>& f) {
  patch_phdr<Elf32_Ehdr, Elf32_Phdr>(file, i, f);
}

TEST_F(ElfLoaderTest, Elf32WithPvhNoteLoads) {
  ElfImage32 img = pvh32();
  img.eh.e_flags = 0;
  ASSERT_TRUE(mem_.fill(GuestAddress(kMiB), 0xcc, 0x1000).ok());
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->elf64);
  ASSERT_TRUE(r->pvh_entry.has_value());
  EXPECT_EQ(*r->pvh_entry, kPvhEntry);
  EXPECT_EQ(r->low, kMiB);
  EXPECT_EQ(r->high, 2 * kMiB + 0x40);
  EXPECT_EQ(guest(kMiB, 0x100), pattern(0x100, 1));
  EXPECT_EQ(guest(kMiB + 0x100, 0x1000 - 0x100), Bytes(0x1000 - 0x100, 0));  // BSS cleared
  EXPECT_EQ(guest(2 * kMiB, 0x40), pattern(0x40, 2));
}

TEST_F(ElfLoaderTest, Elf64IsReportedAs64Bit) {
  auto r = load(two_segments().bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->elf64);
}

TEST_F(ElfLoaderTest, Elf32WithoutPvhNoteIsRefused) {
  ElfImage32 img;
  img.load(kMiB, pattern(0x20, 1), 0x20);
  expect_refused(img.bytes(), "32-bit ELF without a PVH entry note");
  ElfImage32 other_note;  // a Xen note, but not the entry point
  other_note.load(kMiB, pattern(0x20, 1), 0x20).note(make_note("Xen", 17, le32(kPvhEntry)));
  expect_refused(other_note.bytes(), "32-bit ELF without a PVH entry note");
}

TEST_F(ElfLoaderTest, Elf32BadHeaderFieldsAreRefused) {
  const HeaderCase<Elf32_Ehdr> cases[] = {
      {"not an ELF", [](Elf32_Ehdr& h) { h.e_ident[EI_MAG0] = 0; }},
      {"not little-endian", [](Elf32_Ehdr& h) { h.e_ident[EI_DATA] = ELFDATA2MSB; }},
      {"not an i386 ELF", [](Elf32_Ehdr& h) { h.e_machine = EM_X86_64; }},
      {"not an i386 ELF", [](Elf32_Ehdr& h) { h.e_machine = EM_ARM; }},
      {"not an executable", [](Elf32_Ehdr& h) { h.e_type = ET_DYN; }},
      // An ELF64 program header size in an ELF32 file: the class decides the layout.
      {"bad program header entry size", [](Elf32_Ehdr& h) { h.e_phentsize = sizeof(Elf64_Phdr); }},
      {"no program headers", [](Elf32_Ehdr& h) { h.e_phnum = 0; }},
      {"too many program headers", [](Elf32_Ehdr& h) { h.e_phnum = 65; }},
  };
  expect_header_cases_refused(pvh32().bytes(), cases);
}

TEST_F(ElfLoaderTest, Elf32TruncatedHeadersAreRefused) {
  Bytes file = pvh32().bytes();
  file.resize(sizeof(Elf32_Ehdr) - 1);
  expect_refused(file, "too small");
  file.resize(EI_NIDENT - 1);  // not even e_ident
  expect_refused(file, "too small");
  file = pvh32().bytes();  // the last program header is cut short
  file.resize(sizeof(Elf32_Ehdr) + 3 * sizeof(Elf32_Phdr) - 1);
  expect_refused(file, "program headers beyond end of file");
  file = pvh32().bytes();
  patch_ehdr32(file, [](Elf32_Ehdr& h) { h.e_phoff = UINT32_MAX - 16; });
  expect_refused(file, "program headers beyond end of file");
}

TEST_F(ElfLoaderTest, Elf32BadSegmentBoundsAreRefused) {
  struct Case {
    const char* why;
    size_t index;
    std::function<void(Elf32_Phdr&)> patch;
  };
  const Case cases[] = {
      {"segment data beyond end of file", 1, [](Elf32_Phdr& p) { p.p_offset = UINT32_MAX - 8; }},
      {"segment data beyond end of file", 1,
       [](Elf32_Phdr& p) { p.p_filesz = p.p_memsz = 0x10000; }},
      {"file size exceeds memory size", 1, [](Elf32_Phdr& p) { p.p_memsz = p.p_filesz - 1; }},
      {"outside guest RAM", 1, [](Elf32_Phdr& p) { p.p_paddr = kRamSize + kMiB; }},
      {"outside guest RAM", 1, [](Elf32_Phdr& p) { p.p_paddr = kRamSize - p.p_memsz + 1; }},
      // 32-bit fields cannot wrap 64-bit arithmetic, but can still run past the top of RAM.
      {"outside guest RAM", 1,
       [](Elf32_Phdr& p) {
         p.p_paddr = UINT32_MAX - 0x10;
         p.p_memsz = 0x40;
         p.p_filesz = 0x40;
       }},
      {"below the 1 MiB", 1, [](Elf32_Phdr& p) { p.p_paddr = 0x7000; }},
      {"overlapping", 1, [](Elf32_Phdr& p) { p.p_paddr = kMiB + 0xfff; }},
      {"note segment beyond end of file", 2, [](Elf32_Phdr& p) { p.p_filesz = 0x10000; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.why);
    Bytes file = pvh32().bytes();
    patch_phdr32(file, c.index, c.patch);
    expect_refused(file, c.why);
  }
}

TEST_F(ElfLoaderTest, Elf32PvhEntryOutsideRamIsRefused) {
  ElfImage32 img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(make_note("Xen", 18, le32(0x7ffff000)));
  expect_refused(img.bytes(), "PVH entry point outside guest RAM");
}

}  // namespace
}  // namespace carapace
