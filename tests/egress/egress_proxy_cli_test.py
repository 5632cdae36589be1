#!/usr/bin/env python3
"""`carapace egress-proxy` as its own process, with the production address checks: upstreams live
in a network namespace this test makes (203.0.113.2, TEST-NET-3), names come from a hosts file
bind-mounted over /etc/hosts in the proxy's own mount namespace. What must come through does;
names that resolve to loopback or the metadata service, the host's own address, unlisted and
denied names do not, over HTTP and over SOCKS5 (curl); the control socket replaces the policy
live and puts credentials in (a plain-HTTP request gets the secret, an alias reaches a TLS origin
in the namespace with it, the confined program's OpenSSL and all); bad flags are one line and status 2; SIGTERM stops it cleanly. Needs root (netns, mount namespace)."""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

CARAPACE = os.environ['CARAPACE_EXE']  # the carapace binary under test
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from egress_upstreams import HOST_IP, NS_IP, Upstreams  # noqa: E402

# A TLS server in the namespace on :8443 (argv: address, certificate, key) answering with the
# Authorization and Host it got.
_TLS_SERVER = r'''
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = ("auth=%s host=%s path=%s" % (self.headers.get("Authorization"),
                                             self.headers.get("Host"), self.path)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer((sys.argv[1], 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print("ready", flush=True)
s.serve_forever()
'''


def make_test_ca(folder, name):
    """A CA and a server certificate for `name` under `folder`, with the openssl tool: returns
    the CA's PEM and the server's certificate and key."""
    def run(*args):
        subprocess.run(['openssl'] + list(args), check=True, capture_output=True, cwd=folder)
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
    run('req', '-x509', *ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj',
        '/CN=carapace test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext',
        'keyUsage=critical,keyCertSign,cRLSign')
    run('req', *ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=' + name)
    with open(os.path.join(folder, 'leaf.ext'), 'w') as f:
        f.write('subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\n' % name)
    run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
        '-CAcreateserial', '-out', 'leaf.pem', '-days', '1', '-extfile', 'leaf.ext')
    return tuple(os.path.join(folder, f) for f in ('ca.pem', 'leaf.pem', 'leaf.key'))


