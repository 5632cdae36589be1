// The marker initramfs's /init: proves that a kernel booted by carapace reached user space.
// It prints one line on the console and reboots at once (with `reboot=k` the kernel pulses the
// i8042 reset line and the VMM exits 0).
//
// A few hundred bytes of freestanding code instead of a busybox shell: on hosts that emulate
// guest CPL0 (see HOST-NOTES), unpacking a 2 MiB busybox into the initramfs takes minutes, while
// this binary unpacks in milliseconds. Built by tools/build-initramfs with -nostdlib -static.
#include <linux/reboot.h>
#include <sys/syscall.h>

static long sys3(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return ret;
}

static long sys4(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}

static const char kMarker[] = "CARAPACE-INIT-MARKER ok\n";

void _start(void) {
  // The kernel opened /dev/console as fds 0-2 for init.
  sys3(SYS_write, 1, (long)kMarker, sizeof kMarker - 1);
  sys3(SYS_sync, 0, 0, 0);
  sys4(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_RESTART, 0);
  // Not reached; if reboot failed, init exiting panics the kernel and panic=-1 reboots.
  sys3(SYS_exit, 1, 0, 0);
  for (;;) {
  }
}
