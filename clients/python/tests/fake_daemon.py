"""A fake `carapace serve` on a Unix socket: enough of docs/api.md (including SSE exec output in
chunked framing) to test the Python client's requests, answers, errors and streaming."""

import base64
import copy
import http.server
import json
import os
import socketserver
import tempfile
import threading
import urllib.parse


class _UnixServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = __import__("socket").AF_UNIX
    daemon_threads = True

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "localhost", 0


def _err(status, code, message):
    return status, {"error": {"code": code, "message": message}}


_PROXY = "http://127.0.0.1:3128"
_NO_INTERNET = {"internet": False, "allow_hosts": [], "deny_hosts": [], "credentials": [],
                "upstreams": [], "proxy": None}


def _policy(doc, where="network"):
    """A network object (docs/api.md, "Egress") checked as the daemon does, as far as a fake
    can: (the view's network, None) or (None, an error). Names come back lower case without a
    trailing dot, so a client that shows what it sent rather than the answer is caught."""
    if not isinstance(doc, dict):
        return None, _err(400, "bad_request", f"{where}: must be an object")
    unknown = set(doc) - {"allow_hosts", "deny_hosts", "internet", "credentials", "upstreams"}
    if unknown:
        return None, _err(400, "bad_request", f"{where}.{sorted(unknown)[0]}: unknown field")
    lists = {}
    for key in ("allow_hosts", "deny_hosts"):
        rules = doc.get(key, [])
        if not isinstance(rules, list) or len(rules) > 256:
            return None, _err(400, "bad_request", f"{where}.{key}: at most 256 rules")
        for i, rule in enumerate(rules):
            if not isinstance(rule, str) or not rule or any(c.isspace() for c in rule):
                return None, _err(400, "bad_request",
                                  f"{where}.{key}[{i}]: {rule!r} is not a host rule")
        lists[key] = [r.lower().rstrip(".") for r in rules]
    internet = doc.get("internet", bool(lists["allow_hosts"]))
    if not isinstance(internet, bool):
        return None, _err(400, "bad_request", f"{where}.internet: must be a boolean")
    if not internet and lists["allow_hosts"]:
        return None, _err(400, "bad_request", f"{where}: allow_hosts given with internet false")
    creds = doc.get("credentials", [])
    if not isinstance(creds, list):
        return None, _err(400, "bad_request", f"{where}.credentials: must be an array")
    view = []
    for i, c in enumerate(creds):
        if not isinstance(c, dict) or not {"hosts", "secret", "env"} <= set(c):
            return None, _err(400, "bad_request", f"{where}.credentials[{i}]: missing fields")
        view.append({k: ("<redacted>" if k == "secret" else v) for k, v in c.items()})
    if view and not internet:
        return None, _err(400, "bad_request", f"{where}: credentials need internet")
    if not internet:
        return copy.deepcopy(_NO_INTERNET), None
    ups = doc.get("upstreams", [])
    if not isinstance(ups, list):
        return None, _err(400, "bad_request", f"{where}.upstreams: must be an array")
    return dict(internet=True, **lists, credentials=view, upstreams=list(ups), proxy=_PROXY), None


