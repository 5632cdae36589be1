// Ending the VM.
#pragma once

namespace testguest {

// Pulses the i8042 reset line (0xfe to port 0x64): carapace ends the VM with exit status 0. Where
// there is no i8042 (QEMU microvm), falls back to a triple fault, which `qemu -no-reboot` also
// turns into an exit.
[[noreturn]] void reset_vm();

}  // namespace testguest
