#include "guest/testguest/virtio/virtio_mmio.h"

#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/text.h"

namespace testguest::virtio {
namespace {

constexpr char kDeviceWord[] = "virtio_mmio.device=";

// Parses an unsigned number (decimal, or hex with 0x) at `p`; advances `p`.
bool parse_number(const char*& p, uint64_t& value) {
  uint64_t base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
  }
  const char* start = p;
  value = 0;
  for (;; ++p) {
    uint64_t digit;
    if (*p >= '0' && *p <= '9') {
      digit = *p - '0';
    } else if (base == 16 && *p >= 'a' && *p <= 'f') {
      digit = *p - 'a' + 10;
    } else if (base == 16 && *p >= 'A' && *p <= 'F') {
      digit = *p - 'A' + 10;
    } else {
      break;
    }
    if (digit >= base) break;
    value = value * base + digit;
  }
  return p != start;
}

// `<size>[K|M]@<base>:<irq>` (Linux's drivers/virtio/virtio_mmio.c syntax).
bool parse_device_word(const char* p, DeviceInfo& info) {
  uint64_t size, base, irq;
  if (!parse_number(p, size)) return false;
  if (*p == 'K' || *p == 'k') {
    size <<= 10;
    ++p;
  } else if (*p == 'M' || *p == 'm') {
    size <<= 20;
    ++p;
  }
  if (*p++ != '@' || !parse_number(p, base) || *p++ != ':' || !parse_number(p, irq)) return false;
  if (*p != '\0' && !is_space(*p)) return false;
  info = DeviceInfo{base, size, static_cast<uint32_t>(irq), 0, 0};
  return true;
}

// The device types the drivers know: a name for messages, and what a scenario that needs one and
// finds none says (the VMM flag that adds it).
struct KnownType {
  uint32_t device_id;
  const char* name;
  const char* missing;
};
constexpr KnownType kKnownTypes[] = {
    {kTypeNet, "net", "no virtio-net device (run with --net)"},
    {kTypeBlock, "blk", "no virtio-blk device (run with --drive)"},
    {kTypeRng, "rng", "no virtio-rng device (run with --rng)"},
    {kTypeVsock, "vsock", "no virtio-vsock device (run with --vsock)"},
    {kTypeFs, "fs", "no virtio-fs device (run with --fs)"},
};

const KnownType* known_type(uint32_t device_id) {
  for (const KnownType& t : kKnownTypes) {
    if (t.device_id == device_id) return &t;
  }
  return nullptr;
}

}  // namespace

const char* type_name(uint32_t device_id) {
  const KnownType* t = known_type(device_id);
  return t ? t->name : "other";
}

const char* missing_device_error(uint32_t device_id) {
  const KnownType* t = known_type(device_id);
  return t ? t->missing : "no virtio device of the wanted type";
}

const DeviceInfo* DeviceList::find(uint32_t type, int nth) const {
  for (int i = 0; i < count; ++i) {
    if (devices[i].device_id == type && nth-- == 0) return &devices[i];
  }
  return nullptr;
}

const char* discover(const char* cmdline, DeviceList& list, bool verbose) {
  list.count = 0;
  if (!cmdline) return nullptr;
  for (size_t i = 0; i < kCmdlineMax && cmdline[i];) {
    const bool word_start = i == 0 || is_space(cmdline[i - 1]);
    if (!word_start || !starts_with(cmdline + i, kDeviceWord)) {
      ++i;
      continue;
    }
    i += sizeof(kDeviceWord) - 1;
    if (list.count == kMaxDevices) return "more virtio_mmio.device= words than the guest handles";
    DeviceInfo& info = list.devices[list.count];
    if (!parse_device_word(cmdline + i, info)) return "unparsable virtio_mmio.device= word";
    if (info.size < kWindowSize) return "virtio_mmio.device= window smaller than 4 KiB";
    ++list.count;
    Device dev(info);
    const uint32_t magic = dev.read(kMagicValue);
    info.version = dev.read(kVersion);
    if (magic == kMagic && info.version == 2) info.device_id = dev.read(kDeviceId);
    if (verbose) {
      out << "testguest: virtio " << hex(info.base) << " irq " << dec(info.irq) << ": ";
      if (magic != kMagic) {
        out << "bad magic " << hex(magic) << "\n";
      } else {
        out << type_name(info.device_id) << " (id " << dec(info.device_id) << ", version "
            << dec(info.version) << ")\n";
      }
    }
  }
  return nullptr;
}

uint64_t Device::begin_init() {
  reset();  // also zeroes the feature and queue selectors (virtio 1.2 §4.2.2)
  write(kStatus, status_ = kStatusAcknowledge);
  write(kStatus, status_ |= kStatusDriver);
  // DeviceFeaturesSel is 0 after reset: low word first, then select the high word.
  uint64_t features = read(kDeviceFeatures);
  write(kDeviceFeaturesSel, 1);
  features |= uint64_t{read(kDeviceFeatures)} << 32;
  return features;
}

uint64_t Device::negotiate(uint64_t offered, uint64_t wanted) {
  const uint64_t accepted = (wanted | kFVersion1) & offered;
  if (!(accepted & kFVersion1)) return 0;  // a version 2 device must offer VERSION_1
  // DriverFeaturesSel is 0 after reset.
  write(kDriverFeatures, static_cast<uint32_t>(accepted));
  write(kDriverFeaturesSel, 1);
  write(kDriverFeatures, static_cast<uint32_t>(accepted >> 32));
  write(kStatus, status_ |= kStatusFeaturesOk);
  // virtio 1.2 §3.1.1 step 6: the device may refuse the subset.
  if (!(read(kStatus) & kStatusFeaturesOk)) return 0;
  return accepted;
}

}  // namespace testguest::virtio
