// rng: virtio-rng (virtio 1.2 §5.4) through the generic driver. 4 KiB of entropy in four 1 KiB
// requests published with one notify, then one request split over a 4-descriptor chain; the bytes
// must be non-trivial: not all zero, and no 8-byte word seen twice (with random data the chance
// of a repeat among 640 words is ~2^-45). With the word testguest.keep-devices the device is left
// running when the guest resets the VM.
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/virtio/dma.h"
#include "guest/testguest/virtio/init.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint32_t kRequests = 4;
constexpr uint32_t kRequestBytes = 1024;
constexpr uint32_t kChainPieces = 4;
constexpr uint32_t kPieceBytes = 256;
constexpr uint64_t kTimeout = kDeviceTimeout;

bool words_repeat(const uint64_t* words, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = i + 1; j < n; ++j) {
      if (words[i] == words[j]) return true;
    }
  }
  return false;
}

}  // namespace

ScenarioResult run_rng(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeRng, info)) return e;
  Device dev(*info);
  Virtqueue vq;
  const InitResult init = init_device(dev, 0, &vq, 1, 64);
  if (init.error) return init.error;
  out << "testguest: rng features " << hex(init.offered) << " queue size " << dec(vq.size())
      << "\n";

  constexpr uint32_t kTotal = kRequests * kRequestBytes + kChainPieces * kPieceBytes;
  auto* bytes = static_cast<uint8_t*>(dma_alloc(kTotal, 64));
  if (!bytes) return "out of DMA memory";

  // Four requests, one notify.
  const uint64_t t0 = rdtsc();
  for (uint32_t i = 0; i < kRequests; ++i) {
    const Buf b = buf_in(bytes + i * kRequestBytes, kRequestBytes);
    if (vq.add(&b, 1) < 0) return "no free descriptors";
  }
  vq.kick();
  uint32_t filled = 0;
  for (uint32_t i = 0; i < kRequests; ++i) {
    uint32_t head, len;
    if (!vq.wait_used(head, len, kTimeout)) return "rng requests did not complete";
    if (len != kRequestBytes) {
      out << "testguest: rng request " << dec(head) << " returned " << dec(len) << " bytes\n";
      return "short rng request";
    }
    filled += len;
  }
  // One request over a chain of four writable descriptors.
  Buf chain[kChainPieces];
  uint8_t* tail = bytes + kRequests * kRequestBytes;
  for (uint32_t i = 0; i < kChainPieces; ++i)
    chain[i] = buf_in(tail + i * kPieceBytes, kPieceBytes);
  const int64_t chain_len = vq.submit_and_wait(chain, kChainPieces, kTimeout);
  const uint64_t cycles = rdtsc() - t0;
  if (chain_len != kChainPieces * kPieceBytes) {
    out << "testguest: chained rng request returned " << dec(chain_len < 0 ? 0 : chain_len)
        << " bytes\n";
    return chain_len < 0 ? "chained rng request did not complete" : "short chained rng request";
  }
  filled += static_cast<uint32_t>(chain_len);

  const auto* words = reinterpret_cast<const uint64_t*>(bytes);
  uint64_t any = 0;
  for (uint32_t i = 0; i < kTotal / 8; ++i)
    any |= words[i];
  if (any == 0) return "entropy is all zero";
  if (words_repeat(words, kTotal / 8)) return "entropy repeats an 8-byte word";
  out << "testguest: rng " << dec(filled) << " bytes in " << dec(kRequests + 1) << " requests, "
      << dec(vq.notifies()) << " notifies, " << dec(cycles) << " TSC cycles, first word "
      << hex(words[0]) << "\n";
  // Linux does not reset its devices before a reboot: the VMM must tear an active device down.
  if (!cmdline_has_word(boot.cmdline, "testguest.keep-devices")) dev.reset();
  return nullptr;
}

}  // namespace testguest
