#!/usr/bin/env python3
"""Writes the hand-made seeds of the parser fuzzers (fuzz_http_request, fuzz_service_requests,
fuzz_agent_protocol, fuzz_mcp, fuzz_snapshot_state, fuzz_elf_loader, fuzz_cmdline,
fuzz_egress_rules, fuzz_proxy_request, fuzz_socks_request, fuzz_credential_rewrite) under
tests/fuzz/corpus/<target>/ (run from anywhere). Each target's input format is described at the
top of its source file; a few valid inputs and a few edge cases each."""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, seeds):
    out = os.path.join(HERE, "corpus", target)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, data in seeds.items():
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


# --- fuzz_http_request ---------------------------------------------------------------------------

def http_seeds():
    token = "0123456789abcdef0123456789abcdef"
    req = lambda head: b"\x00" + u8(100) + head.encode()
    chunked = lambda max_body, pieces, body: (b"\x02" + u32(max_body) + u8(len(pieces)) +
                                             b"".join(u16(p) for p in pieces) + body)
    return {
        "request_get_query": req("GET /sandboxes/sb-1/files?path=%2Fwork%2Fa+b&mode=0644 HTTP/1.1"
                                 "\r\nHost: localhost:8080\r\nAuthorization: Bearer " + token +
                                 "\r\n"),
        "request_post_length": req("POST /sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/json\r\nContent-Length: 17\r\n"
                                   "Expect: 100-continue\r\n"),
        "request_chunked_10": req("PUT /sandboxes/sb-1/files?path=x HTTP/1.0\r\n"
                                  "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n"),
        "request_smuggling": req("POST /templates HTTP/1.1\r\nContent-Length: 5\r\n"
                                 "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n"
                                 " folded\r\n"),
        "request_bad_path": req("GET /sandboxes/%2e%2e/exec HTTP/1.1\r\nHost: a\r\nHost: b\r\n"),
        "response_chunked": b"\x01\x00" + u8(100) + b"HTTP/1.1 200 OK\r\nTransfer-Encoding: "
                            b"chunked\r\nContent-Type: text/event-stream\r\n",
        "response_head_204": b"\x01\x01" + u8(100) + b"HTTP/1.0 204 No Content\r\n"
                             b"Content-Length: 12\r\n",
        "chunked_two_chunks": chunked(1 << 20, [3, 1, 7], b"5;ext=1\r\nhello\r\n6\r\n world\r\n"
                                      b"0\r\nTrailer: x\r\n\r\nNEXT"),
        "chunked_too_large": chunked(16, [2], b"fffffffffffffffff\r\n"),
        "chunked_bad_crlf": chunked(1024, [], b"3\r\nabcX\r\n0\r\n\r\n"),
        "percent": b"\x03\x01" + b"a%20b+c%2F%00%zz%4",
        "query": b"\x04" + b"path=%2Fetc%2Fpasswd&flag&parents=true&=x&a=1&a=2",
    }


# --- fuzz_service_requests -----------------------------------------------------------------------

