#include "vmm/machine/machine.h"

#include "vmm/devices/pvpanic/pvpanic.h"
#include "vmm/security/seccomp.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/base/log.h"
#include "common/base/phase_timer.h"
#include "vmm/boot/cmdline.h"
#include "vmm/boot/gdt.h"
#include "vmm/boot/initrd.h"
#include "vmm/boot/mptable.h"
#include "vmm/boot/page_tables.h"
#include "vmm/boot/pvh.h"
#include "vmm/boot/zero_page.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/machine/vcpu_loop.h"
#include "vmm/memory/layout.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {

class Machine::VmIrqLine : public IrqLine {
 public:
  VmIrqLine(Vm& vm, uint32_t irq) : vm_(vm), irq_(irq) {}
  void set_level(bool high) override {
    auto s = vm_.set_irq_line(irq_, high);
    if (!s.ok()) LOG_WARN("irq %u: %s", irq_, s.error().describe().c_str());
  }

 private:
  Vm& vm_;
  uint32_t irq_;
};

namespace {

Status check_host_limits(const MachineConfig& config, const Kvm& kvm) {
  if (config.vcpus == 0) return make_error("--vcpus must be at least 1");
  uint32_t max = std::min<uint32_t>(kvm.max_vcpus(), kMpTableMaxCpus);
  if (config.vcpus > max)
    return make_error("--vcpus " + std::to_string(config.vcpus) + " exceeds the host limit of " +
                      std::to_string(max));
  long pages = sysconf(_SC_PHYS_PAGES);
  uint64_t host_ram = pages > 0 ? uint64_t(pages) * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
  if (host_ram && config.mem_bytes > host_ram)
    return make_error("--mem " + std::to_string(config.mem_bytes >> 20) +
                      " MiB exceeds host RAM (" + std::to_string(host_ram >> 20) + " MiB)");
  return {};
}

}  // namespace

// Evaluates a Result whose failure is the user's input, not the host.
#define TRY_INPUT(expr)                                               \
  ({                                                                  \
    auto&& try_in_ = (expr);                                          \
    if (!try_in_.ok()) return as_invalid_input(try_in_.take_error()); \
    std::move(try_in_).value();                                       \
  })
#define TRY_INPUT_STATUS(expr)                                        \
  do {                                                                \
    auto&& try_in_ = (expr);                                          \
    if (!try_in_.ok()) return as_invalid_input(try_in_.take_error()); \
  } while (0)

Result<std::unique_ptr<Machine>> Machine::assemble(Kvm kvm, GuestMemory mem,
                                                   const MachineConfig& config, PhaseTimer& timer) {
  auto vm = TRY(Vm::create(kvm));
  timer.mark("create VM");
  // Memory slots before the irqchip: much cheaper on some hosts (HOST-NOTES).
  TRY_STATUS(vm.register_memory(mem));
  TRY_STATUS(vm.set_tss_and_identity_map());
  timer.mark("memory slots");
  TRY_STATUS(vm.create_irqchip());
  timer.mark("irqchip");
  TRY_STATUS(vm.create_pit());
  timer.mark("PIT");
  std::unique_ptr<Machine> m(new Machine(std::move(kvm), std::move(vm), std::move(mem)));
  m->config_ = config;
  // Devices before the kernel: they decide the `virtio_mmio.device=` words of the command line.
  TRY_STATUS(m->create_devices(config));
  timer.mark("devices");
  return m;
}

Result<std::unique_ptr<Machine>> Machine::build(const MachineConfig& config) {
  PhaseTimer timer("build");
  auto kvm = TRY(Kvm::open());
  TRY_INPUT_STATUS(check_host_limits(config, kvm));
  timer.mark("open /dev/kvm");
  auto regions = TRY_INPUT(ram_regions(config.mem_bytes));
  auto mem = TRY(GuestMemory::create_anonymous(regions, config.hugepages));
  auto m = TRY(assemble(std::move(kvm), std::move(mem), config, timer));
  TRY_INPUT_STATUS(m->load_guest(config));
  timer.mark("load guest");
  TRY_STATUS(m->create_vcpus(config));
  timer.mark("vCPUs");
  return m;
}

