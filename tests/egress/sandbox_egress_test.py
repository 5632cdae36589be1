#!/usr/bin/env python3
"""Egress of process-isolated sandboxes through a real `carapace serve` and the real rootfs.

The upstreams live in a network namespace this test makes (203.0.113.2, TEST-NET-3: no internet
is needed); names come from a hosts file bind-mounted over /etc/hosts in the daemon's own mount
namespace, so the proxies it starts resolve them with the production resolver and address checks.
Inside a sandbox allowed `allowed.test`, curl, Python's urllib and `pip download` from a simple
index work unchanged (the agent's forwarder and proxy variables); a denied or unlisted name is
refused with the reason; programs that ignore the proxy variables (`curl --noproxy '*'`, a raw
socket) reach allowed names through the transparent mode's stub resolver and stand-in addresses,
while an address literal has no route at all; a sandbox without a policy has no socket; PUT /sandboxes/{id}/network changes what is reachable while it runs; a template's
policy is its sandboxes' default. Needs root (namespaces) and the rootfs (label image)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'service'))

import daemon_harness  # noqa: E402
from daemon_harness import cc  # noqa: E402
from egress_upstreams import NS_IP, Upstreams, egress_proxy_pids  # noqa: E402
from egress_proxy_cli_test import make_test_ca  # noqa: E402

CURL = 'curl -sS --fail --max-time 20 '


class SandboxEgressTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise RuntimeError('needs root: network and mount namespaces, the process back end')
        cls.daemon = None
        cls.upstreams = None
        try:
            cls._set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _set_up(cls):
        # A test CA and a certificate for allowed.test, for the TLS server on :8443; the daemon's
        # proxies trust that CA for origins (egress_ca_file).
        cls.ca_dir = tempfile.mkdtemp(prefix='carapace-egress-ca-')
        ca, leaf, key = make_test_ca(cls.ca_dir, 'allowed.test')
        cls.upstreams = Upstreams('cse', tls=(leaf, key)).start()
        # The daemon and every proxy it starts see the test's hosts file; nothing else does.
        prefix = cls.upstreams.daemon_prefix()
        cls.daemon = daemon_harness.Daemon(prefix=prefix, config={'egress_ca_file': ca})
        cls.daemon.start()
        cls.client = cls.daemon.client
        cls.tpl = cls.client.json('POST', '/templates', {
            'isolation': 'process', 'rootfs': daemon_harness.require_env('CARAPACE_ROOTFS'),
            'pool_size': 1, 'name': 'egress'}, timeout=600)

    @classmethod
    def tearDownClass(cls):
        if cls.daemon:
            cls.daemon.stop()
        if cls.upstreams:
            cls.upstreams.stop()
        if getattr(cls, 'ca_dir', None):
            subprocess.run(['rm', '-rf', cls.ca_dir])

    def sandbox(self, network=None, template=None):
        body = {'template': (template or self.tpl)['id']}
        if network is not None:
            body['network'] = network
        info = self.client.json('POST', '/sandboxes', body, timeout=300)
        sb = cc.Sandbox(info, self.client)
        self.addCleanup(sb.kill)
        return sb

    def run_in(self, sb, cmd, timeout=60):
        r = sb.exec(cmd, timeout=timeout)
        return r

    def assert_ok(self, r, what):
        self.assertEqual(r.exit_code, 0, '%s: exit %s\nstdout: %s\nstderr: %s'
                         % (what, r.exit_code, r.stdout, r.stderr))

    def log_decisions(self, sandbox_id):
        out = []
        with open(self.daemon.log_path, encoding='utf-8', errors='replace') as f:
            for line in f:
                if not line.startswith('{'):
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get('msg') == 'egress decision' and j.get('sandbox') == sandbox_id:
                    out.append(j)
        return out

    def test_allowed_name_reaches_curl_urllib_and_pip_and_nothing_else_does(self):
        sb = self.sandbox({'allow_hosts': ['allowed.test:8080', '*.test'],
                           'deny_hosts': ['denied.test']})
        net = sb.info['network']
        self.assertEqual(net['internet'], True)
        self.assertEqual(net['allow_hosts'], ['allowed.test:8080', '*.test'])
        self.assertEqual(net['proxy'], 'http://127.0.0.1:3128')
        r = self.run_in(sb, 'env | grep -i _proxy= | sort')
        self.assertIn('HTTPS_PROXY=http://127.0.0.1:3128', r.stdout)
        r = self.run_in(sb, CURL + 'http://allowed.test:8080/hello')
        self.assert_ok(r, 'curl')
        self.assertEqual(r.stdout, 'path=/hello host=allowed.test:8080')
        r = self.run_in(sb, ['python3', '-c', 'import urllib.request; print(urllib.request.'
                             'urlopen("http://allowed.test:8080/py", timeout=20).read().decode())'])
        self.assert_ok(r, 'urllib')
        self.assertIn('path=/py host=allowed.test:8080', r.stdout)
        r = self.run_in(sb, 'python3 -m pip download --no-deps --disable-pip-version-check '
                            '--no-cache-dir --trusted-host allowed.test '
                            '--index-url http://allowed.test:8080/simple/ -d /tmp/dl demo-pkg '
                            '&& ls /tmp/dl', timeout=120)
        self.assert_ok(r, 'pip download')
        self.assertIn('demo_pkg-1.0-py3-none-any.whl', r.stdout)
        # Refused by name (a deny rule wins over *.test), by address (a name that resolves to
        # loopback or the metadata service), and unlisted: each with its reason in the 403.
        for host, why in [('denied.test', "denied by 'denied.test'"), ('sneaky.test', 'loopback'),
                          ('meta.test', 'link-local'), ('example.org', 'no allow rule'),
                          (NS_IP, 'literal')]:
            r = self.run_in(sb, 'curl -sS --max-time 20 -D - -o /dev/null http://%s:8080/' % host)
            self.assertIn(' 403 ', r.stdout.splitlines()[0] if r.stdout else '', host + ': ' +
                          r.stdout + r.stderr)
            self.assertIn(why, r.stdout, host)
        # Without the proxy there is no route at all: the sandbox's network namespace has only
        # loopback.
        r = self.run_in(sb, "curl -sS --max-time 10 --noproxy '*' http://%s:8080/" % NS_IP)
        self.assertNotEqual(r.exit_code, 0, r.stdout)
        self.assertNotIn('path=', r.stdout)
        decisions = self.log_decisions(sb.id)
        allowed = [d for d in decisions if d.get('decision') == 'allow']
        self.assertGreaterEqual(len(allowed), 4, decisions)  # curl, urllib, pip index + wheel
        meta = [d for d in decisions if d.get('host') == 'meta.test']
        self.assertEqual(meta and meta[0].get('address'), '169.254.169.254', decisions)
        metrics = self.client.request('GET', '/metrics')[2].decode()
        line = [l for l in metrics.splitlines()
                if l.startswith('carapace_egress_allowed_total{sandbox="%s"}' % sb.id)]
        self.assertTrue(line and int(line[0].split()[-1]) >= 4, line)
        denied = [l for l in metrics.splitlines() if l.startswith(
            'carapace_egress_denied_total{sandbox="%s",reason="address"}' % sb.id)]
        self.assertTrue(denied and int(denied[0].split()[-1]) == 2, denied)

    def test_programs_that_ignore_the_proxy_variables_go_through_the_transparent_mode(self):
        sb = self.sandbox({'allow_hosts': ['allowed.test:8080']})
        # The stub resolver answers with a stand-in in 127.128.0.0/9, the same one each time.
        r = self.run_in(sb, 'getent ahostsv4 allowed.test | head -1; getent hosts allowed.test')
        self.assert_ok(r, 'getent')
        first = r.stdout.split()[0]
        octets = [int(x) for x in first.split('.')]
        self.assertTrue(octets[0] == 127 and octets[1] >= 128, r.stdout)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout + r.stderr)
        self.assertEqual(lines[1].split()[0], first, r.stdout)
        r = self.run_in(sb, "curl -sS --fail --max-time 20 --noproxy '*' "
                            'http://allowed.test:8080/t')
        self.assert_ok(r, 'curl --noproxy through the stand-in')
        self.assertEqual(r.stdout, 'path=/t host=allowed.test:8080')
        # A program with no proxy support at all: a raw socket to the name.
        raw = ('import socket\n'
               's = socket.create_connection(("allowed.test", 8080), 20)\n'
               's.sendall(b"GET /raw HTTP/1.0\\r\\nHost: allowed.test:8080\\r\\n\\r\\n")\n'
               'print(s.makefile("rb").read().decode())\n')
        r = self.run_in(sb, ['python3', '-c', raw])
        self.assert_ok(r, 'raw socket')
        self.assertIn('path=/raw host=allowed.test:8080', r.stdout)
        # The policy still decides: an unlisted name gets a stand-in, but its connection is cut
        # with nothing sent, and the proxy logs the denial.
        r = self.run_in(sb, "curl -sS --max-time 20 --noproxy '*' http://other.test:8080/")
        self.assertNotEqual(r.exit_code, 0, r.stdout)
        self.assertNotIn('path=', r.stdout)
        denied = [d for d in self.log_decisions(sb.id)
                  if d.get('host') == 'other.test' and d.get('decision') == 'deny']
        self.assertTrue(denied, self.log_decisions(sb.id))
        # An address, unlike a name, has no stand-in: still no route.
        r = self.run_in(sb, "curl -sS --max-time 10 --noproxy '*' http://%s:8080/" % NS_IP)
        self.assertNotEqual(r.exit_code, 0, r.stdout)

    def test_credentials_reach_their_host_and_never_the_sandbox(self):
        # docs/security.md #46-48: the sandbox holds a sentinel; the proxy puts the secret in
        # for the credential's own host only, and nothing the sandbox can read holds it.
        secret = 'real-secret-' + os.urandom(12).hex()
        cred = {'hosts': ['allowed.test:8080'], 'header': 'X-Api-Key: {secret}',
                'secret': secret, 'env': 'API_KEY'}
        sb = self.sandbox({'allow_hosts': ['allowed.test:8080', 'other.test:8080'],
                           'credentials': [cred]})
        self.assertEqual(sb.info['network']['credentials'],
                         [dict(cred, secret='<redacted>')])
        sentinel = self.run_in(sb, 'printf %s "$API_KEY"').stdout
        self.assertRegex(sentinel, r'^carapace-cred-[0-9a-f]{32}$')
        with_key = CURL + '-H "X-Api-Key: $API_KEY" http://%s:8080/headers'
        r = self.run_in(sb, with_key % 'allowed.test')
        self.assert_ok(r, 'the credential\'s host')
        self.assertIn('X-Api-Key: ' + secret, r.stdout)
        # The same sentinel to another allowed host: refused, nothing sent, logged.
        r = self.run_in(sb, 'curl -sS --max-time 20 -D - -o /dev/null -H "X-Api-Key: $API_KEY" '
                            'http://other.test:8080/headers')
        self.assertIn(' 403 ', (r.stdout.splitlines() or [''])[0], r.stdout + r.stderr)
        self.assertIn('credential_sentinel_to_other_host', r.stdout)
        refused = [d for d in self.log_decisions(sb.id)
                   if d.get('host') == 'other.test' and d.get('exfiltration_attempt')]
        self.assertTrue(refused, self.log_decisions(sb.id))
        # An attacker's own key in the credential's slot: refused too.
        r = self.run_in(sb, 'curl -sS --max-time 20 -D - -o /dev/null -H "X-Api-Key: mine" '
                            'http://allowed.test:8080/headers')
        self.assertIn(' 403 ', (r.stdout.splitlines() or [''])[0], r.stdout + r.stderr)
        # Nothing the sandbox can read holds the secret: its environment, every process's
        # environ, its files.
        r = self.run_in(sb, 'env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"; '
                            'grep -rl -- "%s" / 2>/dev/null; true' % secret[:20], timeout=120)
        self.assertNotIn(secret, r.stdout + r.stderr)
        self.assertIn(sentinel, r.stdout)
        # Rotation: the same sentinel, the new secret on the next request.
        rotated = 'rotated-' + os.urandom(12).hex()
        sb.set_network(['allowed.test:8080', 'other.test:8080'],
                       credentials=[dict(cred, secret=rotated)])
        self.assertEqual(self.run_in(sb, 'printf %s "$API_KEY"').stdout, sentinel)
        r = self.run_in(sb, with_key % 'allowed.test')
        self.assert_ok(r, 'after rotation')
        self.assertIn('X-Api-Key: ' + rotated, r.stdout)
        # Revocation: the next request with the sentinel fails.
        sb.set_network(['allowed.test:8080', 'other.test:8080'])
        r = self.run_in(sb, 'curl -sS --max-time 20 -D - -o /dev/null -H "X-Api-Key: %s" '
                            'http://allowed.test:8080/headers' % sentinel)
        self.assertIn(' 403 ', (r.stdout.splitlines() or [''])[0], r.stdout + r.stderr)
        metrics = self.client.request('GET', '/metrics')[2].decode()
        for name in ('carapace_egress_credential_injected_total',
                     'carapace_egress_credential_refused_total'):
            line = [l for l in metrics.splitlines()
                    if l.startswith('%s{sandbox="%s"}' % (name, sb.id))]
            self.assertTrue(line and int(line[0].split()[-1]) >= 2, (name, line))
        # Neither the daemon's log nor its state folder holds either secret.
        with open(self.daemon.log_path, encoding='utf-8', errors='replace') as f:
            log = f.read()
        self.assertNotIn(secret, log)
        self.assertNotIn(rotated, log)
        found = subprocess.run(['grep', '-rl', '-e', secret, '-e', rotated, self.daemon.state],
                               capture_output=True, text=True)
        self.assertEqual(found.stdout, '')

    def test_https_to_a_credentialed_host_is_terminated_and_gets_the_secret(self):
        # docs/security.md #51-53: curl speaking HTTPS through CONNECT, trusting the system
        # bundle plus the proxy's CA (SSL_CERT_FILE and friends, given at hand-out), gets its
        # sentinel replaced at the real host; a host without a credential stays end to end.
        secret = 'tls-secret-' + os.urandom(12).hex()
        cred = {'hosts': ['allowed.test:8443'], 'header': 'X-Api-Key: {secret}',
                'secret': secret, 'env': 'API_KEY'}
        hosts = ['allowed.test:8443', 'allowed.test:8080']
        sb = self.sandbox({'allow_hosts': hosts, 'credentials': [cred]})
        r = self.run_in(sb, 'env')
        self.assertNotIn(secret, r.stdout)
        trust = dict(l.split('=', 1) for l in r.stdout.splitlines() if '=' in l)
        for name in ('SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'PIP_CERT',
                     'GIT_SSL_CAINFO'):
            self.assertTrue(trust.get(name, '').endswith('/ca-bundle.pem'), (name, r.stdout))
        self.assertTrue(trust.get('NODE_EXTRA_CA_CERTS', '').endswith('/ca.pem'), r.stdout)
        r = self.run_in(sb, CURL + '-H "X-Api-Key: $API_KEY" https://allowed.test:8443/headers')
        self.assert_ok(r, 'HTTPS to the credential\'s host')
        self.assertIn('X-Api-Key: ' + secret, r.stdout)
        # Python's own TLS (urllib through HTTPS_PROXY, trusting SSL_CERT_FILE) as well.
        r = self.run_in(sb, 'python3 -c \'import os, urllib.request as u; print(u.urlopen(u.Request('
                            '"https://allowed.test:8443/headers", headers={"X-Api-Key": '
                            'os.environ["API_KEY"]}), timeout=20).read().decode())\'')
        self.assert_ok(r, 'urllib over HTTPS')
        self.assertIn('X-Api-Key: ' + secret, r.stdout)
        # The certificate curl saw is the proxy's leaf, under "carapace egress <id>".
        r = self.run_in(sb, 'curl -sS -v --max-time 20 -o /dev/null '
                            'https://allowed.test:8443/ 2>&1')
        self.assertIn('carapace egress ' + sb.id, r.stdout)
        terminated = [d for d in self.log_decisions(sb.id)
                      if d.get('port') == 8443 and d.get('tls_terminated')]
        self.assertTrue(terminated and terminated[0].get('credential') == 'API_KEY',
                        self.log_decisions(sb.id))
        # A foreign key in the slot: refused over TLS with the proxy's reason.
        r = self.run_in(sb, 'curl -sS --max-time 20 -D - -o /dev/null -H "X-Api-Key: mine" '
                            'https://allowed.test:8443/headers')
        # -D shows the CONNECT's 200 first, then the answer inside the TLS.
        self.assertIn('\r\nHTTP/1.1 403 Forbidden\r\n', r.stdout, r.stdout + r.stderr)
        self.assertIn('credential_foreign_secret', r.stdout)
        # Without credentials: no CA, no variables in new execs, and HTTPS to the host is a
        # tunnel again (the proxy's leaf is gone; the server's own certificate is not trusted
        # by the system bundle alone, so the handshake fails).
        sb.set_network(hosts)
        r = self.run_in(sb, 'echo "[$SSL_CERT_FILE$NODE_EXTRA_CA_CERTS]"')
        self.assertEqual(r.stdout.strip(), '[]', r.stdout)
        r = self.run_in(sb, 'curl -sS -v --max-time 20 -o /dev/null '
                            'https://allowed.test:8443/ 2>&1')
        self.assertNotIn('carapace egress', r.stdout)
        # Given the origin's CA, the sandbox completes that handshake with the origin's own
        # certificate: the tunnel is end to end, the proxy has no part in its TLS.
        with open(os.path.join(self.ca_dir, 'ca.pem')) as f:
            sb.files.write('origin-ca.pem', f.read())
        r = self.run_in(sb, 'curl -sS -v --max-time 20 --cacert origin-ca.pem -o /dev/null '
                            'https://allowed.test:8443/ 2>&1')
        self.assert_ok(r, 'end-to-end HTTPS with the origin\'s CA')
        self.assertIn('issuer: CN=carapace test CA', r.stdout)
        self.assertNotIn('carapace egress', r.stdout)
        with open(self.daemon.log_path, encoding='utf-8', errors='replace') as f:
            self.assertNotIn(secret, f.read())

    def test_a_sandbox_without_a_policy_has_no_socket_and_no_way_out(self):
        sb = self.sandbox()
        self.assertEqual(sb.info['network'], {'internet': False, 'allow_hosts': [],
                                              'deny_hosts': [], 'credentials': [], 'upstreams': [],
                                              'proxy': None})
        r = self.run_in(sb, 'ls -A /run/carapace-egress; env | grep -ci _proxy=')
        self.assertEqual(r.stdout.strip(), '0', r.stdout + r.stderr)
        r = self.run_in(sb, CURL + 'http://allowed.test:8080/')
        self.assertNotEqual(r.exit_code, 0)
        self.assertEqual(self.log_decisions(sb.id), [])

    def test_the_policy_changes_while_the_sandbox_runs(self):
        # Through the Python client: created with a policy, changed with set_network.
        sb = cc.Sandbox.create(template=self.tpl['id'], allow_hosts=['allowed.test:8080'],
                               client=self.client)
        self.addCleanup(sb.kill)
        self.assertEqual(sb.network['allow_hosts'], ['allowed.test:8080'])
        self.assert_ok(self.run_in(sb, CURL + 'http://allowed.test:8080/a'), 'first policy')
        sb.set_network(allow_hosts=['other.test:8080'])
        self.assertEqual(sb.network['allow_hosts'], ['other.test:8080'])
        r = self.run_in(sb, CURL + 'http://allowed.test:8080/b')
        self.assertNotEqual(r.exit_code, 0, r.stdout)
        r = self.run_in(sb, CURL + 'http://other.test:8080/c')
        self.assert_ok(r, 'second policy')
        self.assertEqual(r.stdout, 'path=/c host=other.test:8080')
        # Off: the proxy and its socket go; on again: a new proxy.
        view = self.client.json('PUT', '/sandboxes/%s/network' % sb.id, {'internet': False})
        self.assertEqual(view['network']['proxy'], None)
        r = self.run_in(sb, 'ls -A /run/carapace-egress; ' + CURL + 'http://other.test:8080/d')
        self.assertNotEqual(r.exit_code, 0, r.stdout)
        self.assertNotIn('proxy.sock', r.stdout)
        # Through `carapace sandbox network`.
        cli = subprocess.run([os.environ['CARAPACE_EXE'], 'sandbox', 'network', sb.id,
                              '--allow-host', 'allowed.test'], env=self.daemon.env(),
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(json.loads(cli.stdout)['network']['internet'], True)
        self.assert_ok(self.run_in(sb, CURL + 'http://allowed.test:8080/e'), 'on again')
        # Bad input changes nothing and says what is wrong.
        for body, needle in [({'allow_hosts': ['a b']}, 'network.allow_hosts[0]'),
                             ({'allow_hosts': ['x.test'], 'internet': False}, 'internet false'),
                             ({'bogus': 1}, 'bogus')]:
            with self.assertRaises(cc.CarapaceError) as e:
                self.client.json('PUT', '/sandboxes/%s/network' % sb.id, body)
            self.assertEqual(e.exception.status, 400)
            self.assertIn(needle, str(e.exception))
        self.assert_ok(self.run_in(sb, CURL + 'http://allowed.test:8080/f'), 'after bad input')
        with self.assertRaises(cc.CarapaceError) as e:
            self.client.json('PUT', '/sandboxes/sb-000000000000/network', {'allow_hosts': []})
        self.assertEqual(e.exception.status, 404)

    def test_a_templates_policy_is_its_sandboxes_default(self):
        tpl = self.client.json('POST', '/templates', {
            'isolation': 'process', 'rootfs': daemon_harness.require_env('CARAPACE_ROOTFS'),
            'pool_size': 0, 'name': 'egress-default',
            'network': {'allow_hosts': ['allowed.test:8080']}}, timeout=600)
        self.addCleanup(self.client.json, 'DELETE', '/templates/' + tpl['id'])
        self.assertEqual(tpl['network']['allow_hosts'], ['allowed.test:8080'])
        sb = self.sandbox(template=tpl)
        self.assert_ok(self.run_in(sb, CURL + 'http://allowed.test:8080/'), 'default policy')
        off = self.sandbox({'internet': False}, template=tpl)
        self.assertEqual(off.info['network']['internet'], False)
        r = self.run_in(off, 'ls -A /run/carapace-egress')
        self.assertEqual(r.stdout.strip(), '')

    def test_policies_hold_after_a_daemon_crash_and_restart(self):
        tpl = self.client.json('POST', '/templates', {
            'isolation': 'process', 'rootfs': daemon_harness.require_env('CARAPACE_ROOTFS'),
            'pool_size': 1, 'name': 'egress-restart',
            'network': {'allow_hosts': ['other.test:8080'],
                        'credentials': [{'hosts': ['other.test:8080'], 'env': 'TPL_KEY',
                                         'header': 'X-Api-Key: {secret}',
                                         'secret': 'template-secret-0123456789'}]}}, timeout=600)
        self.assertEqual(tpl['network']['credentials'][0]['secret'], '<redacted>')
        self.addCleanup(self.client.json, 'DELETE', '/templates/' + tpl['id'])
        sb = self.sandbox({'allow_hosts': ['allowed.test:8080']})
        self.assert_ok(self.run_in(sb, CURL + 'http://allowed.test:8080/'), 'before the crash')
        proxies = egress_proxy_pids(self.daemon.state)
        self.assertGreaterEqual(len(proxies), 1)
        self.daemon.proc.kill()
        self.daemon.proc.wait()
        self.daemon.start()
        # The crashed run's proxies went with it (their death signal, or the next run's
        # cleanup) and their control sockets with them.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and set(proxies) & set(egress_proxy_pids(
                self.daemon.state)):
            time.sleep(0.1)
        self.assertEqual(set(proxies) & set(egress_proxy_pids(self.daemon.state)), set())
        self.assertEqual(os.listdir(os.path.join(self.daemon.state, 'egress')), [])
        with self.assertRaises(cc.CarapaceError):
            self.client.json('GET', '/sandboxes/' + sb.id)
        reloaded = self.client.json('GET', '/templates/' + tpl['id'])
        self.assertEqual(reloaded['network']['allow_hosts'], ['other.test:8080'])
        # The secrets were never written: the reloaded template has none until given again.
        self.assertEqual(reloaded['network']['credentials'], [])
        found = subprocess.run(['grep', '-rl', 'template-secret-0123456789', self.daemon.state],
                               capture_output=True, text=True)
        self.assertEqual(found.stdout, '')
        again = self.sandbox(template=tpl)
        self.assert_ok(self.run_in(again, CURL + 'http://other.test:8080/'), 'after the restart')
        self.assertEqual(self.run_in(again, 'printf %s "$TPL_KEY"').stdout, '')
        r = self.run_in(again, CURL + 'http://allowed.test:8080/')
        self.assertNotEqual(r.exit_code, 0, r.stdout)


if __name__ == '__main__':
    unittest.main()