def service_seeds():
    def route(n, body, query=b""):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        return u8(n) + u8(len(query)) + query + body

    return {
        "template_microvm": route(0, {"name": "t-1", "isolation": "microvm",
                                      "kernel": "/proc/self/exe", "initrd": "/proc/self/exe",
                                      "boot_args": "console=ttyS0 carapace.token=00ff",
                                      "vcpus": 2, "mem_mib": 512, "pool_size": 0,
                                      "agent_timeout_s": 30, "network": True}),
        "template_bad": route(0, {"isolation": "process", "rootfs": "relative/path",
                                  "vcpus": 99, "mem_mib": -1, "boot_args": "a\nb"}),
        "sandbox_create": route(1, {"template": "@TPL", "timeout_s": 60,
                                    "env": {"A": "1", "B": "two"},
                                    "network": {"allow": ["10.0.0.0/8:tcp:443",
                                                          "::/0:udp:53"]}}),
        "sandbox_create_bad": route(1, {"template": "@TPL", "timeout_s": 18446744073709551615,
                                        "env": {"A=B": "x"}, "network": {"allow": ["x"]}}),
        "fork": route(2, {"count": 3}),
        "fork_bad": route(2, {"count": 17, "extra": None}),
        "timeout": route(3, {"timeout_s": 3600}),
        "exec": route(4, {"argv": ["sh", "-c", "echo hi"], "env": {"X": "y"}, "cwd": "/work",
                          "stdin": "aGk=", "timeout_ms": 1000, "max_output": 4096,
                          "stream": True}),
        "exec_bad": route(4, {"argv": [], "timeout_ms": -5, "stream": "yes"}),
        "put_file": route(5, b"file contents\x00\xff", b"path=%2Fwork%2Fa.txt&mode=0755&parents=1"),
        "get_file": route(6, b"", b"path=a.txt"),
        "list_files": route(7, b"", b"path="),
        "documents": route(8, {"spec": {"title": "T", "blocks": []}, "format": "pdf"}),
        "documents_bad_format": route(8, {"spec": {}, "format": 7}),
        "pause_body": route(9, {"unexpected": 1}),
        "daemon_config": route(10, {"max_sandboxes": 8, "max_memory_mib": 4096,
                                    "default_ttl_s": 60, "max_ttl_s": 600,
                                    "max_request_bytes": 65536, "max_upload_bytes": 1048576,
                                    "health_interval_s": 2.5, "health_timeout_s": 1,
                                    "header_timeout_s": 5, "max_connections": 16,
                                    "on_shutdown": "persist", "seccomp": False, "jail": True,
                                    "tcp": {"port": 8080, "token_file": "/etc/carapace/token"}}),
        "daemon_config_bad": route(10, b'{"max_sandboxes": 1e99, "tcp": {"port": 70000}, '
                                       b'"on_shutdown": 3, "max_sandboxes": 2}'),
        "deep_json": route(1, b"[" * 40 + b"]" * 40),
    }


# --- fuzz_agent_protocol -------------------------------------------------------------------------

def frame(obj):
    text = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return u32(len(text)) + text


def piece(text):
    text = text if isinstance(text, bytes) else text.encode()
    return u16(len(text)) + text


def agent_seeds():
    host = lambda call, flags, body: b"\x02" + u8(call) + u8(flags) + body
    return {
        "agent_pings": b"\x00" + frame({"id": 1, "op": "ping"}) + frame({"id": 2, "op": "ping"}),
        "agent_unauthorized": b"\x00" + frame({"id": 3, "op": "exec", "argv": ["true"],
                                               "token": "00ff"}),
        "agent_bad_frames": b"\x00" + frame({"id": 1, "op": "ping"}) + frame(b"[1,2") +
                            u32(0x7fffffff),
        "agent_not_object": b"\x00" + frame(b'"ping"') + frame({"id": -1, "op": "ping"}),
        "op_stat": b"\x01\x01" + json.dumps({"path": "hello.txt"}).encode(),
        "op_list_escape": b"\x01\x02" + json.dumps({"path": "out/../../etc"}).encode(),
        "op_get_file": b"\x01\x03" + json.dumps({"path": "/hello.txt"}).encode(),
        "op_kill": b"\x01\x04" + json.dumps({"target": 12, "signal": 9}).encode(),
        "op_post_restore": b"\x01\x05" + json.dumps({
            "clock": {"sec": 1700000000, "nsec": 5}, "entropy": "AAECAw==",
            "new_token": "00ff00ff", "hostname": "sb-1"}).encode(),
        "host_ping": host(0, 0, piece('{"id": @ID, "version": "0.1.0", "protocol": 1, '
                                      '"uptime_ms": 5, "token_set": true}')),
        "host_exec": host(1, 0, piece('{"id": @ID, "stream": "stdout", "data": "aGk="}') +
                          piece('{"id": @ID, "stream": "stderr", "data": "ZXJy"}') +
                          piece('{"id": @ID, "exit_code": 0, "timed_out": false, '
                                '"stdout_bytes": 2, "duration_ms": 1}')),
        "host_exec_too_much": host(1, 0, piece('{"id": @ID, "stream": "stdout", "data": "' +
                                               "QUFB" * 40 + '"}')),
        "host_put_file": host(2, 0, piece('{"id": @ID, "ok": true}')),
        "host_get_file": host(3, 0, piece('{"id": @ID, "data": "aGVsbG8="}') +
                              piece('{"id": @ID, "eof": true}')),
        "host_list": host(4, 0, piece('{"id": @ID, "entries": [{"name": "a", "type": "file", '
                                      '"size": 1, "mode": 420, "mtime": -1}]}')),
        "host_stat_error": host(5, 0, piece('{"id": @ID, "error": {"code": "not_found", '
                                            '"message": "no such file"}}')),
        "host_kill_wrong_id": host(6, 0, piece('{"id": 1, "ok": true}')),
        "host_post_restore": host(7, 0, piece('{"id": @ID, "applied": ["clock", 5], '
                                              '"skipped": []}')),
        "host_shutdown_raw": host(8, 1, u32(0xffffffff) + b"{}"),
        "host_vsock": host(0, 2, b"OK 1073741824\n" + piece(
            '{"id": @ID, "version": "x", "protocol": 1, "uptime_ms": 0, "token_set": false}')),
        "host_vsock_refused": host(0, 2, b"NO\n"),
    }


