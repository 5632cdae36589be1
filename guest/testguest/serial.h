// The 8250/16550A UART at COM1 (I/O port 0x3f8), polled.
#pragma once

#include <cstddef>
#include <cstdint>

namespace testguest {

inline constexpr uint16_t kCom1 = 0x3f8;
inline constexpr uint16_t kUartThr = kCom1 + 0;      // transmit holding register (write)
inline constexpr uint16_t kUartFcr = kCom1 + 2;      // FIFO control (write) / IIR (read)
inline constexpr uint16_t kUartLcr = kCom1 + 3;      // line control
inline constexpr uint16_t kUartLsr = kCom1 + 5;      // line status
inline constexpr uint16_t kUartScratch = kCom1 + 7;  // scratch register
inline constexpr uint8_t kLsrThre = 1 << 5;          // THR (or the TX FIFO) empty
inline constexpr uint8_t kLsrTemt = 1 << 6;          // transmitter empty

// Writes the bytes: waits (bounded) for THRE, then writes one byte, or up to 16 with one
// `rep outsb` when the UART has a FIFO. Each port access is a VM exit, and `rep outsb` is one exit
// for the whole burst, so a 16550A costs about 2 exits per 16 bytes instead of 2 per byte.
void serial_write(const char* data, size_t length);

// Bytes per THRE wait: 16 with a working FIFO, else 1. Set up by the first serial_write.
size_t serial_burst();

}  // namespace testguest
