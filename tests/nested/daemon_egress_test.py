#!/usr/bin/python3
"""Egress of microVM sandboxes of the real image through `carapace serve` as root (jailed VMMs;
label `nested`: inside tools/nested-kvm's L1, or directly on a VMX/SVM host).

The guest has no NIC: its agent forwards 127.0.0.1:3128 over vsock to the host's port 1080, where
the daemon's per-sandbox proxy listens on the VMM's `<uds>_1080`. Upstreams live in a network
namespace (tests/egress/egress_upstreams.py). Shown: an allowed name through curl and pip, a
denied and an unlisted one refused, no route around the proxy; a live policy change; fork into
two children with different allowlists, each reaching only its own host, while the parent's open
tunnel survives the fork and the children's copies of it do not; a sandbox from the refilled
pool under its own policy; one without a policy has no proxy; the transparent mode; a
credential injected on the host while the guest's environment and RAM hold only its sentinel;
nothing left once destroyed.

Environment: as tests/nested/daemon_image_test.py.
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "service"))
sys.path.insert(0, os.path.join(REPO, "tests", "egress"))

from daemon_harness import TIMEOUT_SCALE, Daemon, cc  # noqa: E402
from egress_proxy_cli_test import make_test_ca  # noqa: E402
from egress_upstreams import NS_IP, Upstreams, egress_proxy_pids  # noqa: E402

EXEC_S = 30 * TIMEOUT_SCALE
CURL = "curl -sS --fail --max-time %d " % int(20 * TIMEOUT_SCALE)

# Started in the background inside the parent: one CONNECT tunnel to the echo server through the
# proxy, checked once, then held until /tmp/go appears; then one more round trip, whose outcome
# goes to /tmp/result ("alive" or "dead: ...").
HOLDER = r'''
import os, socket, time
s = socket.create_connection(("127.0.0.1", 3128), timeout=60)
s.sendall(b"CONNECT allowed.test:7007 HTTP/1.1\r\nHost: allowed.test:7007\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
assert head.startswith(b"HTTP/1.1 200"), head
s.sendall(b"one"); assert s.recv(16) == b"one"
def publish(path, text):
    # Written whole, then renamed: the shell polling for the file never sees it empty.
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
publish("/tmp/held", "yes")
while not os.path.exists("/tmp/go"):
    time.sleep(0.05)
try:
    s.settimeout(20)
    s.sendall(b"two")
    got = s.recv(16)
    result = "alive" if got == b"two" else "dead: %r" % got
except OSError as e:
    result = "dead: %s" % e
publish("/tmp/result", result)
'''


def with_descendants(pid):
    """`pid` and every process below it (a jailed VMM runs under its jailer)."""
    parent = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    parent[int(p)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return out


def guest_ram_holds(pid, needles, mem_mib):
    """Which of `needles` are in the guest RAM of the VMM `pid` (or a process below it): every
    mapping at least `mem_mib` MiB long, read through /proc/PID/mem (root)."""
    found = set()
    for p in with_descendants(pid):
        found |= mappings_hold(p, needles, mem_mib)
    return found


def mappings_hold(pid, needles, mem_mib):
    found = set()
    wanted = [n.encode() for n in needles]
    overlap = max(len(w) for w in wanted)
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if hi - lo < mem_mib << 20:
                continue
            tail = b""
            for at in range(lo, hi, 16 << 20):
                mem.seek(at)
                try:
                    chunk = tail + mem.read(min(16 << 20, hi - at))
                except OSError:
                    tail = b""
                    continue
                for n, w in zip(needles, wanted):
                    if w in chunk:
                        found.add(n)
                tail = chunk[-overlap:]
    return found


def say(msg):
    print(f"daemon_egress_test: {msg}", flush=True)


class DaemonEgress(unittest.TestCase):
    def test_microvm_sandboxes_reach_only_what_they_are_allowed(self):
        if os.geteuid() != 0:
            self.fail("needs root: jailed VMMs, network and mount namespaces")
        # A test CA and a certificate for allowed.test, for the TLS server on :8443; the
        # daemon's proxies trust that CA for origins (egress_ca_file).
        ca_dir = tempfile.mkdtemp(prefix="carapace-egress-ca-")
        self.addCleanup(shutil.rmtree, ca_dir, True)
        ca, leaf, key = make_test_ca(ca_dir, "allowed.test")
        up = Upstreams("cne", tls=(leaf, key)).start()
        self.addCleanup(up.stop)
        daemon = Daemon(prefix=up.daemon_prefix(), config={"egress_ca_file": ca})
        self.addCleanup(daemon.stop)
        daemon.start()
        try:
            self.flow(daemon, up)
        except BaseException:
            print("---- daemon log ----\n" + daemon.log_tail(8000), file=sys.stderr, flush=True)
            raise

    def run_ok(self, sb, cmd, what, timeout=EXEC_S):
        r = sb.exec(cmd, timeout=timeout)
        self.assertEqual(r.exit_code, 0, f"{what}: exit {r.exit_code}\n{r.stdout}\n{r.stderr}")
        return r

    def reaches(self, sb, host):
        r = sb.exec(CURL + f"http://{host}:8080/probe", timeout=EXEC_S)
        return r.exit_code == 0 and f"host={host}:8080" in r.stdout

    def terminated_https(self, sb, secret):
        """curl over HTTPS through CONNECT to a credentialed host gets the sentinel replaced
        inside TLS that the proxy terminated, trusting only the bundle the agent was given."""
        r = self.run_ok(sb, 'echo "$SSL_CERT_FILE"; cat "$SSL_CERT_FILE" | '
                            "grep -c 'BEGIN CERTIFICATE'", "the trust bundle")
        bundle, count = r.stdout.split()
        self.assertTrue(bundle.endswith("/ca-bundle.pem") and int(count) >= 1, r.stdout)
        r = self.run_ok(sb, 'curl -sS -v --max-time 60 -H "X-Api-Key: $API_KEY" '
                            "https://allowed.test:8443/headers 2>&1",
                        "HTTPS to the credential's host", timeout=2 * EXEC_S)
        self.assertIn("X-Api-Key: " + secret, r.stdout)
        self.assertIn("carapace egress " + sb.id, r.stdout)  # the proxy's leaf, under its CA

    def flow(self, daemon, up):
        c = daemon.client
        t0 = time.monotonic()
        tpl = cc.Template.create(
            isolation="microvm", kernel=os.environ["CARAPACE_KERNEL"],
            rootfs=os.environ["CARAPACE_ROOTFS"],
            boot_args="console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k "
                      "panic=-1", mem_mib=1024, pool_size=1, name="nested-egress",
            agent_timeout_s=int(60 * TIMEOUT_SCALE), client=c, timeout=900 * TIMEOUT_SCALE)
        say(f"template built in {time.monotonic() - t0:.1f} s")

        def create(network=None):
            body = {"template": tpl.id, "timeout_s": 3600}
            if network is not None:
                body["network"] = network
            sb = cc.Sandbox(c.json("POST", "/sandboxes", body, timeout=300 * TIMEOUT_SCALE), c)
            self.addCleanup(sb.kill)
            return sb

        parent = create({"allow_hosts": ["allowed.test:8080", "allowed.test:7007"]})
        self.assertEqual(parent.info["network"]["proxy"], "http://127.0.0.1:3128")
        r = self.run_ok(parent, CURL + "http://allowed.test:8080/hello", "curl allowed")
        self.assertEqual(r.stdout, "path=/hello host=allowed.test:8080")
        r = self.run_ok(parent, "python3 -m pip download --no-deps --disable-pip-version-check "
                                "--no-cache-dir --trusted-host allowed.test --index-url "
                                "http://allowed.test:8080/simple/ -d /tmp/dl demo-pkg && ls /tmp/dl",
                        "pip download", timeout=4 * EXEC_S)
        self.assertIn("demo_pkg-1.0-py3-none-any.whl", r.stdout)
        for host in ("other.test", "sneaky.test", NS_IP):
            r = parent.exec(f"curl -sS --max-time 20 -D - -o /dev/null http://{host}:8080/",
                            timeout=EXEC_S)
            self.assertIn(" 403 ", (r.stdout.splitlines() or [""])[0], host + ": " + r.stdout)
        r = parent.exec(f"curl -sS --max-time 10 --noproxy '*' http://{NS_IP}:8080/",
                        timeout=EXEC_S)
        self.assertNotEqual(r.exit_code, 0, r.stdout)
        # Transparent mode: the name, with the proxy variables ignored, through the agent's stub
        # resolver and a stand-in address.
        r = self.run_ok(parent, "getent hosts allowed.test && curl -sS --fail --max-time 20 "
                                "--noproxy '*' http://allowed.test:8080/t", "transparent mode")
        self.assertTrue(r.stdout.startswith("127.128."), r.stdout)
        self.assertIn("path=/t host=allowed.test:8080", r.stdout)
        say("parent: allowed, refused, transparent and no route as expected")

        # An open tunnel in the parent, then fork: one child with its own allowlist, one with
        # the parent's.
        parent.files.write("/work/holder.py", HOLDER)
        self.run_ok(parent, "nohup python3 /work/holder.py >/tmp/holder.log 2>&1 & "
                            "for i in $(seq 200); do [ -f /tmp/held ] && exit 0; sleep 0.1; done; "
                            "cat /tmp/holder.log; exit 1", "the tunnel held open")
        other = [cc.Sandbox(i, c) for i in c.json(
            "POST", f"/sandboxes/{parent.id}/fork",
            {"count": 1, "network": {"allow_hosts": ["other.test:8080"]}},
            timeout=300 * TIMEOUT_SCALE)["children"]]
        same = [cc.Sandbox(i, c) for i in c.json(
            "POST", f"/sandboxes/{parent.id}/fork", {"count": 1},
            timeout=300 * TIMEOUT_SCALE)["children"]]
        for child in other + same:
            self.addCleanup(child.kill)
        other, same = other[0], same[0]
        self.assertEqual(other.info["network"]["allow_hosts"], ["other.test:8080"])
        self.assertEqual(same.info["network"]["allow_hosts"],
                         ["allowed.test:8080", "allowed.test:7007"])
        self.assertTrue(self.reaches(other, "other.test"))
        self.assertFalse(self.reaches(other, "allowed.test"))
        self.assertTrue(self.reaches(same, "allowed.test"))
        self.assertFalse(self.reaches(same, "other.test"))
        # The tunnel: alive in the parent, gone in each child's copy of the holder.
        for sb, want in ((parent, "alive"), (other, "dead"), (same, "dead")):
            r = self.run_ok(sb, "touch /tmp/go; for i in $(seq 300); do "
                                "[ -f /tmp/result ] && break; sleep 0.1; done; cat /tmp/result",
                            "the tunnel's fate", timeout=2 * EXEC_S)
            self.assertTrue(r.stdout.startswith(want), f"{sb.id}: {r.stdout}")
        say("fork: each child reaches only its own hosts; the parent's tunnel stayed its own")

        # Live change on the parent; a sandbox from the refilled pool with its own policy; one
        # without any.
        c.json("PUT", f"/sandboxes/{parent.id}/network", {"allow_hosts": ["other.test"]})
        self.assertTrue(self.reaches(parent, "other.test"))
        self.assertFalse(self.reaches(parent, "allowed.test"))
        deadline = time.monotonic() + 300 * TIMEOUT_SCALE
        while c.json("GET", f"/templates/{tpl.id}")["pool"]["ready"] < 1:
            self.assertLess(time.monotonic(), deadline, "the pool did not refill")
            time.sleep(0.2)
        pooled = create({"allow_hosts": ["denied.test:8080"]})
        self.assertTrue(pooled.info["from_pool"], pooled.info)
        self.assertTrue(self.reaches(pooled, "denied.test"))
        self.assertFalse(self.reaches(pooled, "allowed.test"))
        none = create()
        self.assertIsNone(none.info["network"]["proxy"])
        self.assertFalse(self.reaches(none, "allowed.test"))
        r = none.exec("env | grep -ci _proxy=", timeout=EXEC_S)
        self.assertEqual(r.stdout.strip(), "0")
        say("live change, pooled sandbox and no-policy sandbox as expected")

        # Credentials: the secret reaches its host from inside the VM and is nowhere in the
        # guest -- not in its environment, not in its RAM (read through the VMM's mapping of it;
        # the sentinel, which is there, shows the scan can find what it looks for).
        secret = "nested-secret-" + os.urandom(12).hex()
        cred = create({"allow_hosts": ["allowed.test:8080", "allowed.test:8443"],
                       "credentials": [{"hosts": ["allowed.test:8080", "allowed.test:8443"],
                                        "env": "API_KEY", "header": "X-Api-Key: {secret}",
                                        "secret": secret}]})
        sentinel = self.run_ok(cred, 'printf %s "$API_KEY"', "the sentinel").stdout
        self.assertTrue(sentinel.startswith("carapace-cred-"), sentinel)
        r = self.run_ok(cred, CURL + '-H "X-Api-Key: $API_KEY" http://allowed.test:8080/record',
                        "a credentialed request")
        self.assertEqual(r.stdout, "recorded")
        self.assertIn("X-Api-Key: " + secret, up.recorded())
        found = guest_ram_holds(cred.info["backend"]["pid"], [secret, sentinel], 1024)
        self.assertEqual(found, {sentinel}, "the secret is in the guest's RAM" if secret in found
                         else "the scan did not find the sentinel: it proves nothing")
        say("credentials: injected on the host; the guest's env and RAM hold only the sentinel")
        self.terminated_https(cred, secret)
        say("credentials over HTTPS: the proxy terminated TLS under its CA, which the VM trusts")
        # Fork: a child gets no secret unless the fork request names it; one that does gets
        # its own sentinel.
        bare = [cc.Sandbox(i, c) for i in c.json(
            "POST", f"/sandboxes/{cred.id}/fork", {"count": 1},
            timeout=300 * TIMEOUT_SCALE)["children"]][0]
        self.addCleanup(bare.kill)
        self.assertEqual(bare.info["network"]["credentials"], [])
        self.assertEqual(bare.exec('printf %s "$API_KEY"', timeout=EXEC_S).stdout, "")
        r = bare.exec(f'curl -sS --max-time 20 -D - -o /dev/null -H "X-Api-Key: {sentinel}" '
                      "http://allowed.test:8080/record", timeout=EXEC_S)
        self.assertIn(" 403 ", (r.stdout.splitlines() or [""])[0], r.stdout + r.stderr)
        # The parent's CA is the parent's: its bundle is gone from the bare child's execs.
        r = bare.exec('echo "[$SSL_CERT_FILE$NODE_EXTRA_CA_CERTS]"', timeout=EXEC_S)
        self.assertEqual(r.stdout.strip(), "[]", r.stdout)
        named = [cc.Sandbox(i, c) for i in c.json(
            "POST", f"/sandboxes/{cred.id}/fork",
            {"count": 1, "network": {"allow_hosts": ["allowed.test:8080", "allowed.test:8443"],
                                     "credentials": [
                {"hosts": ["allowed.test:8080", "allowed.test:8443"], "env": "API_KEY",
                 "header": "X-Api-Key: {secret}", "secret": secret + "-child"}]}},
            timeout=300 * TIMEOUT_SCALE)["children"]][0]
        self.addCleanup(named.kill)
        own = self.run_ok(named, 'printf %s "$API_KEY"', "the child's sentinel").stdout
        self.assertTrue(own.startswith("carapace-cred-") and own != sentinel, own)
        self.run_ok(named, CURL + '-H "X-Api-Key: $API_KEY" http://allowed.test:8080/record',
                    "the child's credential")
        self.assertIn("X-Api-Key: " + secret + "-child", up.recorded())
        # The child's own proxy, with a CA of its own, given to the child's agent.
        self.terminated_https(named, secret + "-child")
        say("fork: children get no credentials unless named, and their own sentinels then")

        live = egress_proxy_pids(daemon.state)
        # parent, two children, pooled, cred and its two children: not `none`
        self.assertEqual(len(live), 7, live)
        for sb in (parent, other, same, pooled, none, cred, bare, named):
            sb.kill()
        deadline = time.monotonic() + 30
        while egress_proxy_pids(daemon.state) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(egress_proxy_pids(daemon.state), [])
        self.assertEqual(os.listdir(os.path.join(daemon.state, "egress")), [])


if __name__ == "__main__":
    unittest.main()