# --- fuzz_mcp ------------------------------------------------------------------------------------

def mcp_seeds():
    def rpc(method, params=None, id_=1):
        m = {"jsonrpc": "2.0", "method": method}
        if id_ is not None:
            m["id"] = id_
        if params is not None:
            m["params"] = params
        return json.dumps(m)

    def server(fail, answer, lines):
        return b"\x00" + u8(fail) + u16(len(answer)) + answer + "\n".join(lines).encode()

    call = lambda name, args, id_: rpc("tools/call", {"name": name, "arguments": args}, id_)
    return {
        "session": server(0, b"hello\n", [
            rpc("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}),
            rpc("notifications/initialized", None, None),
            rpc("tools/list", {}, 2),
            call("run_command", {"command": "ls", "cwd": "/work", "timeout_ms": 100}, 3),
            call("write_file", {"path": "a.txt", "content": "x"}, 4),
            call("read_file", {"path": "a.txt"}, "s5"),
            call("generate_document", {"spec": {"title": "x"}, "format": "docx"}, 6),
            call("set_sandbox_network", {"allow_hosts": ["pypi.org:443", "*.pythonhosted.org"],
                                         "deny_hosts": ["evil.pypi.org"]}, 8),
            call("set_sandbox_network", {"internet": False}, 9),
            rpc("ping", {}, 7),
        ]),
        "failures_binary": server(0xff, b"\xff\xfe\x00bin\xc3", [
            call("run_command", {"command": "false"}, 1),
            call("read_file", {"path": "b"}, 2),
            call("generate_document", {"spec": {}, "format": "pdf"}, 3),
            call("set_sandbox_network", {"allow_hosts": ["[2001:db8::1]:443"]}, 4),
        ]),
        "bad_messages": server(0, b"", [
            "{", "[]", '{"jsonrpc": "1.0", "id": 1, "method": "x"}',
            '{"jsonrpc": "2.0", "id": {}, "method": "tools/call"}',
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}}',
            rpc("nope", {}, 3), rpc("tools/call", {"name": "run_command",
                                                   "arguments": {"command": 1}}, 4),
        ]),
        "sse_exec": b"\x01" + u16(4096) + u8(3) + u8(5) + u8(1) + u8(30) +
                    b": comment\nevent: stdout\ndata: aGk=\n\nevent: exit\ndata: "
                    b'{"exit_code": 0, "signal": null, "timed_out": false, "truncated": false, '
                    b'"duration_ms": 3}\n\n',
        "sse_too_big": b"\x01" + u16(8) + u8(0) + b"data: 0123456789\ndata: x\r\n\r\n",
        "answer_error": b"\x02" + u16(104) + b'{"error": {"code": "not_found", "message": "no '
                                            b'sandbox sb-1"}}',
        "answer_exec": b"\x02" + u16(0) + b'{"exit_code": null, "signal": 9, "stdout": "", '
                                          b'"stderr": "x", "timed_out": true, "truncated": 1}',
    }


# --- fuzz_snapshot_state -------------------------------------------------------------------------

