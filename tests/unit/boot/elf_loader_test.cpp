// The ELF kernel loader on images built in memory: valid kernels land byte for byte at p_paddr, and
// every malformed header or segment is refused before a single byte reaches guest RAM.
#include "tests/unit/boot/elf_test_image.h"

namespace carapace {
namespace {

using namespace elf_test;

TEST_F(ElfLoaderTest, LoadsSegmentsAtPaddrAndZeroFillsBss) {
  ElfImage img;
  img.eh.e_entry = kMiB + 0x10;
  img.load(kMiB, pattern(100, 3), 0x2000).load(2 * kMiB + 0x40, pattern(16, 9), 16);
  // Junk where the BSS goes: the loader must zero it, not rely on fresh RAM.
  ASSERT_TRUE(mem_.fill(GuestAddress(kMiB), 0xcc, 0x3000).ok());
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entry, kMiB + 0x10);
  EXPECT_FALSE(r->pvh_entry.has_value());
  EXPECT_EQ(r->low, kMiB);
  EXPECT_EQ(r->high, 2 * kMiB + 0x40 + 16);
  EXPECT_EQ(guest(kMiB, 100), pattern(100, 3));
  EXPECT_EQ(guest(kMiB + 100, 0x2000 - 100), Bytes(0x2000 - 100, 0));
  EXPECT_EQ(guest(kMiB + 0x2000, 0x10), Bytes(0x10, 0xcc));  // past p_memsz: not touched
  EXPECT_EQ(guest(2 * kMiB + 0x40, 16), pattern(16, 9));
}

TEST_F(ElfLoaderTest, RamIsZeroedSkipsOnlyTheBssClear) {
  ElfImage img;
  img.load(kMiB, pattern(100, 3), 0x2000);
  ASSERT_TRUE(mem_.fill(GuestAddress(kMiB), 0xcc, 0x2000).ok());
  ElfLoadLimits limits;
  limits.ram_is_zeroed = true;  // the caller promises fresh RAM: the loader trusts it
  Bytes file = img.bytes();
  UniqueFd fd = memfd_with(file);
  auto r = load_elf_kernel(fd.get(), file.size(), mem_, limits);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(guest(kMiB, 100), pattern(100, 3));
  EXPECT_EQ(guest(kMiB + 100, 0x10), Bytes(0x10, 0xcc));
}

TEST_F(ElfLoaderTest, FindsPvhEntryNoteAfterOtherNotes) {
  ElfImage img;
  Bytes notes = make_note("GNU", NT_GNU_BUILD_ID, pattern(20, 5));
  Bytes xen = make_note("Xen", 18, le32(0x1000c0));
  notes.insert(notes.end(), xen.begin(), xen.end());
  img.load(kMiB, pattern(0x200, 1), 0x200).note(notes);
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->pvh_entry.has_value());
  EXPECT_EQ(*r->pvh_entry, 0x1000c0u);
  EXPECT_EQ(r->entry, kMiB);
}

TEST_F(ElfLoaderTest, OtherXenNotesAreNotPvhEntry) {
  ElfImage img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(make_note("Xen", 17, le32(0x1000c0)));
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->pvh_entry.has_value());
}

TEST_F(ElfLoaderTest, RefusesBadPvhDescriptorSize) {
  ElfImage img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(make_note("Xen", 18, pattern(12, 0)));
  expect_refused(img.bytes(), "bad PVH entry note");
}

TEST_F(ElfLoaderTest, RefusesPvhEntryOutsideRam) {
  ElfImage img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(make_note("Xen", 18, le32(0x7ffff000)));
  expect_refused(img.bytes(), "PVH entry point outside guest RAM");
}

// A one-segment image whose PVH entry note has its header changed by `patch`.
Bytes with_patched_pvh_note(const std::function<void(Elf64_Nhdr&)>& patch) {
  Bytes note = make_note("Xen", 18, le32(0x100000));
  Elf64_Nhdr nh;
  std::memcpy(&nh, note.data(), sizeof nh);
  patch(nh);
  std::memcpy(note.data(), &nh, sizeof nh);
  ElfImage img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(note);
  return img.bytes();
}

TEST_F(ElfLoaderTest, RefusesTruncatedNote) {
  // Claims far more than the segment holds.
  expect_refused(with_patched_pvh_note([](Elf64_Nhdr& nh) { nh.n_descsz = 0x1000; }),
                 "truncated ELF note");
}

TEST_F(ElfLoaderTest, RefusesHugeNameSizeWithoutOverflow) {
  expect_refused(with_patched_pvh_note([](Elf64_Nhdr& nh) {
                   nh.n_namesz = 0xfffffffd;
                   nh.n_descsz = 0xfffffffd;
                 }),
                 "truncated ELF note");
}

TEST_F(ElfLoaderTest, RefusesOversizedNoteSegment) {
  ElfImage img;
  img.load(kMiB, pattern(0x20, 1), 0x20).note(Bytes(ElfLoadLimits{}.max_note_bytes + 4, 0));
  expect_refused(img.bytes(), "note segment too large");
}

TEST_F(ElfLoaderTest, RefusesFileShorterThanHeader) {
  Bytes file = two_segments().bytes();
  file.resize(sizeof(Elf64_Ehdr) - 1);
  expect_refused(file, "too small");
}

TEST_F(ElfLoaderTest, RefusesProgramHeadersPastEof) {
  Bytes file = two_segments().bytes();
  file.resize(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + 8);
  expect_refused(file, "program headers beyond end of file");
  file = two_segments().bytes();
  patch_ehdr(file, [](Elf64_Ehdr& h) { h.e_phoff = UINT64_MAX - 16; });  // phoff + size wraps
  expect_refused(file, "program headers beyond end of file");
}

