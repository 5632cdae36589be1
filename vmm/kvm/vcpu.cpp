#include "vmm/kvm/vcpu.h"

#include <sys/ioctl.h>

#include <cstdio>
#include <cstring>

namespace carapace {

namespace {

template <typename T>
Result<T> get_state(int fd, unsigned long req, const char* name) {
  T out{};
  if (::ioctl(fd, req, &out) < 0) return sys_error(name);
  return out;
}

template <typename T>
Status set_state(int fd, unsigned long req, const T& in, const char* name) {
  if (::ioctl(fd, req, &in) < 0) return sys_error(name);
  return {};
}

}  // namespace

Result<Vcpu> Vcpu::create(const Kvm& kvm, const Vm& vm, uint32_t index) {
  int fd = ::ioctl(vm.fd(), KVM_CREATE_VCPU, static_cast<unsigned long>(index));
  if (fd < 0) return sys_error("KVM_CREATE_VCPU " + std::to_string(index));
  UniqueFd owned(fd);
  auto run =
      TRY(MmapRegion::from_fd(fd, kvm.vcpu_mmap_size(), PROT_READ | PROT_WRITE, MAP_SHARED, 0));
  return Vcpu(std::move(owned), std::move(run), index);
}

Status Vcpu::run() {
  if (::ioctl(fd_.get(), KVM_RUN, 0) < 0) {
    if (errno == EINTR || errno == EAGAIN) {
      run_state()->exit_reason = KVM_EXIT_INTR;
      return {};
    }
    return sys_error("KVM_RUN on vCPU " + std::to_string(index_));
  }
  return {};
}

Result<kvm_regs> Vcpu::get_regs() const {
  return get_state<kvm_regs>(fd_.get(), KVM_GET_REGS, "KVM_GET_REGS");
}
Status Vcpu::set_regs(const kvm_regs& r) {
  return set_state(fd_.get(), KVM_SET_REGS, r, "KVM_SET_REGS");
}
Result<kvm_sregs> Vcpu::get_sregs() const {
  return get_state<kvm_sregs>(fd_.get(), KVM_GET_SREGS, "KVM_GET_SREGS");
}
Status Vcpu::set_sregs(const kvm_sregs& s) {
  return set_state(fd_.get(), KVM_SET_SREGS, s, "KVM_SET_SREGS");
}
Result<kvm_fpu> Vcpu::get_fpu() const {
  return get_state<kvm_fpu>(fd_.get(), KVM_GET_FPU, "KVM_GET_FPU");
}
Status Vcpu::set_fpu(const kvm_fpu& f) {
  return set_state(fd_.get(), KVM_SET_FPU, f, "KVM_SET_FPU");
}
Result<kvm_lapic_state> Vcpu::get_lapic() const {
  return get_state<kvm_lapic_state>(fd_.get(), KVM_GET_LAPIC, "KVM_GET_LAPIC");
}
Status Vcpu::set_lapic(const kvm_lapic_state& l) {
  return set_state(fd_.get(), KVM_SET_LAPIC, l, "KVM_SET_LAPIC");
}
Result<kvm_mp_state> Vcpu::get_mp_state() const {
  return get_state<kvm_mp_state>(fd_.get(), KVM_GET_MP_STATE, "KVM_GET_MP_STATE");
}
Status Vcpu::set_mp_state(const kvm_mp_state& m) {
  return set_state(fd_.get(), KVM_SET_MP_STATE, m, "KVM_SET_MP_STATE");
}

Result<kvm_xsave> Vcpu::get_xsave() const {
  return get_state<kvm_xsave>(fd_.get(), KVM_GET_XSAVE, "KVM_GET_XSAVE");
}
Status Vcpu::set_xsave(const kvm_xsave& x) {
  return set_state(fd_.get(), KVM_SET_XSAVE, x, "KVM_SET_XSAVE");
}
Result<kvm_xcrs> Vcpu::get_xcrs() const {
  return get_state<kvm_xcrs>(fd_.get(), KVM_GET_XCRS, "KVM_GET_XCRS");
}
Status Vcpu::set_xcrs(const kvm_xcrs& x) {
  return set_state(fd_.get(), KVM_SET_XCRS, x, "KVM_SET_XCRS");
}
Result<kvm_vcpu_events> Vcpu::get_vcpu_events() const {
  return get_state<kvm_vcpu_events>(fd_.get(), KVM_GET_VCPU_EVENTS, "KVM_GET_VCPU_EVENTS");
}
Status Vcpu::set_vcpu_events(const kvm_vcpu_events& e) {
  return set_state(fd_.get(), KVM_SET_VCPU_EVENTS, e, "KVM_SET_VCPU_EVENTS");
}
Result<kvm_debugregs> Vcpu::get_debugregs() const {
  return get_state<kvm_debugregs>(fd_.get(), KVM_GET_DEBUGREGS, "KVM_GET_DEBUGREGS");
}
Status Vcpu::set_debugregs(const kvm_debugregs& d) {
  return set_state(fd_.get(), KVM_SET_DEBUGREGS, d, "KVM_SET_DEBUGREGS");
}
Status Vcpu::notify_paused() {
  // EINVAL: the guest has not enabled kvmclock; nothing to tell.
  if (::ioctl(fd_.get(), KVM_KVMCLOCK_CTRL, 0) < 0 && errno != EINVAL)
    return sys_error("KVM_KVMCLOCK_CTRL");
  return {};
}

Status Vcpu::set_cpuid(const CpuidTable& cpuid) {
  auto blob = cpuid.to_kvm();
  if (::ioctl(fd_.get(), KVM_SET_CPUID2, blob.data()) < 0) return sys_error("KVM_SET_CPUID2");
  return {};
}

Status Vcpu::set_msrs(std::span<const MsrValue> msrs) {
  std::vector<uint8_t> blob(sizeof(kvm_msrs) + msrs.size() * sizeof(kvm_msr_entry));
  auto* m = reinterpret_cast<kvm_msrs*>(blob.data());
  m->nmsrs = static_cast<uint32_t>(msrs.size());
  for (size_t i = 0; i < msrs.size(); ++i) {
    m->entries[i].index = msrs[i].index;
    m->entries[i].data = msrs[i].value;
  }
  int n = ::ioctl(fd_.get(), KVM_SET_MSRS, m);
  if (n < 0) return sys_error("KVM_SET_MSRS");
  // KVM stops at the first MSR it refuses and returns how many it set.
  if (static_cast<size_t>(n) != msrs.size()) {
    char buf[64];
    snprintf(buf, sizeof buf, "KVM_SET_MSRS refused MSR 0x%x", msrs[n].index);
    return make_error(buf);
  }
  return {};
}

Result<std::vector<MsrValue>> Vcpu::get_msrs(std::span<const uint32_t> indices) const {
  std::vector<uint8_t> blob(sizeof(kvm_msrs) + indices.size() * sizeof(kvm_msr_entry));
  auto* m = reinterpret_cast<kvm_msrs*>(blob.data());
  m->nmsrs = static_cast<uint32_t>(indices.size());
  for (size_t i = 0; i < indices.size(); ++i)
    m->entries[i].index = indices[i];
  int n = ::ioctl(fd_.get(), KVM_GET_MSRS, m);
  if (n < 0) return sys_error("KVM_GET_MSRS");
  std::vector<MsrValue> out;
  for (int i = 0; i < n; ++i)
    out.push_back({m->entries[i].index, m->entries[i].data});
  return out;
}

std::string Vcpu::describe_registers() const {
  auto regs = get_regs();
  auto sregs = get_sregs();
  if (!regs.ok() || !sregs.ok()) return "  (registers unavailable)\n";
  const kvm_regs& r = *regs;
  const kvm_sregs& s = *sregs;
  char buf[1024];
  snprintf(buf, sizeof buf,
           "  rip=%016llx rsp=%016llx rflags=%016llx\n"
           "  rax=%016llx rbx=%016llx rcx=%016llx rdx=%016llx\n"
           "  rsi=%016llx rdi=%016llx rbp=%016llx\n"
           "  r8=%016llx r9=%016llx r10=%016llx r11=%016llx\n"
           "  r12=%016llx r13=%016llx r14=%016llx r15=%016llx\n"
           "  cs=%04x(dpl%u,l%u) ss=%04x cr0=%016llx cr2=%016llx cr3=%016llx cr4=%016llx "
           "efer=%llx\n"
           "  gdt=%016llx/%x idt=%016llx/%x\n",
           r.rip, r.rsp, r.rflags, r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.r8, r.r9,
           r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, s.cs.selector, s.cs.dpl, s.cs.l, s.ss.selector,
           s.cr0, s.cr2, s.cr3, s.cr4, s.efer, s.gdt.base, s.gdt.limit, s.idt.base, s.idt.limit);
  return buf;
}

}  // namespace carapace