def sstring(s):
    s = s.encode()
    return u32(len(s)) + s


def blob(b):
    return u64(len(b)) + b


def state_file(template, regions, sections):
    out = b"CARAPACE" + u32(1) + sstring(template)
    out += sstring("GenuineIntel") + u32(6) + u32(143) + u32(8)  # host cpu
    out += u64(3)  # memory generation
    out += u32(len(regions)) + b"".join(u64(s) + u64(n) for s, n in regions)
    for typ, index, version, payload in sections:
        out += u32(typ) + u32(index) + u32(version) + blob(payload)
    return out  # the target appends the checksum


def vcpu_payload(cpuid, msrs):
    out = u32(len(cpuid))
    for function, index, flags, eax, ebx, ecx, edx in cpuid:
        out += struct.pack("<7I", function, index, flags, eax, ebx, ecx, edx) + bytes(12)
    out += u32(0)  # mp state: runnable
    out += bytes(144) + bytes(312) + bytes(4096)  # regs, sregs, xsave
    out += u32(1) + u32(0) + struct.pack("<IIQ", 0, 0, 7) + bytes(392 - 24)  # xcrs: XCR0 = 7
    out += bytes(128) + bytes(1024)  # debugregs, lapic
    out += u32(len(msrs)) + b"".join(u32(i) + u64(v) for i, v in msrs)
    out += bytes(64)  # vcpu events
    return out


def snapshot_seeds():
    mib = 1 << 20
    vm = bytes(512 * 3 + 112) + u64(123456789)
    serial = bytes([1, 3, 8, 0, 0xc7, 1, 0]) + b"\x01"
    cpuid = [(0, 0, 0, 0xd, 0x756e6547, 0x6c65746e, 0x49656e69),
             (1, 0, 0, 0x000806f8, 0, 0x80000000, 0x178bfbff),
             (7, 0, 1, 0, 0x1, 0, 0)]
    vcpu = vcpu_payload(cpuid, [(0x10, 5), (0xc0000080, 0xd01)])
    machine = [(2, 0, 1, vm), (3, 0, 1, vcpu), (4, 0, 1, serial)]
    return {
        "machine_16m_1vcpu": b"\x00" + state_file("baseline", [(0, 16 * mib)], machine),
        "machine_4g_2vcpus_virtio": b"\x00" + state_file(
            "host", [(0, 3 * 1024 * mib), (4 * 1024 * mib, 1024 * mib)],
            machine + [(3, 1, 1, vcpu), (5, 2, 1, b"\x01\x02\x03"), (5, 0, 7, b"")]),
        "machine_gap_in_vcpus": b"\x00" + state_file("baseline", [(0, 16 * mib)],
                                                     machine + [(3, 2, 1, vcpu)]),
        "container_only": b"\x00" + state_file("x", [(0, 4096), (8192, 4096)],
                                               [(0x80000000, 0, 1, b"abc"), (1, 0, 1, b"")]),
        "container_bad_layout": b"\x00" + state_file("baseline", [(4096, 4096), (0, 4096)], []),
        "bad_checksum_kept": b"\x01" + state_file("baseline", [(0, 16 * mib)], []) + u64(0),
        "version_2": b"\x00" + b"CARAPACE" + u32(2) + bytes(16),
    }


# --- fuzz_elf_loader -----------------------------------------------------------------------------

PT_LOAD, PT_NOTE = 1, 4


def elf(entry, phdrs, data=b"", phnum=None, machine=62, cls=2):
    """An ELF64 executable: header, program headers, then `data` at offset 0x1000."""
    phoff = 64
    ident = b"\x7fELF" + bytes([cls, 1, 1, 0]) + bytes(8)
    n = len(phdrs) if phnum is None else phnum
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, entry, phoff, 0, 0, 64, 56, n, 0,
                             0, 0)
    ph = b"".join(struct.pack("<IIQQQQQQ", t, 5, off, paddr, paddr, filesz, memsz, 0x1000)
                  for t, off, paddr, filesz, memsz in phdrs)
    image = eh + ph
    image += bytes(0x1000 - len(image)) + data
    return image


