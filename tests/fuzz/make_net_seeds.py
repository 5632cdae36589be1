#!/usr/bin/env python3
"""Writes the hand-made seeds of fuzz_net_tx under tests/fuzz/corpus/fuzz_net_tx/ (run from
anywhere). The input format is described at the top of fuzz_net_tx.cpp."""
import os
import socket
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_net_tx")
WRITE, NEXT = 2, 1
ANY, TCP, UDP, ICMP = 0, 1, 2, 3


def eth(ethertype, payload):
    return bytes.fromhex("525400123456020000000001") + struct.pack(">H", ethertype) + payload


def ipv4(proto, dst, l4, frag=0):
    h = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, frag, 64, proto, 0,
                    socket.inet_aton("10.0.2.15"), socket.inet_aton(dst))
    return eth(0x0800, h + l4)


def ipv6(nxt, dst, payload, hop=64):
    h = struct.pack(">IHBB16s16s", 0x60000000, len(payload), nxt, hop,
                    socket.inet_pton(socket.AF_INET6, "fe80::f"),
                    socket.inet_pton(socket.AF_INET6, dst))
    return eth(0x86dd, h + payload)


def tcp(port):
    return struct.pack(">HHIIBBHHH", 40000, port, 0, 0, 0x50, 0, 0, 0, 0)


def udp(port):
    return struct.pack(">HHHH", 40000, port, 8, 0)


def ext(nxt):
    return bytes([nxt, 0, 1, 4, 0, 0, 0, 0])


def rule(ipv6_, proto, addr, prefix, port):
    a = socket.inet_pton(socket.AF_INET6 if ipv6_ else socket.AF_INET, addr).ljust(16, b"\0")
    return struct.pack("<BBH", int(ipv6_) | proto << 1, prefix, port) + a


def policy_seed(rules, frame):
    return bytes([0, len(rules)]) + b"".join(rules) + frame


def desc(addr, length, flags=0, nxt=0):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def device_seed(mode, tx_frames, rx_frame):
    """TX ring at 0x0/0x1000/0x1800 (size 16), RX ring at 0x3000/0x4000/0x4800 (size 16),
    TX buffers from 0x2000 (header and frame in two descriptors), RX buffers from 0x5000."""
    mem = bytearray(0x5000)
    addr = 0x2000
    for i, f in enumerate(tx_frames):
        mem[16 * 2 * i:16 * 2 * i + 32] = (desc(addr, 12, NEXT, 2 * i + 1) +
                                            desc(addr + 12, len(f)))
        mem[addr + 12:addr + 12 + len(f)] = f
        struct.pack_into("<H", mem, 0x1004 + 2 * i, 2 * i)
        addr += 12 + len(f)
    struct.pack_into("<HH", mem, 0x1000, 0, len(tx_frames))
    for i in range(4):
        mem[0x3000 + 16 * i:0x3000 + 16 * i + 16] = desc(0x5000 + 0x800 * i, 1526, WRITE)
        struct.pack_into("<H", mem, 0x4004 + 2 * i, i)
    struct.pack_into("<HH", mem, 0x4000, 0, 4)
    return bytes([mode, 4, 4]) + struct.pack("<H", len(rx_frame)) + rx_frame + bytes(mem)


def main():
    os.makedirs(OUT, exist_ok=True)
    web = rule(False, TCP, "10.0.0.0", 8, 443)
    dns6 = rule(True, UDP, "2001:db8::", 32, 53)
    arp = eth(0x0806, struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + bytes(20))
    seeds = {
        "policy-ipv4-tcp": policy_seed([web], ipv4(6, "10.1.2.3", tcp(443))),
        "policy-ipv4-fragment": policy_seed([web], ipv4(6, "10.1.2.3", bytes(16), 0x0003)),
        "policy-ipv6-ext": policy_seed([dns6], ipv6(0, "2001:db8::1", ext(60) + ext(17) + udp(53))),
        "policy-ipv6-frag": policy_seed([dns6], ipv6(44, "2001:db8::1",
                                                     bytes([17, 0, 0, 1, 0, 0, 0, 0]) + udp(53))),
        "policy-ndp": policy_seed([], ipv6(58, "ff02::1:ff00:1", bytes([135]) + bytes(23), 255)),
        "policy-arp": policy_seed([], arp),
        "policy-vlan": policy_seed([web], eth(0x8100, bytes([0, 5, 8, 0]) + bytes(40))),
        "device-open": device_seed(1 | 4, [ipv4(6, "10.0.0.1", tcp(80)), arp],
                                   ipv4(17, "10.0.2.15", udp(53))),
        "device-policy": device_seed(1 | 2 | 4 | 8, [ipv4(6, "10.0.0.1", tcp(443)),
                                                     ipv4(6, "11.0.0.1", tcp(443)), bytes(13)],
                                     arp),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