Result<std::unique_ptr<Machine>> Machine::restore(const MachineConfig& config,
                                                  const MachineState& state, GuestMemory mem) {
  PhaseTimer timer("restore");
  if (state.vcpus.empty()) return make_error("snapshot has no vCPUs");
  MachineConfig effective = config;
  effective.vcpus = static_cast<uint32_t>(state.vcpus.size());
  effective.mem_bytes = mem.total_size();
  effective.cpu_template = state.cpu_template;
  auto kvm = TRY(Kvm::open());
  TRY_INPUT_STATUS(check_host_limits(effective, kvm));
  auto m = TRY(assemble(std::move(kvm), std::move(mem), effective, timer));
  // The VM-wide chips before the vCPUs: a vCPU's LAPIC state refers to the IOAPIC's routing.
  TRY_STATUS(apply_vm_state(m->vm_, state.vm));
  m->serial_->restore(state.serial);
  m->vcpus_.reserve(state.vcpus.size());
  for (uint32_t i = 0; i < state.vcpus.size(); ++i) {
    auto vcpu = TRY(Vcpu::create(m->kvm_, m->vm_, i));
    TRY_STATUS(apply_vcpu_state(vcpu, state.vcpus[i]));
    m->cpuids_.push_back(state.vcpus[i].cpuid);
    m->vcpus_.push_back(std::move(vcpu));
  }
  timer.mark("vCPU state");
  // Devices last: a restored device may raise its interrupt, which must land in the restored
  // IOAPIC, and the devices come from `config` (clones get their own backends and identities).
  if (m->virtio_)
    TRY_STATUS(m->virtio_->restore_state(state.virtio));
  else if (!state.virtio.empty())
    return as_invalid_input(make_error("the snapshot has " + std::to_string(state.virtio.size()) +
                                       " virtio devices, the restoring VM none"));
  timer.mark("virtio devices");
  return m;
}

Result<MachineState> Machine::capture_state() const {
  if (!paused()) return make_error("the VM must be paused to capture its state");
  MachineState s;
  for (const auto& r : mem_.regions())
    s.ram.push_back({r.start, r.size});
  s.cpu_template = config_.cpu_template;
  s.vm = TRY(capture_vm_state(vm_));
  if (msr_indices_.empty() && !vcpus_.empty()) msr_indices_ = TRY(saveable_msrs(kvm_, vcpus_[0]));
  for (size_t i = 0; i < vcpus_.size(); ++i)
    s.vcpus.push_back(TRY(capture_vcpu_state(vcpus_[i], cpuids_[i], msr_indices_)));
  s.serial = serial_->save();
  if (virtio_) s.virtio = TRY(virtio_->save_state());
  return s;
}

Machine::~Machine() {
  // A VM dropped while running (an error path, a test that bailed out) is stopped first: its vCPU
  // threads use every member below.
  if (!threads_.empty()) {
    stop(VmOutcome::kHostError, "VM destroyed while running");
    (void)wait();
  }
  stop_loops();
  if (console_) console_->close();
}

Status Machine::load_guest(const MachineConfig& config) {
  ElfLoadLimits limits;
  limits.ram_is_zeroed = true;  // anonymous RAM that nothing has written yet
  kernel_ = TRY(load_elf_kernel_file(config.kernel_path.c_str(), mem_, limits));
  if (config.boot == BootProtocol::kLinux64 && !kernel_.elf64)
    return make_error(
        "kernel: a 32-bit ELF cannot use the Linux 64-bit entry (--boot elf); use --boot pvh");
  if (config.boot == BootProtocol::kPvh && !kernel_.pvh_entry)
    return make_error("kernel has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY); use --boot elf");
  if (config.boot == BootProtocol::kLinux64 && !mem_.contains(GuestAddress(kernel_.entry), 1))
    return make_error("kernel: ELF entry point outside guest RAM; try --boot pvh");

  InitrdPlacement initrd;
  if (!config.initrd_path.empty())
    initrd = TRY(load_initrd(config.initrd_path.c_str(), mem_, kernel_.high));

  Cmdline cmdline(layout::kCmdlineMax);
  TRY_STATUS(cmdline.append(config.cmdline));
  if (virtio_)
    for (const auto& word : virtio_->cmdline_words())
      TRY_STATUS(cmdline.append(word));
  TRY_STATUS(cmdline.write_to(mem_, GuestAddress(layout::kCmdlineAddr)));
  cmdline_ = cmdline.str();

  auto e820 = build_e820(mem_);
  TRY_STATUS(write_mptable(mem_, config.vcpus));
  TRY_STATUS(gdt::write_boot_tables(mem_));

  if (config.boot == BootProtocol::kLinux64) {
    ZeroPageInputs zp{layout::kCmdlineAddr, cmdline.str().size(), initrd, e820};
    auto bp = TRY(build_zero_page(zp));
    TRY_STATUS(mem_.write_obj(GuestAddress(layout::kZeroPageAddr), bp));
    boot_entry_.protocol = BootProtocol::kLinux64;
    boot_entry_.entry = kernel_.entry;
    boot_entry_.boot_info = layout::kZeroPageAddr;
    boot_entry_.cr3 = TRY(write_identity_page_tables(mem_));
  } else {
    boot_entry_.protocol = BootProtocol::kPvh;
    boot_entry_.entry = *kernel_.pvh_entry;
    boot_entry_.boot_info = TRY(write_pvh_start_info(mem_, GuestAddress(layout::kPvhStartInfoAddr),
                                                     layout::kCmdlineAddr, initrd, e820));
  }
  return {};
}