def pvh_note(entry, descsz=4):
    desc = struct.pack("<I", entry) if descsz == 4 else struct.pack("<Q", entry)
    return struct.pack("<III", 4, descsz, 18) + b"Xen\x00" + desc


def elf_seeds():
    seed = lambda flags, initrd, image: u8(flags) + u32(initrd) + image
    code = b"\xf4" * 64
    note = pvh_note(0x100000)
    return {
        "linux_one_segment": seed(0, 0x10000, elf(0x100000, [(PT_LOAD, 0x1000, 0x100000, 64,
                                                             0x2000)], code)),
        "pvh_note_two_regions": seed(1, 0x1000, elf(0x200000, [
            (PT_NOTE, 0x1000, 0, len(note), len(note)),
            (PT_LOAD, 0x1000 + len(note), 0x100000, 64, 64),
            (PT_LOAD, 0x1000, 0x200000, len(note), 0x1000)], note + code)),
        "pvh_note_8_bytes": seed(0, 0, elf(0, [(PT_NOTE, 0x1000, 0, 20, 20),
                                               (PT_LOAD, 0x1000, 0x100000, 20, 20)],
                                           pvh_note(0x100004, 8))),
        "overlap": seed(0, 0, elf(0x100000, [(PT_LOAD, 0x1000, 0x100000, 64, 0x100),
                                             (PT_LOAD, 0x1000, 0x1000f0, 64, 64)], code)),
        "low_segment_allowed": seed(4, 0x100000, elf(0x1000, [(PT_LOAD, 0x1000, 0x1000, 64,
                                                              64)], code)),
        "straddles_hole": seed(0, 0, elf(0x100000, [(PT_LOAD, 0x1000, 0x170000, 64, 0x20000)],
                                         code)),
        "wrapping_segment": seed(0, 0, elf(0x100000, [(PT_LOAD, 0x1000, 0xfffffffffffff000,
                                                       64, 0x2000)], code)),
        "too_many_phdrs": seed(8, 0, elf(0x100000, [(PT_LOAD, 0x1000, 0x100000, 64, 64)] * 5,
                                         code)),
        "elf32": seed(0, 0, elf(0x100000, [], b"", cls=1)),
        "truncated": seed(0, 0, b"\x7fELF\x02\x01\x01"),
    }


# --- fuzz_cmdline --------------------------------------------------------------------------------

def cmdline_seeds():
    def builder(capacity, addr, pieces):
        return b"\x00" + u16(capacity) + u32(addr) + b"".join(u8(len(p)) + p for p in pieces)

    args = lambda mode, a: u8(mode) + b"\x00".join(x.encode() for x in a)
    return {
        "builder_fits": builder(256, 0x1000, [b"console=ttyS0", b"  reboot=k  ",
                                              b"virtio_mmio.device=4K@0xd0000000:5"]),
        "builder_full": builder(8, 0xfff8, [b"1234567", b"x"]),
        "builder_nul_straddle": builder(4096, 0x0fff0, [b"a\x00b", b"panic=1 " * 4]),
        "kernel_cmdline": b"\x01console=ttyS0 carapace.token=00ff00ff\tcarapace.selftest=net-1 "
                          b"init=/usr/sbin/carapace-agent",
        "kernel_cmdline_bad": b"\x01carapace.token=xyz carapace.selftest=../x carapace.token=",
        "agent_args": args(2, ["--listen", "unix:/run/a.sock", "--token", "00ff", "--root",
                               "/work", "--max-file-bytes", "1048576", "--max-connections",
                               "4"]),
        "agent_args_bad": args(2, ["--listen", "vsock:99999999999", "--token-fd", "3",
                                   "--token", "ab", "--bogus"]),
        "run_args": args(3, ["--kernel", "/boot/vmlinux", "--initrd", "/boot/initrd",
                             "--cmdline", "console=ttyS0 quiet", "--mem", "256", "--vcpus",
                             "2", "--boot", "pvh", "--console", "file:/tmp/c,max=4096",
                             "--timeout", "1.5", "--cpu-template", "baseline"]),
        "run_args_bad": args(3, ["--kernel", "k", "--mem", "18446744073709551616",
                                 "--cmdline", "a", "--cmdline", "b"]),
    }