def ask(path, request, timeout=10):
    """Sends `request` on the proxy socket and reads to EOF."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(request.encode())
    out = b''
    while True:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        out += d
    s.close()
    return out.decode(errors='replace')


def control(path, method, target, body=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    data = json.dumps(body) if body is not None else ''
    s.sendall(('%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s'
               % (method, target, len(data), data)).encode())
    out = b''
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    head, _, payload = out.decode().partition('\r\n\r\n')
    return int(head.split(' ')[1]), json.loads(payload) if payload else None


class EgressProxyCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise RuntimeError('needs root: network and mount namespaces')
        # The upstreams (HTTP on :8080, echo on :7007) and a hosts file that also names this
        # host's own end of the veth.
        cls.upstreams = Upstreams('cpx', extra_hosts='%s self.test\n%s tls.test\n'
                                  % (HOST_IP, NS_IP)).start()
        cls.tmp = cls.upstreams.tmp
        cls.hosts = cls.upstreams.hosts

    @classmethod
    def tearDownClass(cls):
        cls.upstreams.stop()

    def start(self, *flags, confined=True):
        self.sock = os.path.join(self.tmp, 'egress-%d.sock' % time.monotonic_ns())
        self.ctl = self.sock + '.ctl'
        self.log = open(os.path.join(self.tmp, 'log-%d' % time.monotonic_ns()), 'w+')
        # Confined as the daemon runs it: every case below also shows that the seccomp allowlist
        # is enough for what it does.
        cmd = ('mount --bind %s /etc/hosts && exec %s egress-proxy --listen %s --control %s '
               '--sandbox sb1 --connect-timeout 2 %s %s'
               % (self.hosts, CARAPACE, self.sock, self.ctl,
                  '--run-as 65534' if confined else '', ' '.join(flags)))
        self.proc = subprocess.Popen(['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                                      cmd], stderr=self.log)
        # Ready once both sockets accept: a socket file exists from bind(), a moment before
        # listen() (a slow, sanitized build under load was caught in between).
        deadline = time.monotonic() + 10
        while not (self.accepts(self.sock) and self.accepts(self.ctl)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                self.fail('the proxy did not start: ' + self.log.read())
            time.sleep(0.02)

    @staticmethod
    def accepts(path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def tearDown(self):
        if getattr(self, 'proc', None) and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if getattr(self, 'log', None):
            self.log.close()

    def log_lines(self):
        self.log.flush()
        self.log.seek(0)
        return [json.loads(l) for l in self.log.read().splitlines() if l.startswith('{')]

    def test_allowed_names_pass_and_everything_else_is_refused(self):
        self.start('--allow-host', 'allowed.test:8080', '--allow-host', 'allowed.test:7007',
                   '--allow-host', '*.test', '--deny-host', 'denied.test')
        r = ask(self.sock, 'GET http://allowed.test:8080/hello?x=1 HTTP/1.1\r\nHost: evil\r\n\r\n')
        self.assertTrue(r.startswith('HTTP/1.0 200') or r.startswith('HTTP/1.1 200'), r)
        self.assertIn('path=/hello?x=1 host=allowed.test:8080', r)
        # CONNECT: a byte tunnel to the echo server.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(self.sock)
        s.sendall(b'CONNECT allowed.test:7007 HTTP/1.1\r\nHost: allowed.test:7007\r\n\r\n')
        got = b''
        while b'\r\n\r\n' not in got:
            got += s.recv(4096)
        self.assertTrue(got.startswith(b'HTTP/1.1 200 Connection established'), got)
        s.sendall(b'x' * 100000)
        echoed = b''
        while len(echoed) < 100000:
            echoed += s.recv(65536)
        self.assertEqual(echoed, b'x' * 100000)
        s.close()
        for host, why in [('denied.test', "denied by 'denied.test'"), ('sneaky.test', 'loopback'),
                          ('meta.test', 'link-local'), ('self.test', "host's own address"),
                          ('example.org', 'no allow rule'), (NS_IP, 'literal')]:
            r = ask(self.sock, 'CONNECT %s:8080 HTTP/1.1\r\n\r\n' % host)
            self.assertTrue(r.startswith('HTTP/1.1 403'), host + ': ' + r)
            self.assertIn(why, r, host)
        lines = self.log_lines()
        decisions = [(l.get('host'), l.get('decision')) for l in lines if 'decision' in l]
        self.assertIn(('allowed.test', 'allow'), decisions)
        self.assertIn(('meta.test', 'deny'), decisions)
        meta = [l for l in lines if l.get('host') == 'meta.test'][0]
        self.assertEqual(meta['address'], '169.254.169.254')
        self.assertEqual(meta['sandbox'], 'sb1')
        # A tunnel's bytes are counted by its relay thread, which ends a moment after the close.
        deadline = time.monotonic() + 10
        while True:
            status, stats = control(self.ctl, 'GET', '/stats')
            self.assertEqual(status, 200)
            if stats['bytes_down'] >= 100000 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(stats['allowed'], 2)
        self.assertEqual(stats['denied']['rule'], 3)     # denied.test, example.org, the literal
        self.assertEqual(stats['denied']['address'], 3)  # sneaky, meta, self
        self.assertGreaterEqual(stats['bytes_down'], 100000)

    def test_it_runs_as_nobody_without_new_privileges_under_seccomp(self):
        self.start('--allow-host', 'allowed.test')
        self.assertIn('path=/x', ask(self.sock, 'GET http://allowed.test:8080/x HTTP/1.1\r\n\r\n'))
        status = {}
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                k, _, v = line.partition(':')
                status[k] = v.split()
        self.assertEqual(status['Uid'], ['65534'] * 4)
        self.assertEqual(status['Gid'], ['65534'] * 4)
        self.assertEqual(status['Groups'], [])
        self.assertEqual(status['NoNewPrivs'], ['1'])
        self.assertEqual(status['Seccomp'], ['2'])
        self.assertEqual(status['CapEff'], ['0000000000000000'])
        # Not dumpable: its /proc files belong to root, so another nobody cannot open its memory.
        self.assertEqual(os.stat('/proc/%d/mem' % self.proc.pid).st_uid, 0)
        # The socket is where it was bound, still answering after the drop.
        self.assertTrue(ask(self.sock, 'CONNECT denied.test:1 HTTP/1.1\r\n\r\n').startswith(
            'HTTP/1.1 403'))
        bad = subprocess.run([CARAPACE, 'egress-proxy', '--listen', os.path.join(self.tmp, 'run-as-0.sock'), '--run-as', '0'],
                             capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('--run-as', bad.stderr)

    def test_curl_over_socks5_gets_the_same_decisions(self):
        # curl's own SOCKS5 client; --socks5-hostname: the name goes to the proxy, which resolves
        # and checks it as for CONNECT. A proxy on a Unix socket is localhost + its path.
        if not shutil.which('curl'):
            raise RuntimeError('needs curl (tools/setup installs it)')
        self.start('--allow-host', 'allowed.test:8080', '--allow-host', '*.test',
                   '--deny-host', 'denied.test')

        def curl(host):
            return subprocess.run(['curl', '-sS', '--max-time', '10', '--socks5-hostname',
                                   'localhost' + self.sock, 'http://%s:8080/via-socks' % host],
                                  capture_output=True, text=True, timeout=30)
        r = curl('allowed.test')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('path=/via-socks host=allowed.test:8080', r.stdout)
        # curl names the SOCKS5 reply: 2 (not allowed by ruleset) by name, at the address stage,
        # for a literal. (A name that does not resolve, 4, is left to the unit tests: here it
        # would ask the host's DNS.)
        for host in ['denied.test', 'sneaky.test', 'meta.test', NS_IP]:
            r = curl(host)
            self.assertNotEqual(r.returncode, 0, host)
            self.assertIn('SOCKS5 connection to %s. (2)' % host, r.stderr, host)
        lines = [l for l in self.log_lines() if 'decision' in l]
        self.assertTrue(all(l['protocol'] == 'socks5' for l in lines), lines)
        decisions = {l['host']: (l['decision'], l.get('reply')) for l in lines}
        self.assertEqual(decisions['allowed.test'], ('allow', 0))
        self.assertEqual(decisions['sneaky.test'], ('deny', 2))
        self.assertEqual([l['address'] for l in lines if l['host'] == 'meta.test'],
                         ['169.254.169.254'])
        status, stats = control(self.ctl, 'GET', '/stats')
        self.assertEqual((stats['allowed'], stats['denied']['rule'], stats['denied']['address']),
                         (1, 2, 2))

    def test_the_control_socket_replaces_the_policy_live(self):
        self.start()  # nothing allowed
        self.assertTrue(ask(self.sock, 'CONNECT allowed.test:7007 HTTP/1.1\r\n\r\n')
                        .startswith('HTTP/1.1 403'))
        status, body = control(self.ctl, 'PUT', '/policy', {'allow_hosts': ['203.0.113.0/24:8080']})
        self.assertEqual(status, 200, body)
        self.assertEqual(body, {'allow_hosts': ['203.0.113.0/24:8080'], 'deny_hosts': []})
        r = ask(self.sock, 'GET http://%s:8080/lit HTTP/1.1\r\n\r\n' % NS_IP)
        self.assertIn('path=/lit', r)
        # The host's own address stays refused, whatever rule covers it.
        r = ask(self.sock, 'GET http://%s:8080/ HTTP/1.1\r\n\r\n' % HOST_IP)
        self.assertTrue(r.startswith('HTTP/1.1 403'), r)
        status, body = control(self.ctl, 'PUT', '/policy', {'allow_hosts': ['ok.test', 'a*b']})
        self.assertEqual(status, 400)
        self.assertIn('allow_hosts[1]', body['error']['message'])
        status, body = control(self.ctl, 'PUT', '/policy', {'allow': ['x']})
        self.assertEqual(status, 400)
        status, body = control(self.ctl, 'GET', '/policy')
        self.assertEqual(body['allow_hosts'], ['203.0.113.0/24:8080'])  # the bad PUTs lost nothing

    def test_credentials_come_over_the_control_socket_and_the_secret_stays_in_the_proxy(self):
        folder = os.path.join(self.tmp, 'tls')
        os.makedirs(folder, exist_ok=True)
        ca, cert, key = make_test_ca(folder, 'tls.test')
        tls = subprocess.Popen(['ip', 'netns', 'exec', self.upstreams.ns, sys.executable, '-c',
                                _TLS_SERVER, NS_IP, cert, key], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (tls.kill(), tls.wait(), tls.stdout.close()))
        self.assertEqual(tls.stdout.readline().strip(), 'ready')
        self.start('--allow-host', 'allowed.test:8080', '--allow-host', 'other.test:8080',
                   '--allow-host', 'tls.test:8443', '--allow-host', 'other.test:8443',
                   '--ca-file', ca)
        secret = 'sk-cli-' + secrets.token_hex(20)  # unreserved only: the same percent-encoded
        tls_secret = 'tk-cli-' + secrets.token_hex(20)
        sentinel = 'carapace-cred-' + secrets.token_hex(16)
        tls_sentinel = 'carapace-cred-' + secrets.token_hex(16)
        body = {'credentials': [
            {'hosts': ['allowed.test:8080'], 'query': 'api_key', 'secret': secret,
             'env': 'API_KEY', 'sentinel': sentinel},
            {'hosts': ['tls.test', 'other.test:8443'], 'header': 'Authorization: Bearer {secret}',
             'secret': tls_secret, 'env': 'TLS_TOKEN', 'sentinel': tls_sentinel}],
            'upstreams': [{'alias': 'tls-alias.carapace.internal', 'origin': 'https://tls.test:8443'},
                          {'alias': 'impostor.carapace.internal',
                           'origin': 'https://other.test:8443'}]}
        status, view = control(self.ctl, 'PUT', '/credentials', body)
        self.assertEqual(status, 200, view)
        self.assertEqual([c['secret'] for c in view['credentials']], ['<redacted>'] * 2)
        self.assertEqual(control(self.ctl, 'GET', '/credentials'), (200, view))
        # Plain HTTP: the sentinel becomes the secret on its own host.
        r = ask(self.sock, 'GET http://allowed.test:8080/q?api_key=%s HTTP/1.1\r\n\r\n' % sentinel)
        self.assertIn('path=/q?api_key=%s ' % secret, r)
        # The same sentinel to another allowed host: refused, an exfiltration attempt.
        r = ask(self.sock, 'GET http://other.test:8080/q?api_key=%s HTTP/1.1\r\n\r\n' % sentinel)
        self.assertTrue(r.startswith('HTTP/1.1 403'), r)
        self.assertIn('credential_sentinel_to_other_host', r)
        # The alias: plain HTTP in, TLS verified for tls.test out, the secret in the header.
        r = ask(self.sock, 'GET http://tls-alias.carapace.internal/repos HTTP/1.1\r\n'
                'Authorization: Bearer %s\r\n\r\n' % tls_sentinel)
        self.assertIn('auth=Bearer %s host=tls.test:8443 path=/repos' % tls_secret, r)
        # A server whose certificate is not for the origin's name gets nothing: 502.
        r = ask(self.sock, 'GET http://impostor.carapace.internal/ HTTP/1.1\r\n'
                'Authorization: Bearer %s\r\n\r\n' % tls_sentinel)
        self.assertTrue(r.startswith('HTTP/1.1 502'), r)
        self.assertIn('certificate verify failed', r)
        # Revoked: the sentinel is then no live credential's, refused everywhere.
        status, view = control(self.ctl, 'PUT', '/credentials', {'credentials': []})
        self.assertEqual((status, view), (200, {'credentials': [], 'upstreams': []}))
        r = ask(self.sock, 'GET http://allowed.test:8080/q?api_key=%s HTTP/1.1\r\n\r\n' % sentinel)
        self.assertTrue(r.startswith('HTTP/1.1 403'), r)
        status, stats = control(self.ctl, 'GET', '/stats')
        self.assertEqual((stats['credential_injected'], stats['credential_refused']), (2, 2))
        self.assertIsNone(self.proc.poll())  # OpenSSL worked under the seccomp allowlist
        lines = self.log_lines()
        exfil = [l for l in lines if l.get('reason') == 'credential_sentinel_to_other_host']
        self.assertEqual(len(exfil), 1, lines)
        self.assertEqual((exfil[0]['credential'], exfil[0]['exfiltration_attempt']),
                         ('API_KEY', True))
        self.assertIn('TLS_TOKEN', [l.get('credential') for l in lines])
        self.log.seek(0)
        everything = self.log.read()
        for s in (secret, tls_secret):
            self.assertNotIn(s, everything)
            self.assertNotIn(s, json.dumps(stats))
            with open('/proc/%d/cmdline' % self.proc.pid, 'rb') as f:
                self.assertNotIn(s.encode(), f.read())

    def test_sigterm_stops_it_and_removes_the_socket(self):
        # Unconfined it removes its sockets; confined it may not be able to (the folder is root's
        # here), and stops just as cleanly.
        for confined in (False, True):
            self.start('--allow-host', 'allowed.test', confined=confined)
            self.proc.send_signal(signal.SIGTERM)
            self.assertEqual(self.proc.wait(timeout=10), 0)
            self.assertEqual(os.path.exists(self.sock), confined)

    def test_bad_flags_are_one_line_and_status_2(self):
        # A path of this test's own: nothing else may make it while the refusals run.
        x = os.path.join(self.tmp, 'never-bound.sock')
        for args, words in [([], '--listen PATH is required'),
                            (['--listen', x, '--allow-host', 'a*b'], 'allow_hosts[0]'),
                            (['--listen', x, '--deny-host', '10.1.0.0/8'], 'deny_hosts[0]'),
                            (['--listen', x, '--bogus', '1'], 'unknown option --bogus'),
                            (['--listen', x, '--max-connections', '0'], '--max-connections'),
                            (['--listen', x, '--idle-timeout', '-1'], '--idle-timeout')]:
            r = subprocess.run([CARAPACE, 'egress-proxy'] + args, capture_output=True, text=True,
                               timeout=10)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(words, r.stderr)
        self.assertFalse(os.path.exists(x))


if __name__ == '__main__':
    unittest.main()
