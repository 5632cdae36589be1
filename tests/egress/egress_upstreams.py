"""Upstreams for the egress tests, with no internet: a network namespace reached over a veth
(host 203.0.113.1, namespace 203.0.113.2, TEST-NET-3), in it an HTTP server on :8080 (a PEP 503
package index under /simple/ with one wheel, /headers the request's header fields, /record
the same kept in a file (`recorded()`) and only "recorded" sent back, else
"path=<path> host=<Host>"), the same over TLS on :8443 when given a certificate and key, and an
echo server on :7007, and a hosts file naming them. `daemon_prefix()` runs a daemon in a mount
namespace of its own with that file over /etc/hosts, so the proxies it starts resolve the test's
names with the production resolver and address checks while the rest of the host sees nothing.
`egress_proxy_pids()` finds the proxies a daemon started."""
import io
import os
import subprocess
import sys
import tempfile
import zipfile

HOST_IP, NS_IP = '203.0.113.1', '203.0.113.2'
HOSTS = ('%s allowed.test denied.test other.test\n127.0.0.1 sneaky.test\n'
         '169.254.169.254 meta.test\n' % NS_IP)

_SERVER = r'''
import http.server, socketserver, ssl, sys, threading
wheel = open(sys.argv[2], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, body, ctype="text/plain"):
        self.send_response(200); self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path.rstrip("/") == "/simple/demo-pkg":
            self.answer(b'<html><body><a href="/files/demo_pkg-1.0-py3-none-any.whl">'
                        b'demo_pkg-1.0-py3-none-any.whl</a></body></html>', "text/html")
        elif self.path == "/files/demo_pkg-1.0-py3-none-any.whl":
            self.answer(wheel, "application/octet-stream")
        elif self.path.startswith("/record"):
            # Kept here, not sent back: a test can look for a secret in the sandbox's memory.
            with open(sys.argv[3], "a") as f:
                f.write("".join("%s: %s\n" % kv for kv in self.headers.items()))
            self.answer(b"recorded")
        elif self.path.startswith("/headers"):
            self.answer("".join("%s: %s\n" % kv for kv in self.headers.items()).encode())
        else:
            self.answer(("path=%s host=%s" % (self.path, self.headers.get("Host"))).encode())
    def log_message(self, *a): pass
class E(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            d = self.request.recv(65536)
            if not d: return
            self.request.sendall(d)
# Deep listen queues: the load test opens hundreds of connections at once.
http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer.request_queue_size = 1024
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer.daemon_threads = True
socketserver.ThreadingTCPServer.request_queue_size = 1024
h = http.server.ThreadingHTTPServer((sys.argv[1], 8080), H)
e = socketserver.ThreadingTCPServer((sys.argv[1], 7007), E)
threading.Thread(target=e.serve_forever, daemon=True).start()
if len(sys.argv) > 5:
    # The same handler over TLS on :8443, with the test's certificate for allowed.test.
    t = http.server.ThreadingHTTPServer((sys.argv[1], 8443), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    t.socket = ctx.wrap_socket(t.socket, server_side=True)
    threading.Thread(target=t.serve_forever, daemon=True).start()
print("ready", flush=True)
h.serve_forever()
'''


def _sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def make_wheel(path):
    """A minimal pure-Python wheel pip accepts: the package, METADATA, WHEEL and RECORD."""
    files = {
        'demo_pkg/__init__.py': 'VALUE = 42\n',
        'demo_pkg-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n',
        'demo_pkg-1.0.dist-info/WHEEL': ('Wheel-Version: 1.0\nGenerator: carapace-test\n'
                                         'Root-Is-Purelib: true\nTag: py3-none-any\n'),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr('demo_pkg-1.0.dist-info/RECORD',
                   ''.join('%s,,\n' % n for n in files) + 'demo_pkg-1.0.dist-info/RECORD,,\n')
    with open(path, 'wb') as f:
        f.write(buf.getvalue())


class Upstreams:
    def __init__(self, tag, extra_hosts='', tls=None):
        self.ns = '%s%d' % (tag, os.getpid())
        self.tls = tls  # (certificate, key) of the :8443 server, or None for none
        self.extra_hosts = extra_hosts  # more hosts-file lines, e.g. a name for HOST_IP
        self.tmp = tempfile.mkdtemp(prefix='carapace-egress-upstreams-')
        self.hosts = os.path.join(self.tmp, 'hosts')
        self.record_path = os.path.join(self.tmp, 'recorded')
        self.server = None

    def start(self):
        ns = self.ns
        _sh('ip', 'netns', 'add', ns)
        _sh('ip', 'link', 'add', ns + 'h', 'type', 'veth', 'peer', 'name', ns + 'n')
        _sh('ip', 'link', 'set', ns + 'n', 'netns', ns)
        _sh('ip', 'addr', 'add', HOST_IP + '/24', 'dev', ns + 'h')
        _sh('ip', 'link', 'set', ns + 'h', 'up')
        _sh('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', NS_IP + '/24', 'dev', ns + 'n')
        _sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', ns + 'n', 'up')
        _sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')
        wheel = os.path.join(self.tmp, 'demo_pkg-1.0-py3-none-any.whl')
        make_wheel(wheel)
        self.server = subprocess.Popen(['ip', 'netns', 'exec', ns, sys.executable, '-c', _SERVER,
                                        NS_IP, wheel, self.record_path] + list(self.tls or ()),
                                       stdout=subprocess.PIPE, text=True)
        if self.server.stdout.readline().strip() != 'ready':
            raise RuntimeError('the upstream servers in the namespace did not start')
        with open(self.hosts, 'w') as f:
            f.write(HOSTS + self.extra_hosts)
        return self

    def recorded(self):
        """The header fields of every /record request so far."""
        try:
            with open(self.record_path) as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def daemon_prefix(self):
        return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                'mount --bind "$1" /etc/hosts && shift && exec "$@"', 'sh', self.hosts]

    def stop(self):
        if self.server:
            self.server.kill()
            self.server.wait()
            self.server.stdout.close()
            self.server = None
        _sh('ip', 'link', 'del', self.ns + 'h', check=False)
        _sh('ip', 'netns', 'del', self.ns, check=False)
        subprocess.run(['rm', '-rf', self.tmp])


def egress_proxy_pids(state):
    """The `carapace egress-proxy` processes whose command line names the daemon state `state`."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if b'egress-proxy' in argv and any(state.encode() in a for a in argv):
            found.append(int(pid))
    return found
