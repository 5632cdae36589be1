#include "vmm/machine/vcpu_loop.h"

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "common/base/log.h"
#include "common/base/token_bucket.h"

namespace carapace {

namespace {

void handle_io(const VcpuLoopContext& ctx, kvm_run* run) {
  auto* base = reinterpret_cast<uint8_t*>(run) + run->io.data_offset;
  const size_t size = run->io.size;
  // String I/O (rep outs/ins) arrives as `count` consecutive items in the same buffer.
  for (uint32_t i = 0; i < run->io.count; ++i) {
    std::span<uint8_t> item(base + i * size, size);
    if (run->io.direction == KVM_EXIT_IO_OUT) {
      ctx.pio->write(run->io.port, item);
    } else if (!ctx.pio->read(run->io.port, item)) {
      std::memset(item.data(), 0xff, size);  // unclaimed port: floating bus
    }
  }
}

void handle_mmio(const VcpuLoopContext& ctx, kvm_run* run) {
  std::span<uint8_t> data(run->mmio.data, std::min<uint32_t>(run->mmio.len, 8));
  if (run->mmio.is_write) {
    ctx.mmio->write(run->mmio.phys_addr, data);
  } else if (!ctx.mmio->read(run->mmio.phys_addr, data)) {
    std::memset(data.data(), 0xff, data.size());
  }
}

std::string internal_error_detail(const Vcpu& vcpu, const kvm_run* run) {
  char buf[256];
  const bool emulation = run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION;
  int n = snprintf(buf, sizeof buf, "vCPU %u: KVM internal error, suberror %u%s", vcpu.index(),
                   run->internal.suberror, emulation ? " (emulation failure)" : "");
  std::string out(buf, n);
  // Newer kernels report the bytes of the instruction the emulator could not handle.
  const auto& ef = run->emulation_failure;
  if (emulation && ef.ndata >= 3 &&
      (ef.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES)) {
    out += "; instruction bytes:";
    for (uint32_t i = 0; i < std::min<uint32_t>(ef.insn_size, sizeof ef.insn_bytes); ++i) {
      snprintf(buf, sizeof buf, " %02x", ef.insn_bytes[i]);
      out += buf;
    }
  } else if (uint32_t nd = std::min<uint32_t>(run->internal.ndata, 16)) {
    out += "; data:";
    for (uint32_t i = 0; i < nd; ++i) {
      snprintf(buf, sizeof buf, " %llx", static_cast<unsigned long long>(run->internal.data[i]));
      out += buf;
    }
  }
  return out + "\n" + vcpu.describe_registers();
}

// Handles one exit. Returns false when the loop must end.
bool handle_exit(const VcpuLoopContext& ctx) {
  Vcpu& vcpu = *ctx.vcpu;
  kvm_run* run = vcpu.run_state();
  char buf[128];
  switch (run->exit_reason) {
    case KVM_EXIT_IO:
      handle_io(ctx, run);
      return true;
    case KVM_EXIT_MMIO:
      handle_mmio(ctx, run);
      return true;
    case KVM_EXIT_INTR:
    case KVM_EXIT_HLT:  // only seen without an in-kernel LAPIC; nothing to do
      return true;
    case KVM_EXIT_SHUTDOWN:
      snprintf(buf, sizeof buf, "vCPU %u: triple fault (KVM_EXIT_SHUTDOWN)\n", vcpu.index());
      ctx.control->finish(VmOutcome::kTripleFault, buf + vcpu.describe_registers());
      return false;
    case KVM_EXIT_INTERNAL_ERROR:
      ctx.control->finish(VmOutcome::kKvmError, internal_error_detail(vcpu, run));
      return false;
    case KVM_EXIT_FAIL_ENTRY:
      snprintf(buf, sizeof buf, "vCPU %u: VM entry failed, hardware reason 0x%llx\n", vcpu.index(),
               static_cast<unsigned long long>(run->fail_entry.hardware_entry_failure_reason));
      ctx.control->finish(VmOutcome::kKvmError, buf + vcpu.describe_registers());
      return false;
    case KVM_EXIT_SYSTEM_EVENT:
      switch (run->system_event.type) {
        case KVM_SYSTEM_EVENT_SHUTDOWN:
        case KVM_SYSTEM_EVENT_RESET:
          ctx.control->finish(VmOutcome::kGuestReset, "guest requested reset/shutdown");
          return false;
        case KVM_SYSTEM_EVENT_CRASH:
          ctx.control->finish(VmOutcome::kGuestPanic, "guest reported a crash");
          return false;
        default:
          snprintf(buf, sizeof buf, "vCPU %u: unknown system event %u", vcpu.index(),
                   run->system_event.type);
          ctx.control->finish(VmOutcome::kKvmError, buf);
          return false;
      }
    default:
      snprintf(buf, sizeof buf, "vCPU %u: unexpected KVM exit reason %u\n", vcpu.index(),
               run->exit_reason);
      ctx.control->finish(VmOutcome::kKvmError, buf + vcpu.describe_registers());
      return false;
  }
}

void kick_handler(int) {}

// At debug level, what the guest cost this vCPU: how many times KVM_RUN returned, by reason, and
// the time spent inside it (guest code and the exits KVM handles itself). Logged when the loop
// ends, however it ends, so a benchmark can tell that share of a run from the VMM's own work
// (bench/README.md). Two vDSO clock reads per exit, and only when asked.
class RunTally {
 public:
  explicit RunTally(uint32_t vcpu) : vcpu_(vcpu), on_(log_level() >= LogLevel::kDebug) {}
  RunTally(const RunTally&) = delete;
  RunTally& operator=(const RunTally&) = delete;
  ~RunTally() {
    if (!on_) return;
    LOG_DEBUG(
        "vCPU %u: %llu KVM_RUN returns (io %llu, mmio %llu, hlt %llu), %.3f ms inside KVM_RUN",
        vcpu_, static_cast<unsigned long long>(returns_), static_cast<unsigned long long>(io_),
        static_cast<unsigned long long>(mmio_), static_cast<unsigned long long>(hlt_),
        static_cast<double>(inside_ns_) / 1e6);
  }