Status Machine::create_vcpus(const MachineConfig& config) {
  auto supported = TRY(kvm_.supported_cpuid());
  vcpus_.reserve(config.vcpus);
  for (uint32_t i = 0; i < config.vcpus; ++i) {
    auto vcpu = TRY(Vcpu::create(kvm_, vm_, i));
    cpuids_.push_back(normalize_cpuid(supported, i, config.vcpus, config.cpu_template));
    TRY_STATUS(vcpu.set_cpuid(cpuids_.back()));
    TRY_STATUS(setup_vcpu_msrs(vcpu));
    TRY_STATUS(setup_vcpu_lapic(vcpu));
    if (i == 0) TRY_STATUS(setup_boot_vcpu(vcpu, boot_entry_));
    vcpus_.push_back(std::move(vcpu));
  }
  return {};
}

Status Machine::create_devices(const MachineConfig& config) {
  // The console's writer thread gets its own seccomp role before it writes a byte.
  auto console_thread = [] { return apply_seccomp(ThreadRole::kConsole); };
  switch (config.console.kind) {
    case ConsoleKind::kStdio:
      console_ = std::make_unique<ConsoleSink>(STDOUT_FILENO, false, ConsoleSink::kDefaultCapacity,
                                               0, console_thread);
      break;
    case ConsoleKind::kFile:
      console_ = TRY(
          ConsoleSink::open_file(config.console.path, config.console.max_bytes, console_thread));
      break;
    case ConsoleKind::kNone:
      console_ = std::make_unique<ConsoleSink>(-1, false);
      break;
  }
  serial_irq_ = std::make_unique<VmIrqLine>(vm_, Serial::kCom1Irq);
  serial_ = std::make_shared<Serial>(console_.get(), serial_irq_.get());
  TRY_STATUS(pio_bus_.insert(serial_, Serial::kCom1Base, Serial::kRegisterCount, "serial"));
  auto i8042 = std::make_shared<I8042>([this] {
    control_.finish(VmOutcome::kGuestReset, "guest reset through the i8042 controller");
  });
  TRY_STATUS(pio_bus_.insert(i8042, I8042::kDataPort, I8042::kCommandPort - I8042::kDataPort + 1,
                             "i8042"));
  auto pvpanic = std::make_shared<PvPanic>([this] {
    control_.finish(VmOutcome::kGuestPanic, "guest reported a panic (pvpanic port 0x505)");
  });
  TRY_STATUS(pio_bus_.insert(pvpanic, PvPanic::kPort, 1, "pvpanic"));

  const DeviceConfigs& dev = config.devices;
  const bool any_virtio =
      !dev.drives.empty() || !dev.nets.empty() || dev.vsock || dev.rng || !dev.filesystems.empty();
  if (config.console.input || any_virtio) event_loop_ = TRY(EventLoop::create());
  if (any_virtio) {
    // One thread serves every share of the VM (they are all the same guest's): a VM with
    // shares pays one thread start and one filter install, not one per share.
    std::vector<EventLoop*> fs_loops;
    if (!dev.filesystems.empty()) fs_loops_.push_back(TRY(EventLoop::create()));
    for (size_t i = 0; i < dev.filesystems.size(); ++i)
      fs_loops.push_back(fs_loops_.back().get());
    virtio_ = std::make_unique<VirtioDeviceSet>(vm_, mem_, mmio_bus_, *event_loop_);
    TRY_STATUS(virtio_->add_configured(dev, fs_loops));
  }
  if (config.console.input) {
    TRY_STATUS(event_loop_->add(STDIN_FILENO, EPOLLIN, [this](uint32_t) {
      uint8_t buf[64];
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0) {
        (void)event_loop_->remove(STDIN_FILENO);
        return;
      }
      // The UART FIFO is small; input beyond it is dropped rather than buffered without bound.
      serial_->enqueue_input({buf, static_cast<size_t>(n)});
    }));
  }
  return {};
}

VmOutcome Machine::run() {
  start();
  return wait();
}

void Machine::start() {
  install_vcpu_kick_handler();
  // Each thread installs its seccomp filter (when enabled) before it does any work for the guest.
  if (event_loop_) event_loop_->start_thread([this] { return enter_role(ThreadRole::kEventLoop); });
  for (auto& loop : fs_loops_)
    loop->start_thread([this] { return enter_role(ThreadRole::kFs); });
  threads_.reserve(vcpus_.size());
  for (auto& vcpu : vcpus_) {
    VcpuLoopContext ctx{&vcpu, &pio_bus_, &mmio_bus_, &control_};
    threads_.emplace_back([this, ctx] {
      if (enter_role(ThreadRole::kVcpu)) run_vcpu_loop(ctx);
    });
  }
}

