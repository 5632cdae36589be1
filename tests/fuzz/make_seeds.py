#!/usr/bin/env python3
"""Writes the hand-made seed corpus under tests/fuzz/corpus/ (run from anywhere).

The input formats are described at the top of each fuzz_*.cpp."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
NEXT, WRITE, INDIRECT = 1, 2, 4


def desc(addr, length, flags=0, nxt=0):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def image(size, descs, heads, avail_idx=None, used_event=0, extra=()):
    """Memory with the fixed layout: desc table 0x0, avail 0x1000, used 0x2000."""
    mem = bytearray(0x1000 + 6 + 2 * size)
    for i, d in descs.items():
        mem[16 * i:16 * i + 16] = d
    idx = len(heads) if avail_idx is None else avail_idx
    struct.pack_into("<HH", mem, 0x1000, 0, idx)
    for n, h in enumerate(heads):
        struct.pack_into("<H", mem, 0x1004 + 2 * n, h)
    struct.pack_into("<H", mem, 0x1004 + 2 * size, used_event)
    for addr, data in extra:
        if len(mem) < addr + len(data):
            mem.extend(bytes(addr + len(data) - len(mem)))
        mem[addr:addr + len(data)] = data
    return bytes(mem)


def chain_seed(size_log2, flags, next_avail, mem):
    return struct.pack("<BBHQQQ", size_log2, flags, next_avail, 0, 0, 0) + mem


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# fuzz_descriptor_chain: size 16 (log2 4), indirect allowed (flag 2).
three = {0: desc(0x3000, 16, NEXT, 5), 5: desc(0x3100, 8, NEXT, 2), 2: desc(0x3200, 32, WRITE)}
write("fuzz_descriptor_chain", "three_descriptors", chain_seed(4, 2, 0, image(16, three, [0])))
table = desc(0x3000, 16, NEXT, 1) + desc(0x3100, 100, NEXT | WRITE, 2) + desc(0x3200, 1, WRITE)
write("fuzz_descriptor_chain", "indirect_table",
      chain_seed(4, 2, 0, image(16, {3: desc(0x4000, 48, INDIRECT)}, [3], extra=[(0x4000, table)])))
cycle = {0: desc(0x3000, 1, NEXT, 1), 1: desc(0x3000, 1, NEXT, 0), 2: desc(0x3000, 4, WRITE)}
write("fuzz_descriptor_chain", "cycle_then_good", chain_seed(4, 2, 0, image(16, cycle, [0, 2])))
write("fuzz_descriptor_chain", "event_idx_wrap",
      chain_seed(4, 3, 65534, image(16, three, [0, 0, 0, 0], avail_idx=2, used_event=0)))
write("fuzz_descriptor_chain", "avail_too_far",
      chain_seed(4, 2, 0, image(16, three, [0], avail_idx=17)))

# fuzz_mmio_registers: [mem_len:2][mem][ops: kind:1 offset:2 value:8].
def op(kind, offset=0, value=0, width=4):
    wbits = {1: 0, 2: 1, 4: 2, 8: 3}[width]
    return struct.pack("<BHQ", kind + 8 * wbits, offset, value)


init_value = 0x00 | 0x04 << 8 | 4 << 16 | 3 << 20 | 0x30000001 << 32
mem = bytearray(image(16, {0: desc(0x3000, 4, NEXT, 1), 1: desc(0x3800, 4, WRITE)}, [0]))
mem.extend(bytes(0x3004 - len(mem)))
mem[0x3000:0x3004] = b"ping"
ops = (op(4, value=init_value) + op(5, value=0) + op(3, 0x60) + op(2, 0x64, 1) + op(3, 0x70)
       + op(0, 0x100, width=1) + op(0, 0x104, width=8) + op(1, 0x105, 0xff, width=2)
       + op(6) + op(3, 0x70))
write("fuzz_mmio_registers", "linux_init_and_echo", struct.pack("<H", len(mem)) + bytes(mem) + ops)
regs = b"".join(op(3, off) for off in range(0, 0x100, 4))
write("fuzz_mmio_registers", "read_all_registers", struct.pack("<H", 0) + regs)
odd = b"".join(op(k, off, 0x0102030405060708, width=w)
               for k in (0, 1) for w in (1, 2, 8) for off in (0x0, 0x33, 0x70, 0xfe, 0xffc))
write("fuzz_mmio_registers", "odd_widths", struct.pack("<H", 0) + odd)
steps = (op(2, 0x70, 1) + op(2, 0x70, 3) + op(2, 0x24, 1) + op(2, 0x20, 1) + op(2, 0x70, 11)
         + op(2, 0x30, 7) + op(3, 0x34) + op(2, 0x38, 16) + op(2, 0x44, 1) + op(2, 0x30, 0)
         + op(2, 0x38, 12) + op(2, 0x80, 8) + op(2, 0x44, 1) + op(2, 0x70, 15) + op(5, value=3))
write("fuzz_mmio_registers", "status_and_queue_abuse", struct.pack("<H", 0) + steps)
broken = bytearray(mem)
struct.pack_into("<H", broken, 0x1002, 40)
write("fuzz_mmio_registers", "needs_reset",
      struct.pack("<H", len(broken)) + bytes(broken) + op(4, value=init_value) + op(5) + op(3, 0x70)
      + op(2, 0x70, 0x4f) + op(6) + op(4, value=init_value))
