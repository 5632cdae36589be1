#!/usr/bin/env python3
"""Writes the hand-made seeds of fuzz_fuse_request under tests/fuzz/corpus/fuzz_fuse_request/
(run from anywhere). The input format is described at the top of fuzz_fuse_request.cpp:
[mode:1] then requests [split:2][reply:2][len:2][fuse_in_header + arguments]."""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_fuse_request")

# Opcodes (<linux/fuse.h>).
LOOKUP, FORGET, GETATTR, SETATTR, READLINK, SYMLINK, MKNOD, MKDIR, UNLINK, RMDIR = (
    1, 2, 3, 4, 5, 6, 8, 9, 10, 11)
RENAME, LINK, OPEN, READ, WRITE, STATFS, RELEASE = 12, 13, 14, 15, 16, 17, 18
OPENDIR, READDIR, CREATE, READDIRPLUS, RENAME2, FALLOCATE, BATCH_FORGET = 27, 28, 35, 44, 45, 43, 42


def req(opcode, nodeid, args=b"", unique=2, reply=4096, split=0, len_delta=0):
    body = struct.pack("<IIQQIIIHH", 40 + len(args) + len_delta, opcode, unique, nodeid, 0, 0, 0,
                       0, 0) + args
    return struct.pack("<HHH", split, reply, len(body)) + body


def name(s):
    return s.encode() + b"\0"


def read_in(fh, offset=0, size=4096):
    return struct.pack("<QQIIQII", fh, offset, size, 0, 0, 0, 0)


SEEDS = {
    "lookup_open_read": (1, [req(LOOKUP, 1, name("a")), req(OPEN, 2, struct.pack("<II", 0, 0)),
                             req(READ, 2, read_in(1))]),
    "create_write": (1, [req(CREATE, 1, struct.pack("<IIII", 0o102, 0o100644, 0o22, 0) + name("n")),
                         req(WRITE, 2, struct.pack("<QQIIQII", 1, 0, 5, 0, 0, 0, 0) + b"hello",
                             split=44)]),
    "readdirplus": (1, [req(OPENDIR, 1, struct.pack("<II", 0, 0)), req(READDIRPLUS, 1, read_in(1)),
                        req(READDIR, 1, read_in(1, 0, 64))]),
    "nodelete_rename_over": (2, [req(LOOKUP, 1, name("d")),
                                 req(RENAME2, 1, struct.pack("<QII", 2, 0, 0) + name("a") +
                                     name("b"))]),
    "ro_unlink_mkdir": (0, [req(UNLINK, 1, name("a")), req(MKDIR, 1, struct.pack("<II", 0o755, 0)
                                                         + name("x"))]),
    "symlink_out_open": (1, [req(LOOKUP, 1, name("out")), req(OPEN, 2, struct.pack("<II", 2, 0)),
                             req(READLINK, 2)]),
    "fifo_and_dotdot": (1, [req(LOOKUP, 1, name("fifo")), req(LOOKUP, 1, name("..")),
                            req(LOOKUP, 1, b"a/b")]),
    "bad_lengths": (1, [req(LOOKUP, 1, name("a"), len_delta=7), req(GETATTR, 1, b"\0" * 15),
                        req(STATFS, 1, reply=8)]),
    "forgets": (1, [req(LOOKUP, 1, name("a")), req(FORGET, 2, struct.pack("<Q", 1), reply=0),
                    req(BATCH_FORGET, 0, struct.pack("<II", 1, 0) + struct.pack("<QQ", 2, 1),
                        reply=0)]),
    "setattr_mknod": (1, [req(LOOKUP, 1, name("a")),
                          req(SETATTR, 2, struct.pack("<IIQQQQQQIIIIIIII", 0x8 | 0x1, 0, 0, 1, 0,
                                                      0, 0, 0, 0, 0, 0, 0o4755, 0, 0, 0, 0)),
                          req(MKNOD, 1, struct.pack("<IIII", 0o10644, 0, 0, 0) + name("p"))]),
}

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for seed, (mode, reqs) in SEEDS.items():
    with open(os.path.join(OUT, seed), "wb") as f:
        f.write(bytes([mode]) + b"".join(reqs))
