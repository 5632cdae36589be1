#!/usr/bin/python3
"""The sandbox-service part of tools/demo: talks to a running `carapace serve` over its Unix
socket (docs/api.md) with the standard library only, and prints the time of each step.

    tools/demo_flow.py --socket SOCK --flow microvm-image --kernel VMLINUX --rootfs IMG --out DIR
    tools/demo_flow.py --socket SOCK --flow microvm-testguest --kernel TESTGUEST
    tools/demo_flow.py --socket SOCK --flow process-docs --rootfs IMG --out DIR
    tools/demo_flow.py --serve CARAPACE [--config JSON] --flow ...   (starts its own daemon on a
                      private socket and state dir, and stops it at the end: how tools/demo runs
                      the microvm-image flow inside tools/nested-kvm's L1)

microvm-image     (VMX/SVM hosts) template from the real kernel + image, a sandbox from the pool,
                  DOCX/PPTX/XLSX/PDF from the example spec through the API, copied to DIR.
microvm-testguest (any KVM host) the same API flow on the freestanding test guest, whose agent
                  answers ping/post_restore: template, pool, pause/resume, fork, destroy.
process-docs      the documents through the process back end (the image's agent and docgen in a
                  jail on the host: weaker isolation than a microVM).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SPEC = os.path.join(REPO, "guest", "docgen", "examples", "report.json")
FORMATS = ("docx", "pptx", "xlsx", "pdf")
sys.path.insert(0, os.path.join(REPO, "clients", "python"))

from carapace_client.transport import UnixHTTPConnection  # noqa: E402


class Api:
    def __init__(self, path):
        self.path = path

    def call(self, method, target, body=None, raw=False):
        conn = UnixHTTPConnection(self.path, timeout=900)
        headers = {}
        data = None
        if isinstance(body, bytes):
            data = body
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, target, body=data, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        if resp.status >= 400:
            try:
                err = json.loads(payload)["error"]
                msg = f"{err['code']}: {err['message']}"
            except (ValueError, KeyError, TypeError):
                msg = payload[:200].decode(errors="replace")
            raise SystemExit(f"demo: {method} {target} -> HTTP {resp.status}: {msg}")
        if raw:
            return payload
        return json.loads(payload) if payload else None


def step(label, fn):
    t0 = time.monotonic()
    result = fn()
    print(f"  {label:<58} {1000 * (time.monotonic() - t0):9.1f} ms", flush=True)
    return result


# --slow (an emulated hypervisor, e.g. tools/nested-kvm's L1) multiplies the waits by this.
SLOW_FACTOR = 10
WAIT_SCALE = 1


def wait_pool(api, tpl, want, timeout=120):
    timeout *= WAIT_SCALE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if api.call("GET", f"/templates/{tpl}")["pool"]["ready"] >= want:
            return
        time.sleep(0.02)
    raise SystemExit(f"demo: the pool of {tpl} did not reach {want} within {timeout} s")


def documents(api, sb, out):
    with open(SPEC) as f:
        spec = json.load(f)
    # The example's image: docgen resolves it in the sandbox's /work, so upload it first.
    with open(os.path.join(os.path.dirname(SPEC), "chart.png"), "rb") as f:
        chart = f.read()
    step("PUT /sandboxes/{id}/files?path=chart.png",
         lambda: api.call("PUT", f"/sandboxes/{sb}/files?path=chart.png", chart, raw=True))
    os.makedirs(out, exist_ok=True)
    for fmt in FORMATS:
        data = step(f"POST /sandboxes/{sb}/documents ({fmt})",
                    lambda: api.call("POST", f"/sandboxes/{sb}/documents",
                                     {"spec": spec, "format": fmt}, raw=True))
        path = os.path.join(out, f"report.{fmt}")
        with open(path, "wb") as f:
            f.write(data)
        print(f"    -> {path} ({len(data)} bytes)")


def flow_image(api, args):
    boot = "console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k panic=-1"
    tpl = step("POST /templates (boot real kernel + image, agent, snapshot)",
               lambda: api.call("POST", "/templates", {
                   "isolation": "microvm", "kernel": args.kernel, "rootfs": args.rootfs,
                   "boot_args": boot, "mem_mib": 1024, "vcpus": 1, "pool_size": 2,
                   "agent_timeout_s": 60 * WAIT_SCALE}))["id"]
    step("pool filled (2 restored VMs ready)", lambda: wait_pool(api, tpl, 2))
    sb = step("POST /sandboxes (from the pool)",
              lambda: api.call("POST", "/sandboxes", {"template": tpl, "timeout_s": 1800}))
    print(f"    sandbox {sb['id']} from_pool={sb.get('from_pool')}")
    r = step("exec: uname -a", lambda: api.call("POST", f"/sandboxes/{sb['id']}/exec",
                                                 {"argv": ["uname", "-a"]}))
    print(f"    {r['stdout'].strip()}")
    documents(api, sb["id"], args.out)
    step("DELETE /sandboxes/{id}", lambda: api.call("DELETE", f"/sandboxes/{sb['id']}"))
    step("DELETE /templates/{id}", lambda: api.call("DELETE", f"/templates/{tpl}"))


def flow_testguest(api, args):
    tpl = step("POST /templates (boot test guest, wait for agent, snapshot)",
               lambda: api.call("POST", "/templates", {
                   "isolation": "microvm", "kernel": args.kernel,
                   "boot_args": "testguest.run=agent-ping", "mem_mib": 64, "vcpus": 1,
                   "pool_size": 2}))["id"]
    step("pool filled (2 restored VMs ready, paused)", lambda: wait_pool(api, tpl, 2))
    sb = step("POST /sandboxes (from the pool: resume, new token, agent answers)",
              lambda: api.call("POST", "/sandboxes", {"template": tpl, "timeout_s": 120}))
    print(f"    sandbox {sb['id']} from_pool={sb.get('from_pool')} "
          f"create_ms={sb.get('create_ms')}")
    step("POST /sandboxes/{id}/pause", lambda: api.call("POST", f"/sandboxes/{sb['id']}/pause"))
    step("POST /sandboxes/{id}/resume", lambda: api.call("POST", f"/sandboxes/{sb['id']}/resume"))
    kids = step("POST /sandboxes/{id}/fork {count: 2}",
                lambda: api.call("POST", f"/sandboxes/{sb['id']}/fork", {"count": 2}))
    print("    children: " + ", ".join(c["id"] for c in kids["children"]))
    listing = api.call("GET", "/sandboxes")["sandboxes"]
    print(f"    GET /sandboxes: {len(listing)} live")
    for c in kids["children"]:
        step(f"DELETE /sandboxes/{c['id']}", lambda c=c: api.call("DELETE", f"/sandboxes/{c['id']}"))
    step(f"DELETE /sandboxes/{sb['id']}", lambda: api.call("DELETE", f"/sandboxes/{sb['id']}"))
    metrics = api.call("GET", "/metrics", raw=True).decode()
    wanted = ("carapace_sandboxes ", "carapace_pool_ready", "carapace_pool_hits_total",
              "carapace_pool_misses_total")
    print("    GET /metrics (excerpt):")
    for line in metrics.splitlines():
        if line.startswith(wanted):
            print("      " + line)
    step("DELETE /templates/{id}", lambda: api.call("DELETE", f"/templates/{tpl}"))


def flow_process_docs(api, args):
    tpl = step("POST /templates (isolation process: the image's agent in a jail)",
               lambda: api.call("POST", "/templates", {
                   "isolation": "process", "rootfs": args.rootfs, "mem_mib": 1024,
                   "pool_size": 1}))["id"]
    step("pool filled", lambda: wait_pool(api, tpl, 1))
    sb = step("POST /sandboxes (from the pool)",
              lambda: api.call("POST", "/sandboxes", {"template": tpl, "timeout_s": 600}))
    documents(api, sb["id"], args.out)
    step("DELETE /sandboxes/{id}", lambda: api.call("DELETE", f"/sandboxes/{sb['id']}"))
    step("DELETE /templates/{id}", lambda: api.call("DELETE", f"/templates/{tpl}"))


def start_daemon(exe, config):
    """`carapace serve` on a private socket and state dir; returns (socket, stop)."""
    work = tempfile.mkdtemp(prefix="carapace-demo-")
    sock = os.path.join(work, "carapace.sock")
    argv = [exe, "serve", "--socket", sock, "--state-dir", os.path.join(work, "state")]
    if config:
        path = os.path.join(work, "config.json")
        with open(path, "w") as f:
            json.dump(json.loads(config), f)
        argv += ["--config", path]
    log = open(os.path.join(work, "serve.log"), "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def stop():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)

    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(log.name, "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
            stop()
            raise SystemExit(f"demo: the daemon did not start:\n{tail}")
        time.sleep(0.02)
    return sock, stop


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--socket")
    p.add_argument("--serve", metavar="CARAPACE", help="start this carapace's daemon first")
    p.add_argument("--config", help="the daemon's config (JSON) with --serve")
    p.add_argument("--slow", action="store_true",
                   help=f"the hypervisor is emulated: every wait x{SLOW_FACTOR}")
    p.add_argument("--flow", required=True,
                   choices=["microvm-image", "microvm-testguest", "process-docs"])
    p.add_argument("--kernel")
    p.add_argument("--rootfs")
    p.add_argument("--out", default="out")
    args = p.parse_args()
    global WAIT_SCALE
    WAIT_SCALE = SLOW_FACTOR if args.slow else 1
    if bool(args.socket) == bool(args.serve):
        p.error("give exactly one of --socket and --serve")
    stop = None
    if args.serve:
        args.socket, stop = start_daemon(args.serve, args.config)
    try:
        api = Api(args.socket)
        health = api.call("GET", "/health")
        print(f"  daemon: {json.dumps(health)}")
        {"microvm-image": flow_image, "microvm-testguest": flow_testguest,
         "process-docs": flow_process_docs}[args.flow](api, args)
    finally:
        if stop:
            stop()


if __name__ == "__main__":
    sys.exit(main())