  uint64_t enter() const { return on_ ? RateLimiter::now_ns() : 0; }
  void leave(uint64_t entered, const kvm_run* run) {
    if (!on_) return;
    inside_ns_ += RateLimiter::now_ns() - entered;
    ++returns_;
    io_ += run->exit_reason == KVM_EXIT_IO;
    mmio_ += run->exit_reason == KVM_EXIT_MMIO;
    hlt_ += run->exit_reason == KVM_EXIT_HLT;
  }

 private:
  const uint32_t vcpu_;
  const bool on_;
  uint64_t returns_ = 0, io_ = 0, mmio_ = 0, hlt_ = 0, inside_ns_ = 0;
};

}  // namespace

int vcpu_kick_signal() {
  return SIGRTMIN;
}

void install_vcpu_kick_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = kick_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: KVM_RUN must return EINTR
    sigaction(vcpu_kick_signal(), &sa, nullptr);
  });
}

void run_vcpu_loop(const VcpuLoopContext& ctx) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, vcpu_kick_signal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  bool first_run = true;
  RunTally tally(ctx.vcpu->index());
  while (!ctx.control->finished()) {
    if (ctx.control->pause_requested()) {
      // Here KVM_RUN has returned with nothing pending (immediate_exit lets KVM finish an I/O
      // instruction first), so the vCPU state is consistent for a snapshot.
      ctx.control->park();
      __atomic_store_n(&ctx.vcpu->run_state()->immediate_exit, 0, __ATOMIC_SEQ_CST);
      continue;
    }
    if (first_run) {
      first_run = false;
      // An absolute CLOCK_MONOTONIC time, so that whoever exec'd the VMM can take its exec -> first
      // guest instruction (bench/README.md); the phase timers only see the VMM's own part. In the
      // loop, not before it: a VM started paused runs first only after its resume.
      if (log_level() >= LogLevel::kDebug) {
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        LOG_DEBUG("vCPU %u: first KVM_RUN at monotonic %lld.%09ld s", ctx.vcpu->index(),
                  static_cast<long long>(now.tv_sec), now.tv_nsec);
      }
    }
    const uint64_t entered = tally.enter();
    Status s = ctx.vcpu->run();
    tally.leave(entered, ctx.vcpu->run_state());
    if (!s.ok()) {
      ctx.control->finish(VmOutcome::kHostError, s.error().describe());
      return;
    }
    if (!handle_exit(ctx)) return;
  }
}

void kick_vcpu(Vcpu& vcpu, pthread_t thread) {
  __atomic_store_n(&vcpu.run_state()->immediate_exit, 1, __ATOMIC_SEQ_CST);
  pthread_kill(thread, vcpu_kick_signal());
}

}  // namespace carapace