# --- fuzz_egress_rules ---------------------------------------------------------------------------

def egress_seeds():
    rule = lambda text: b"\x00" + text.encode()
    dest = lambda port, host: b"\x01" + u16(port) + host.encode()
    addr = lambda text: b"\x02" + text.encode()
    policy = lambda entries: b"\x03" + "\n".join(entries).encode()
    return {
        "rule_name_port": rule("PyPI.org.:443"),
        "rule_wildcard": rule("*.pythonhosted.org"),
        "rule_any_port": rule("*:443"),
        "rule_network_v6_port": rule("[2001:db8::]/32:443"),
        "rule_host_bits": rule("10.1.0.0/8:5432"),
        "rule_idna": rule("*.B\u00fccher.example"),
        "rule_bad_star": rule("a.*.b"),
        "dest_name": dest(443, "Files.PythonHosted.org."),
        "dest_literal_v6": dest(80, "[::ffff:169.254.169.254]"),
        "dest_nat64": dest(443, "64:ff9b::7f00:1"),
        "dest_short_ipv4": dest(80, "0x7f.1"),
        "dest_port_zero": dest(0, "pypi.org"),
        "addr_mapped": addr("::ffff:127.0.0.1"),
        "addr_6to4_net": addr("2002:7f00:1::/48"),
        "addr_octal": addr("0177.0.0.1"),
        "addr_zone": addr("fe80::1%eth0"),
        "policy_mixed": policy(["pypi.org:443", "*.pythonhosted.org", "10.0.0.0/8",
                                "!evil.pypi.org", "!10.9.0.0/16", "*"]),
    }


# --- fuzz_proxy_request --------------------------------------------------------------------------
def proxy_seeds():
    def head(text, max_headers=32):
        return u8(max_headers) + text.encode()
    return {
        "connect": head("CONNECT a.example.com:443 HTTP/1.1\r\nHost: a.example.com:443\r\n"),
        "connect_v6": head("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n"),
        "connect_denied": head("CONNECT evil.example.com:443 HTTP/1.1\r\n"),
        "forward": head("GET http://files.test/simple/?q=1 HTTP/1.1\r\nHost: other\r\n"
                        "Connection: X-A\r\nX-A: 1\r\nProxy-Connection: keep-alive\r\n"),
        "forward_body": head("POST HTTP://files.test:8080 HTTP/1.0\r\nContent-Length: 3\r\n"),
        "userinfo": head("GET http://u:p@files.test/ HTTP/1.1\r\n"),
        "https": head("GET https://files.test/ HTTP/1.1\r\n"),
        "idna": head("CONNECT xn--bcher-kva.example.com:443 HTTP/1.1\r\n"),
        "numeric": head("CONNECT 0x7f.0.0.1:443 HTTP/1.1\r\n"),
    }


# --- fuzz_socks_request --------------------------------------------------------------------------
def socks_seeds():
    greeting = b"\x05\x01\x00"

    def domain(name, port=443, cmd=1):
        return bytes([5, cmd, 0, 3, len(name)]) + name + struct.pack(">H", port)

    def v4(addr, port=443):
        return bytes([5, 1, 0, 1]) + bytes(addr) + struct.pack(">H", port)

    v6_doc = bytes([0x20, 0x01, 0x0d, 0xb8] + [0] * 11 + [1])
    return {
        "connect_name": greeting + domain(b"a.example.com"),
        "connect_then_data": greeting + domain(b"files.test", 80) + b"\x16\x03\x01\x00\x05hello",
        "connect_denied": greeting + domain(b"evil.example.com"),
        "connect_idna": greeting + domain(b"xn--bcher-kva.example.com"),
        "connect_numeric": greeting + domain(b"0x7f.0.0.1"),
        "connect_literal_text": greeting + domain(b"127.0.0.1", 8080),
        "connect_v4": greeting + v4([203, 0, 113, 7]),
        "connect_v6": greeting + bytes([5, 1, 0, 4]) + v6_doc + struct.pack(">H", 443),
        "connect_long_name": greeting + domain(b"a" * 63 + b"." + b"b" * 63 + b"." + b"c" * 63 +
                                               b"." + b"d" * 49 + b"." + b"example.com"),
        "greeting_many_methods": bytes([5, 255]) + bytes([2] * 254) + b"\x00" + domain(b"x.test"),
        "greeting_userpass_only": b"\x05\x01\x02",
        "greeting_no_methods": b"\x05\x00",
        "greeting_bad_version": b"\x04\x01\x00",
        "request_bind": greeting + domain(b"a.example.com", 443, cmd=2),
        "request_udp": greeting + domain(b"a.example.com", 443, cmd=3),
        "request_bad_atyp": greeting + b"\x05\x01\x00\x02\x00\x00",
        "request_rsv": greeting + b"\x05\x01\x01\x01\x7f\x00\x00\x01\x00\x50",
        "request_empty_name": greeting + b"\x05\x01\x00\x03\x00\x01\xbb",
        "request_port_zero": greeting + v4([203, 0, 113, 7], 0),
        "request_truncated": greeting + b"\x05\x01\x00\x03\x0aallo",
    }


