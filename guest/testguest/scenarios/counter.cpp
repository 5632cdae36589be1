// counter: a long, deterministic CPL3 computation for snapshot tests. It fills a memory region
// with a seed pattern, then runs `rounds` passes of a hash chain over it (each word mixed with the
// running value and written back), printing progress after every pass, and finally the chain's
// value. Snapshotting it mid-run and restoring clones must give every clone the same final value
// as an uninterrupted run: any lost or mixed-up page, register or FPU state changes the result.
//
//   testguest.run=counter [testguest.mib=N (default 64)] [testguest.rounds=R (default 40)]
//                         [testguest.isolate]
//
// testguest.isolate (needs --vsock): after the final value, the guest reads its vsock CID from
// the device's config space (a per-clone identity the host assigns at restore), fills the region
// with a CID-derived pattern and checks it over several passes. Clones of one snapshot run this
// at the same time over what was one shared image: any write of one clone that reached another
// (or the image) breaks the pattern.
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/image.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/virtio/virtio_mmio.h"

namespace testguest {
namespace {

constexpr uint64_t kRegionBase = 64ull << 20;  // above the image, inside any guest >= 128 MiB

uint64_t param(const BootInfo& boot, const char* key, uint64_t fallback, uint64_t max) {
  char text[24];
  if (boot.cmdline == nullptr || !cmdline_value(boot.cmdline, key, text, sizeof text))
    return fallback;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return fallback;
    v = v * 10 + uint64_t(*p - '0');
    if (v > max) return max;
  }
  return v == 0 ? fallback : v;
}

// True when [base, base + size) lies inside one RAM range of the memory map.
bool region_is_ram(const BootInfo& boot, uint64_t base, uint64_t size) {
  for (uint32_t i = 0; i < boot.memory.count; ++i) {
    const MemRange& r = boot.memory.ranges[i];
    if (r.type == 1 && base >= r.addr && base + size <= r.addr + r.size) return true;
  }
  return false;
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

constexpr uint64_t kIsolatePasses = 16;

// See the header comment; nullptr on success.
ScenarioResult check_isolation(const BootInfo& boot, volatile uint64_t* words, uint64_t count) {
  virtio::DeviceList list;
  if (const char* err = virtio::discover(boot.cmdline, list, false)) return err;
  const virtio::DeviceInfo* info = list.find(virtio::kTypeVsock);
  if (!info) return "testguest.isolate needs a vsock device (--vsock)";
  const uint64_t cid = virtio::Device(*info).config64(0);
  const uint64_t salt = mix(cid << 32 | 0x15011a7e);
  for (uint64_t i = 0; i < count; ++i)
    words[i] = mix(salt ^ i);
  for (uint64_t pass = 0; pass < kIsolatePasses; ++pass) {
    for (uint64_t i = 0; i < count; ++i) {
      if (words[i] != mix(salt ^ i)) {
        out << "testguest: counter cid " << dec(cid) << " word " << dec(i) << " changed in pass "
            << dec(pass) << "\n";
        return "another VM's write reached this one";
      }
    }
  }
  out << "testguest: counter cid " << dec(cid) << " isolated " << dec(kIsolatePasses)
      << " passes\n";
  return nullptr;
}

}  // namespace

ScenarioResult run_counter(const BootInfo& boot) {
  const uint64_t mib = param(boot, "testguest.mib=", 64, 1024);
  const uint64_t rounds = param(boot, "testguest.rounds=", 40, 100000);
  if (!region_is_ram(boot, kRegionBase, mib << 20))
    return "region does not fit in RAM (use a larger --mem or a smaller testguest.mib)";
  auto* words = reinterpret_cast<volatile uint64_t*>(kRegionBase);
  const uint64_t count = (mib << 20) / sizeof(uint64_t);
  for (uint64_t i = 0; i < count; ++i)
    words[i] = mix(i + 1);
  uint64_t value = 0x243f6a8885a308d3ull;
  for (uint64_t r = 0; r < rounds; ++r) {
    for (uint64_t i = 0; i < count; ++i) {
      value = mix(value ^ words[i]);
      words[i] = value;
    }
    out << "testguest: counter round " << dec(r + 1) << "/" << dec(rounds) << " value "
        << hex(value) << "\n";
  }
  out << "testguest: counter final " << hex(value) << "\n";
  if (boot.cmdline != nullptr && cmdline_has_word(boot.cmdline, "testguest.isolate"))
    return check_isolation(boot, words, count);
  return nullptr;
}

}  // namespace testguest
