#!/usr/bin/env python3
"""Egress under load, through a real `carapace serve` with process sandboxes (label slow; root):
200 concurrent tunnels through one sandbox's proxy, and 50 sandboxes with 4 tunnels each at once,
every byte echoed back and nothing dropped, while the daemon keeps answering its other requests
quickly; a sandbox that holds every forwarder slot with silent connections (slowloris) is cut at
the proxy's head deadline and its next real request goes through. Upstreams as in
tests/egress/egress_upstreams.py."""
import concurrent.futures
import json
import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'service'))

import daemon_harness  # noqa: E402
from daemon_harness import cc  # noqa: E402
from egress_upstreams import Upstreams  # noqa: E402

# Inside a sandbox: N concurrent CONNECT tunnels to the echo server through the agent's
# forwarder, each sending SIZE bytes and reading them back; prints {"ok": n, "errors": [...]}.
TUNNELS = r'''
import json, socket, sys, threading
n, size = int(sys.argv[1]), int(sys.argv[2])
ok, errors, lock = [0], [], threading.Lock()
def one(i):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=120)
        s.sendall(b"CONNECT allowed.test:7007 HTTP/1.1\r\nHost: allowed.test:7007\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d: raise OSError("closed before the answer")
            head += d
        if not head.startswith(b"HTTP/1.1 200"): raise OSError(head[:60].decode())
        data = bytes([i % 251]) * size
        def send(): s.sendall(data)
        t = threading.Thread(target=send); t.start()
        got = bytearray()
        while len(got) < size:
            d = s.recv(65536)
            if not d: raise OSError("closed after %d bytes" % len(got))
            got += d
        t.join()
        if bytes(got) != data: raise OSError("bytes differ")
        s.close()
        with lock: ok[0] += 1
    except Exception as e:
        with lock: errors.append("%d: %s" % (i, e))
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"ok": ok[0], "errors": errors[:5]}))
'''

# Inside a sandbox: SLOTS silent connections to the forwarder (each reaches the proxy, which
# waits for a head that never comes), then one real request; prints how long that one took.
SLOWLORIS = r'''
import socket, sys, time, urllib.request
idle = [socket.create_connection(("127.0.0.1", 3128), timeout=60) for _ in range(int(sys.argv[1]))]
t0 = time.monotonic()
body = urllib.request.urlopen("http://allowed.test:8080/after", timeout=60).read().decode()
print("%.1f %s" % (time.monotonic() - t0, body))
'''


class EgressLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise RuntimeError('needs root: network and mount namespaces, the process back end')
        cls.upstreams = Upstreams('cld').start()
        cls.daemon = daemon_harness.Daemon(prefix=cls.upstreams.daemon_prefix())
        try:
            cls.daemon.start()
            cls.tpl = cls.daemon.client.json('POST', '/templates', {
                'isolation': 'process', 'rootfs': daemon_harness.require_env('CARAPACE_ROOTFS'),
                'pool_size': 2, 'mem_mib': 256, 'name': 'egress-load',
                'network': {'allow_hosts': ['allowed.test']}}, timeout=600)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.upstreams.stop()

    def sandbox(self):
        info = self.daemon.client.json('POST', '/sandboxes', {'template': self.tpl['id']},
                                       timeout=300)
        sb = cc.Sandbox(info, self.daemon.client)
        self.addCleanup(sb.kill)
        sb.files.write('/work/tunnels.py', TUNNELS)
        return sb

    def tunnels(self, sb, n, size):
        r = sb.exec(['python3', '/work/tunnels.py', str(n), str(size)], timeout=300)
        self.assertEqual(r.exit_code, 0, r.stdout + r.stderr)
        return json.loads(r.stdout)

    def watch_the_daemon(self):
        """A thread asking GET /health and GET /sandboxes while the load runs; returns a stop
        function giving the slowest answer in seconds."""
        stop = threading.Event()
        slowest = [0.0]
        errors = []
        client = cc.Client(socket=self.daemon.socket, timeout=30)

        def loop():
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    cc.health(client=client)
                    client.json('GET', '/sandboxes')
                except Exception as e:  # noqa: BLE001 -- reported below
                    errors.append(str(e))
                slowest[0] = max(slowest[0], time.monotonic() - t0)
                time.sleep(0.05)

        t = threading.Thread(target=loop)
        t.start()

        def finish():
            stop.set()
            t.join()
            self.assertEqual(errors, [])
            return slowest[0]
        return finish

    def test_200_tunnels_through_one_sandbox(self):
        sb = self.sandbox()
        finish = self.watch_the_daemon()
        t0 = time.monotonic()
        result = self.tunnels(sb, 200, 256 * 1024)
        took = time.monotonic() - t0
        slowest = finish()
        print('200 tunnels x 256 KiB echoed in %.1f s; slowest daemon answer meanwhile %.0f ms'
              % (took, 1000 * slowest), flush=True)
        self.assertEqual(result, {'ok': 200, 'errors': []})
        self.assertLess(slowest, 5.0)
        stats = self.daemon.client.request('GET', '/metrics')[2].decode()
        allowed = [l for l in stats.splitlines()
                   if l.startswith('carapace_egress_allowed_total{sandbox="%s"}' % sb.id)]
        self.assertEqual(allowed and int(allowed[0].split()[-1]), 200, allowed)

    def test_50_sandboxes_with_4_tunnels_each(self):
        boxes = []
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            boxes = list(pool.map(lambda _: self.sandbox(), range(50)))
        finish = self.watch_the_daemon()
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda sb: self.tunnels(sb, 4, 64 * 1024), boxes))
        took = time.monotonic() - t0
        slowest = finish()
        print('50 sandboxes x 4 tunnels x 64 KiB in %.1f s; slowest daemon answer %.0f ms'
              % (took, 1000 * slowest), flush=True)
        self.assertEqual(results, [{'ok': 4, 'errors': []}] * 50)
        self.assertLess(slowest, 10.0)

    def test_silent_connections_are_cut_and_a_real_request_follows(self):
        sb = self.sandbox()
        sb.files.write('/work/slowloris.py', SLOWLORIS)
        # The forwarder passes 256 at once; the proxy's head deadline is 10 s.
        r = sb.exec(['python3', '/work/slowloris.py', '256'], timeout=120)
        self.assertEqual(r.exit_code, 0, r.stdout + r.stderr)
        took, body = r.stdout.split(' ', 1)
        self.assertIn('path=/after', body)
        self.assertLess(float(took), 30.0, r.stdout)


if __name__ == '__main__':
    unittest.main()