Status Machine::start_paused() {
  // The request is up before the threads exist, so each vCPU parks before its first KVM_RUN.
  control_.request_pause();
  start();
  return pause();
}

std::map<std::string, uint64_t> Machine::counters() const {
  std::map<std::string, uint64_t> out;
  if (console_) {
    out["console_bytes_written"] = console_->written();
    out["console_bytes_dropped"] = console_->dropped();
  }
  if (virtio_) virtio_->add_counters(out);
  out["log_lines_dropped"] = log_lines_dropped();  // the VMM's stderr is rate limited too
  return out;
}

std::vector<VirtioFs::Binding> Machine::fs_bindings() const {
  std::vector<VirtioFs::Binding> out;
  if (virtio_)
    for (VirtioFs* f : virtio_->filesystems())
      out.push_back(f->binding());
  return out;
}

Status Machine::bind_fs(const std::string& tag, const std::string& shared_dir, FsMode mode) {
  std::vector<VirtioFs*> shares = virtio_ ? virtio_->filesystems() : std::vector<VirtioFs*>{};
  for (size_t i = 0; i < shares.size(); ++i) {
    if (shares[i]->tag() != tag) continue;
    TRY_STATUS(shares[i]->bind(shared_dir, mode));
    // A fork builds its children from config_: they get the share as it is now.
    if (i < config_.devices.filesystems.size()) {
      config_.devices.filesystems[i].shared_dir = shared_dir;
      config_.devices.filesystems[i].mode = mode;
    }
    return {};
  }
  return as_invalid_input(make_error("no virtio-fs device has the tag '" + tag + "'"));
}

bool Machine::enter_role(ThreadRole role) {
  Status s = apply_seccomp(role);
  if (s.ok()) return true;
  control_.finish(VmOutcome::kHostError, s.error().describe());
  return false;
}

void Machine::kick_all() {
  for (size_t i = 0; i < threads_.size(); ++i)
    kick_vcpu(vcpus_[i], threads_[i].native_handle());
}

Status Machine::pause() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (threads_.empty()) return make_error("the VM is not running");
  if (paused_) return {};
  control_.request_pause();
  kick_all();
  if (!control_.wait_paused(vcpus_.size())) {
    control_.resume();
    return make_error("the VM ended before it could be paused");
  }
  for (auto& vcpu : vcpus_)
    (void)vcpu.notify_paused();
  // Device work stops too: a paused VM's RAM and rings must not change under a snapshot
  // (network RX, vsock host data, timers). Block requests in flight are finished by its save().
  if (event_loop_) event_loop_->pause_thread();
  for (auto& loop : fs_loops_)
    loop->pause_thread();  // after the request in progress: a host file call is not interrupted
  paused_ = true;
  return {};
}

void Machine::resume() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (!paused_) return;
  paused_ = false;
  if (event_loop_) event_loop_->resume_thread();
  for (auto& loop : fs_loops_)
    loop->resume_thread();
  control_.resume();
}

bool Machine::paused() const {
  std::lock_guard<std::mutex> lock(pause_mu_);
  return paused_;
}

VmOutcome Machine::wait() {
  std::optional<std::chrono::nanoseconds> timeout;
  if (config_.timeout_seconds)
    timeout = std::chrono::nanoseconds(static_cast<int64_t>(*config_.timeout_seconds * 1e9));
  VmOutcome outcome = control_.wait(timeout);
  {
    // Under pause_mu_: a pause() from the API thread walks threads_ to kick them. It cannot hold
    // the lock for long now: its wait for parked vCPUs ends as soon as the run has finished.
    std::lock_guard<std::mutex> lock(pause_mu_);
    kick_all();
    for (auto& t : threads_)
      t.join();
    threads_.clear();
  }
  if (outcome == VmOutcome::kTimeout) {
    // Where each vCPU was when time ran out: the first clue to a hung guest.
    for (auto& vcpu : vcpus_)
      extra_detail_ += "\nvCPU " + std::to_string(vcpu.index()) + ":\n" + vcpu.describe_registers();
  }
  stop_loops();
  if (console_) console_->close();
  return outcome;
}

void Machine::stop_loops() {
  if (event_loop_) event_loop_->stop();
  for (auto& loop : fs_loops_)
    loop->stop();
}

void Machine::stop(VmOutcome outcome, std::string detail) {
  control_.finish(outcome, std::move(detail));
}

}  // namespace carapace
