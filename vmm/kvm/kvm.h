// Kvm: the /dev/kvm system handle. Checks the API version and the capabilities carapace relies on
// once, at start, so a missing feature is one clear error instead of a failure deep in boot.
#pragma once

#include "vmm/kvm/kvm_uapi.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

// kvm_cpuid2 with its entries in one owned buffer.
class CpuidTable {
 public:
  CpuidTable() = default;
  explicit CpuidTable(std::vector<kvm_cpuid_entry2> entries) : entries_(std::move(entries)) {}

  std::vector<kvm_cpuid_entry2>& entries() { return entries_; }
  const std::vector<kvm_cpuid_entry2>& entries() const { return entries_; }
  // The entry for (function, index), or nullptr.
  kvm_cpuid_entry2* find(uint32_t function, uint32_t index = 0);
  const kvm_cpuid_entry2* find(uint32_t function, uint32_t index = 0) const;
  // A kvm_cpuid2 blob for KVM_SET_CPUID2.
  std::vector<uint8_t> to_kvm() const;

 private:
  std::vector<kvm_cpuid_entry2> entries_;
};

class Kvm {
 public:
  static Result<Kvm> open(const char* path = "/dev/kvm");

  int fd() const { return fd_.get(); }
  int vcpu_mmap_size() const { return vcpu_mmap_size_; }
  int max_vcpus() const { return max_vcpus_; }
  int check_extension(long cap) const;

  Result<CpuidTable> supported_cpuid() const;
  // MSR indices KVM can save and restore (KVM_GET_MSR_INDEX_LIST).
  Result<std::vector<uint32_t>> msr_index_list() const;

 private:
  explicit Kvm(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  int vcpu_mmap_size_ = 0;
  int max_vcpus_ = 1;
};

}  // namespace carapace
