#include "vmm/kvm/kvm.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cstring>

namespace carapace {

namespace {

struct RequiredCap {
  long cap;
  const char* name;
};

// Everything the VMM core and the devices built on it use.
constexpr RequiredCap kRequiredCaps[] = {
    {KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY"},
    {KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP"},
    {KVM_CAP_PIT2, "KVM_CAP_PIT2"},
    {KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR"},
    {KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID"},
    {KVM_CAP_MP_STATE, "KVM_CAP_MP_STATE"},
    {KVM_CAP_IRQFD, "KVM_CAP_IRQFD"},
    {KVM_CAP_IOEVENTFD, "KVM_CAP_IOEVENTFD"},
    {KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT"},
};

}  // namespace

kvm_cpuid_entry2* CpuidTable::find(uint32_t function, uint32_t index) {
  for (auto& e : entries_) {
    bool indexed = e.flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
    if (e.function == function && (!indexed || e.index == index)) return &e;
  }
  return nullptr;
}

const kvm_cpuid_entry2* CpuidTable::find(uint32_t function, uint32_t index) const {
  return const_cast<CpuidTable*>(this)->find(function, index);
}

std::vector<uint8_t> CpuidTable::to_kvm() const {
  std::vector<uint8_t> blob(sizeof(kvm_cpuid2) + entries_.size() * sizeof(kvm_cpuid_entry2));
  auto* c = reinterpret_cast<kvm_cpuid2*>(blob.data());
  c->nent = static_cast<uint32_t>(entries_.size());
  if (!entries_.empty())
    std::memcpy(blob.data() + sizeof(kvm_cpuid2), entries_.data(),
                entries_.size() * sizeof(kvm_cpuid_entry2));
  return blob;
}

Result<Kvm> Kvm::open(const char* path) {
  int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return sys_error(std::string("cannot open ") + path + " (is KVM available?)");
  Kvm kvm{UniqueFd(fd)};
  int version = ::ioctl(fd, KVM_GET_API_VERSION, 0);
  if (version != KVM_API_VERSION)
    return make_error("unsupported KVM API version " + std::to_string(version) + " (need " +
                      std::to_string(KVM_API_VERSION) + ")");
  for (const auto& c : kRequiredCaps) {
    if (kvm.check_extension(c.cap) <= 0)
      return make_error(std::string("KVM lacks required capability ") + c.name);
  }
  kvm.vcpu_mmap_size_ = ::ioctl(fd, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (kvm.vcpu_mmap_size_ <= 0) return sys_error("KVM_GET_VCPU_MMAP_SIZE");
  int max = kvm.check_extension(KVM_CAP_MAX_VCPUS);
  if (max <= 0) max = kvm.check_extension(KVM_CAP_NR_VCPUS);
  kvm.max_vcpus_ = max > 0 ? max : 1;
  return kvm;
}

int Kvm::check_extension(long cap) const {
  return ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, cap);
}

Result<CpuidTable> Kvm::supported_cpuid() const {
  // KVM reports E2BIG while the buffer is too small; grow until it fits.
  for (uint32_t n = 64; n <= 4096; n *= 2) {
    std::vector<uint8_t> blob(sizeof(kvm_cpuid2) + n * sizeof(kvm_cpuid_entry2));
    auto* c = reinterpret_cast<kvm_cpuid2*>(blob.data());
    c->nent = n;
    if (::ioctl(fd_.get(), KVM_GET_SUPPORTED_CPUID, c) == 0) {
      std::vector<kvm_cpuid_entry2> entries(c->nent);
      std::memcpy(entries.data(), blob.data() + sizeof(kvm_cpuid2),
                  c->nent * sizeof(kvm_cpuid_entry2));
      return CpuidTable(std::move(entries));
    }
    if (errno != E2BIG) return sys_error("KVM_GET_SUPPORTED_CPUID");
  }
  return make_error("KVM_GET_SUPPORTED_CPUID: too many entries");
}

Result<std::vector<uint32_t>> Kvm::msr_index_list() const {
  kvm_msr_list probe{};
  probe.nmsrs = 0;
  if (::ioctl(fd_.get(), KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
    return sys_error("KVM_GET_MSR_INDEX_LIST");
  std::vector<uint8_t> blob(sizeof(kvm_msr_list) + probe.nmsrs * sizeof(uint32_t));
  auto* list = reinterpret_cast<kvm_msr_list*>(blob.data());
  list->nmsrs = probe.nmsrs;
  if (::ioctl(fd_.get(), KVM_GET_MSR_INDEX_LIST, list) < 0)
    return sys_error("KVM_GET_MSR_INDEX_LIST");
  return std::vector<uint32_t>(list->indices, list->indices + list->nmsrs);
}

}  // namespace carapace