TEST_F(ElfLoaderTest, RefusesSegmentDataPastEof) {
  Bytes file = two_segments().bytes();
  file.resize(file.size() - 1);  // the second segment's last byte is missing
  expect_refused(file, "segment data beyond end of file");
  file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_offset = UINT64_MAX - 8; });
  expect_refused(file, "segment data beyond end of file");
}

TEST_F(ElfLoaderTest, RefusesBadIdentAndHeaderFields) {
  const HeaderCase<Elf64_Ehdr> cases[] = {
      {"not an ELF", [](Elf64_Ehdr& h) { h.e_ident[EI_MAG1] = 'X'; }},
      {"not a 32- or 64-bit ELF", [](Elf64_Ehdr& h) { h.e_ident[EI_CLASS] = ELFCLASSNONE; }},
      {"not little-endian", [](Elf64_Ehdr& h) { h.e_ident[EI_DATA] = ELFDATA2MSB; }},
      {"not an x86-64 ELF", [](Elf64_Ehdr& h) { h.e_machine = EM_386; }},
      {"not an executable", [](Elf64_Ehdr& h) { h.e_type = ET_DYN; }},
      {"bad program header entry size", [](Elf64_Ehdr& h) { h.e_phentsize = 32; }},
      {"no program headers", [](Elf64_Ehdr& h) { h.e_phnum = 0; }},
      {"too many program headers", [](Elf64_Ehdr& h) { h.e_phnum = 65; }},
  };
  expect_header_cases_refused(two_segments().bytes(), cases);
}

TEST_F(ElfLoaderTest, RefusesFileSizeLargerThanMemorySize) {
  Bytes file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_memsz = p.p_filesz - 1; });
  expect_refused(file, "file size exceeds memory size");
}

TEST_F(ElfLoaderTest, RefusesOverlappingSegments) {
  ElfImage img;
  img.load(kMiB, pattern(0x10, 1), 0x2000).load(kMiB + 0x1fff, pattern(0x10, 2), 0x10);
  expect_refused(img.bytes(), "overlapping");
  ElfImage inside;  // second segment wholly inside the first
  inside.load(kMiB, pattern(0x10, 1), 0x2000).load(kMiB + 0x100, pattern(0x10, 2), 0x10);
  expect_refused(inside.bytes(), "overlapping");
}

TEST_F(ElfLoaderTest, AdjacentSegmentsAreFine) {
  ElfImage img;
  img.load(kMiB, pattern(0x10, 1), 0x1000).load(kMiB + 0x1000, pattern(0x10, 2), 0x10);
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(guest(kMiB + 0x1000, 0x10), pattern(0x10, 2));
}

TEST_F(ElfLoaderTest, RefusesSegmentsOutsideRam) {
  Bytes file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_paddr = kRamSize + kMiB; });
  expect_refused(file, "outside guest RAM");
  file = two_segments().bytes();  // straddles the end of RAM by one byte
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_paddr = kRamSize - p.p_memsz + 1; });
  expect_refused(file, "outside guest RAM");
  file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_memsz = 1ull << 62; });
  expect_refused(file, "outside guest RAM");
}

TEST_F(ElfLoaderTest, LoadsSegmentEndingExactlyAtRamEnd) {
  ElfImage img;
  img.load(kRamSize - 0x40, pattern(0x40, 4), 0x40);
  img.eh.e_entry = kRamSize - 0x40;
  auto r = load(img.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->high, kRamSize);
}

TEST_F(ElfLoaderTest, RefusesAddressRangeWrapping) {
  Bytes file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) {
    p.p_paddr = UINT64_MAX - 0x10;
    p.p_memsz = 0x40;
  });
  expect_refused(file, "wraps");
}

TEST_F(ElfLoaderTest, RefusesSegmentInBootArea) {
  Bytes file = two_segments().bytes();
  patch_phdr(file, 1, [](Elf64_Phdr& p) { p.p_paddr = 0x7000; });  // over the zero page
  expect_refused(file, "below the 1 MiB");
}

TEST_F(ElfLoaderTest, RefusesEntryOutsideRamWithoutPvhNote) {
  ElfImage img = two_segments();
  img.eh.e_entry = kRamSize + 0x1000;
  expect_refused(img.bytes(), "entry point outside guest RAM");
}

TEST_F(ElfLoaderTest, RefusesKernelWithoutLoadableSegments) {
  ElfImage img;
  img.note(make_note("GNU", NT_GNU_BUILD_ID, pattern(20, 5)));
  expect_refused(img.bytes(), "no loadable segments");
}

TEST_F(ElfLoaderTest, FileVariantRefusesDirectoryAndMissingFile) {
  auto dir = load_elf_kernel_file("/", mem_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
  auto missing = load_elf_kernel_file("/nonexistent/carapace/vmlinux", mem_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_TRUE(ram_all_zero());
}

TEST_F(ElfLoaderTest, FileVariantLoadsRegularFile) {
  char path[] = "/tmp/carapace_elf_XXXXXX";
  UniqueFd fd(::mkstemp(path));
  ASSERT_TRUE(fd.valid());
  Bytes file = two_segments().bytes();
  ASSERT_EQ(::write(fd.get(), file.data(), file.size()), static_cast<ssize_t>(file.size()));
  auto r = load_elf_kernel_file(path, mem_);
  ::unlink(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(guest(2 * kMiB, 0x40), pattern(0x40, 2));
}

}  // namespace
}  // namespace carapace