# --- fuzz_credential_rewrite ---------------------------------------------------------------------
# Destinations by index: 0 api.github.com:443, 1 api.github.com:80, 2 www.example.com:443,
# 3 example.com:8080, 4 example.com:443, 5 a.b.example.com:80, 6 evil.example:443,
# 7 203.0.113.7:80. "@G" and "@E" are the two credentials' sentinels.
def credential_seeds():
    def head(dest, target, *headers):
        return u8(0) + u8(dest) + "\n".join([target, *headers]).encode()

    def name(text):
        return u8(1) + text.encode()

    github = "carapace-cred-" + "1" * 32
    return {
        "header_own_host": head(0, "/user", "Host: api.github.com", "Authorization: Bearer @G"),
        "header_any_port": head(1, "/user", "authorization:  Bearer @G  "),
        "header_spelled_out": head(0, "/", "Authorization: Bearer " + github),
        "header_other_host": head(6, "/collect", "Authorization: Bearer @G"),
        "header_foreign_key": head(0, "/user", "Authorization: Bearer ghp_mine"),
        "header_twice": head(0, "/", "Authorization: Bearer @G", "Authorization: Bearer x"),
        "header_outside_slot": head(0, "/repos/@G", "Accept: */*"),
        "query_own_host": head(2, "/v1?a=1&api_key=@E;b=2"),
        "query_port_rule": head(3, "/?api_key=@E"),
        "query_wrong_port": head(4, "/?api_key=@E"),
        "query_encoded_name": head(2, "/?api%5Fkey=mine"),
        "query_no_value": head(2, "/?api_key"),
        "query_encoded_sentinel": head(6, "/?q=carapace-cred-%31%311111111111111111111111111111"),
        "query_split": head(7, "/?a=carapace-cred-1111&b=1111111111111111111111111111"),
        "query_upper": head(5, "/?q=CARAPACE-CRED-FFFF"),
        "both_on_other_host": head(6, "/?api_key=@E", "Authorization: Bearer @G"),
        "malformed_target": head(0, "http://api.github.com/", "Authorization: Bearer @G"),
        "malformed_header": head(0, "/", "Bad Name: @G"),
        "no_credential": head(7, "/simple/", "Accept: text/html"),
        "name_clean": name("api.github.com:443"),
        "name_sentinel": name("@G.evil.example:443"),
        "name_encoded": name("carapace-cred-%32222222222222222222222222222222.example"),
        "name_prefix": name("CARAPACE-CRED-x.example"),
    }


if __name__ == "__main__":
    write("fuzz_http_request", http_seeds())
    write("fuzz_service_requests", service_seeds())
    write("fuzz_agent_protocol", agent_seeds())
    write("fuzz_mcp", mcp_seeds())
    write("fuzz_snapshot_state", snapshot_seeds())
    write("fuzz_elf_loader", elf_seeds())
    write("fuzz_cmdline", cmdline_seeds())
    write("fuzz_egress_rules", egress_seeds())
    write("fuzz_proxy_request", proxy_seeds())
    write("fuzz_socks_request", socks_seeds())
    write("fuzz_credential_rewrite", credential_seeds())