class FakeDaemon:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="carapace-fake-")
        self.socket = os.path.join(self.dir, "api.sock")
        self.requests = []  # (method, path, headers, body)
        self.sandboxes = {}
        self.templates = {}
        self.files = {}
        self._n = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def address_string(self):
                return "unix"

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                fake.requests.append((self.command, self.path, dict(self.headers), body))
                fake.route(self, body)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

            def send_json(self, status, doc):
                data = b"" if doc is None else json.dumps(doc).encode()
                self.send_response(status)
                if doc is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # Not even an empty write after a 204: the client may have closed already, having
                # all it waits for, and the write would fail with EPIPE in the server thread.
                if data:
                    self.wfile.write(data)

            def send_bytes(self, data, ctype="application/octet-stream"):
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_sse(self, events):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event, data in events:
                    text = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
                    # Split each event over two chunks: the client must reassemble.
                    for part in (text[:7], text[7:]):
                        self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.server = _UnixServer(self.socket, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.socket)
        os.rmdir(self.dir)

    def _id(self, prefix):
        self._n += 1
        return f"{prefix}-{self._n:012x}"

    def route(self, h, body):
        url = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        doc = None
        if body and h.headers.get("Content-Type") == "application/json":
            try:
                doc = json.loads(body)
            except ValueError:
                return h.send_json(*_err(400, "bad_request", "body is not JSON"))
        m = h.command
        if parts == ["health"]:
            return h.send_json(200, {"version": "0.1.0", "isolation": ["process"],
                                     "default_isolation": "process",
                                     "kvm": False, "cpu_virtualization": "none",
                                     "sandboxes": len(self.sandboxes),
                                     "templates": len(self.templates)})
        if parts == ["templates"] and m == "POST":
            if "kernel" not in doc and "rootfs" not in doc:
                return h.send_json(*_err(400, "bad_request", "kernel: required for microvm"))
            network = doc.get("network", False)
            if network is True:
                return h.send_json(*_err(400, "bad_request", 'network: give a policy object '
                                         '{"allow_hosts": [...]} (true allows nothing)'))
            if network is not False:
                policy, error = _policy(network)
                if error:
                    return h.send_json(*error)
                # The view holds the default as its sandboxes get it, or false for none.
                network = False
                if policy["internet"]:
                    network = {k: policy[k] for k in ("allow_hosts", "deny_hosts", "internet")}
            t = dict(doc, id=self._id("tpl"), pool={"size": 0, "ready": 0, "hits": 0,
                                                    "misses": 0}, sandboxes=0, network=network)
            self.templates[t["id"]] = t
            return h.send_json(201, t)
        if parts == ["templates"] and m == "GET":
            return h.send_json(200, {"templates": list(self.templates.values())})
        if len(parts) == 2 and parts[0] == "templates":
            if parts[1] not in self.templates:
                return h.send_json(*_err(404, "not_found", f"template {parts[1]} not found"))
            if m == "DELETE":
                if any(s["template"] == parts[1] for s in self.sandboxes.values()):
                    return h.send_json(*_err(409, "conflict", "template has sandboxes"))
                del self.templates[parts[1]]
                return h.send_json(204, None)
            return h.send_json(200, self.templates[parts[1]])
        if parts == ["sandboxes"] and m == "POST":
            unknown = set(doc) - {"template", "timeout_s", "env", "network", "mounts"}
            if unknown:
                return h.send_json(*_err(400, "bad_request", f"{sorted(unknown)[0]}: unknown field"))
            if doc.get("template") not in self.templates:
                return h.send_json(*_err(404, "not_found", f"template {doc.get('template')} not found"))
            if len(self.sandboxes) >= 3:
                return h.send_json(*_err(429, "limit", "at most 3 sandboxes"))
            # Without a network member the template's default policy, if it has one.
            default = self.templates[doc["template"]].get("network") or {"internet": False}
            network, error = _policy(doc.get("network", default))
            if error:
                return h.send_json(*error)
            sb = {"id": self._id("sb"), "template": doc["template"], "isolation": "process",
                  "state": "running", "parent": None, "from_pool": False,
                  "env": doc.get("env", {}), "timeout_s": doc.get("timeout_s", 300),
                  "network": network,
                  "mounts": [dict(m, mode=m.get("mode", "ro")) for m in doc.get("mounts", [])]}
            self.sandboxes[sb["id"]] = sb
            return h.send_json(201, sb)
        if parts == ["sandboxes"] and m == "GET":
            return h.send_json(200, {"sandboxes": list(self.sandboxes.values())})
        if len(parts) >= 2 and parts[0] == "sandboxes":
            sb = self.sandboxes.get(parts[1])
            if sb is None:
                return h.send_json(*_err(404, "not_found", f"sandbox {parts[1]} not found"))
            rest = parts[2:]
            if not rest:
                if m == "DELETE":
                    del self.sandboxes[sb["id"]]
                    return h.send_json(204, None)
                return h.send_json(200, sb)
            if rest == ["pause"] or rest == ["resume"]:
                want = "running" if rest == ["pause"] else "paused"
                if sb["state"] != want:
                    return h.send_json(*_err(409, "conflict", f"sandbox is {sb['state']}"))
                sb["state"] = "paused" if rest == ["pause"] else "running"
                return h.send_json(200, sb)
            if rest == ["timeout"]:
                sb["timeout_s"] = doc["timeout_s"]
                return h.send_json(200, sb)
            if rest == ["network"] and m == "PUT":
                if sb["state"] != "running":
                    return h.send_json(*_err(409, "conflict", f"sandbox {sb['id']} is "
                                             f"{sb['state']}; its agent cannot take a new network"))
                network, error = _policy(doc if doc is not None else {})
                if error:
                    return h.send_json(*error)
                sb["network"] = network
                return h.send_json(200, sb)
            if rest == ["fork"]:
                network = sb["network"]  # absent: each child keeps the parent's policy
                if "network" in doc:
                    network, error = _policy(doc["network"])
                    if error:
                        return h.send_json(*error)
                mounts = []  # none unless asked; inherited writable ones become "ro"
                if doc.get("mounts") == "inherit":
                    same = doc.get("mounts_mode") == "same"
                    mounts = [dict(m, mode=m["mode"] if same else "ro") for m in sb["mounts"]]
                elif isinstance(doc.get("mounts"), list):
                    mounts = [dict(m, mode=m.get("mode", "ro")) for m in doc["mounts"]]
                kids = []
                for _ in range(doc.get("count", 1)):
                    kid = dict(sb, id=self._id("sb"), parent=sb["id"],
                               network=copy.deepcopy(network), mounts=mounts)
                    self.sandboxes[kid["id"]] = kid
                    kids.append(kid)
                return h.send_json(201, {"children": kids})
            if rest == ["files"] and m == "PUT":
                self.files[query["path"]] = body
                return h.send_json(200, {"path": query["path"], "size": len(body)})
            if rest == ["files"] and m == "GET":
                if query.get("path") not in self.files:
                    return h.send_json(*_err(404, "not_found", f"{query.get('path')}: no such file"))
                return h.send_bytes(self.files[query["path"]])
            if rest == ["files", "list"]:
                return h.send_json(200, {"entries": [
                    {"name": k, "type": "file", "size": len(v), "mode": 0o644, "mtime": 0}
                    for k, v in sorted(self.files.items())], "truncated": False})
            if rest == ["documents"]:
                if not isinstance(doc.get("spec"), dict) or "title" not in doc["spec"]:
                    return h.send_json(*_err(400, "bad_request", "spec: title is required"))
                return h.send_bytes(b"PK\x03\x04" + doc["format"].encode(),
                                    "application/octet-stream")
            if rest == ["exec"]:
                return self.exec(h, sb, doc)
        return h.send_json(*_err(404, "not_found", f"no route {m} {url.path}"))

    def exec(self, h, sb, doc):
        argv = doc["argv"]
        env = dict(sb["env"], **doc.get("env", {}))
        if argv == ["sh", "-c", "exit 3"]:
            result = {"exit_code": 3, "signal": None, "stdout": "", "stderr": "",
                      "timed_out": False, "truncated": False, "duration_ms": 1}
        elif argv[0] == "missing":
            if doc.get("stream"):
                return h.send_sse([("error", {"error": {"code": "bad_request",
                                                        "message": "missing: not found"}})])
            return h.send_json(*_err(400, "bad_request", "missing: not found"))
        else:
            out = " ".join(argv[1:] if argv[0] == "echo" else argv) + "\n"
            out += "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
            result = {"exit_code": 0, "signal": None, "stdout": out, "stderr": "warn\n",
                      "timed_out": False, "truncated": False, "duration_ms": 2}
        if not doc.get("stream") and "text/event-stream" not in h.headers.get("Accept", ""):
            return h.send_json(200, result)
        events = []
        for name in ("stdout", "stderr"):
            data = result.pop(name).encode()
            for i in range(0, len(data), 3):
                events.append((name, {"data": base64.b64encode(data[i:i + 3]).decode()}))
        events.append(("exit", result))
        h.send_sse(events)
