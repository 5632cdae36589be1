"""Sandboxes and templates of the carapace daemon, in the shape of E2B-style SDKs."""

import base64
import binascii
import codecs
import json
import urllib.parse
from dataclasses import dataclass, field

from .errors import TransportError
from .transport import Client, error_from_document, read_sse

# Slack on top of a command's own timeout for the HTTP wait.
_WAIT_SLACK_S = 30.0
_DEFAULT_EXEC_WAIT_S = 600.0


def _client(socket=None, client=None):
    if client is not None:
        return client
    return Client(socket=socket)


def _q(value):
    return urllib.parse.quote(str(value), safe="")


def _rules(name, rules):
    # A bare string would otherwise go out as one rule per character.
    if isinstance(rules, (str, bytes)):
        raise TypeError(f"{name}: a list of rules, not a string")
    return [str(r) for r in rules]


def _credentials(credentials):
    """The API's ``network.credentials`` list: each entry a dict with ``hosts``, ``header``
    (``"Authorization: Bearer {secret}"``) or ``query``, ``secret`` and ``env``."""
    if isinstance(credentials, dict):
        raise TypeError("credentials: a list of entries, not one entry")
    out = []
    for entry in credentials:
        if not isinstance(entry, dict):
            raise TypeError("credentials: each entry is a dict")
        out.append(dict(entry))
    return out


def _mounts(mounts):
    """The API's ``mounts`` list: each entry a dict with ``host_path``, ``guest_path`` and
    optionally ``mode``, or a ``(host_path, guest_path[, mode])`` tuple."""
    if isinstance(mounts, (str, dict)):
        raise TypeError("mounts: a list of mounts, not one")
    out = []
    for m in mounts:
        if isinstance(m, dict):
            out.append(dict(m))
        elif isinstance(m, (tuple, list)) and len(m) in (2, 3):
            entry = {"host_path": m[0], "guest_path": m[1]}
            if len(m) == 3:
                entry["mode"] = m[2]
            out.append(entry)
        else:
            raise TypeError("mounts: each entry is a dict or a (host_path, guest_path[, mode]) tuple")
    return out


def _network(allow_hosts, deny_hosts, internet, credentials=None, upstreams=None):
    """The API's ``network`` object from the keyword arguments, or None when none was given."""
    if (allow_hosts is None and deny_hosts is None and internet is None and credentials is None
            and upstreams is None):
        return None
    network = {}
    if upstreams is not None:
        network["upstreams"] = [dict(u) for u in upstreams]
    if credentials is not None:
        network["credentials"] = _credentials(credentials)
    if allow_hosts is not None:
        network["allow_hosts"] = _rules("allow_hosts", allow_hosts)
    if deny_hosts is not None:
        network["deny_hosts"] = _rules("deny_hosts", deny_hosts)
    if internet is not None:
        network["internet"] = bool(internet)
    return network


@dataclass
class ExecResult:
    """What a command did. ``exit_code`` is None when a signal ended it (``signal``)."""

    exit_code: object = None
    stdout: str = ""
    stderr: str = ""
    signal: object = None
    timed_out: bool = False
    duration_ms: int = 0
    truncated: bool = False

    @property
    def ok(self):
        return self.exit_code == 0 and not self.timed_out

    @classmethod
    def from_json(cls, j, stdout=None, stderr=None):
        if not isinstance(j, dict):
            raise TransportError("exec result is not a JSON object")
        return cls(
            exit_code=j.get("exit_code"),
            stdout=j.get("stdout", "") if stdout is None else stdout,
            stderr=j.get("stderr", "") if stderr is None else stderr,
            signal=j.get("signal"),
            timed_out=bool(j.get("timed_out", False)),
            duration_ms=j.get("duration_ms", 0) or 0,
            truncated=bool(j.get("truncated", False)),
        )


class Files:
    """``sandbox.files``: paths are relative to the sandbox's work directory (/work)."""

    def __init__(self, sandbox):
        self._sb = sandbox

    def write(self, path, data, mode=None, parents=False):
        """Writes ``data`` (bytes, or str as UTF-8); returns {"path", "size"}."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        target = self._sb._path(f"/files?path={_q(path)}")
        if mode is not None:
            target += f"&mode={mode:04o}" if isinstance(mode, int) else f"&mode={_q(mode)}"
        if parents:
            target += "&parents=true"
        _, _, body = self._sb._client.request(
            "PUT", target, bytes(data), {"Content-Type": "application/octet-stream"},
            timeout=max(self._sb._client.timeout, 300.0))
        try:
            return json.loads(body) if body else {}
        except ValueError:
            return {}

    def read(self, path):
        """The file's bytes."""
        _, _, body = self._sb._client.request(
            "GET", self._sb._path(f"/files?path={_q(path)}"),
            timeout=max(self._sb._client.timeout, 300.0))
        return body

    def read_text(self, path, encoding="utf-8"):
        return self.read(path).decode(encoding)

    def list(self, path="."):
        """Entries of a folder: dicts with name, type, size, mode, mtime."""
        j = self._sb._client.json("GET", self._sb._path(f"/files/list?path={_q(path)}"))
        return (j or {}).get("entries", [])


class Sandbox:
    """One sandbox. ``with Sandbox.create(template=...) as sb:`` kills it on exit."""

    def __init__(self, info, client):
        self._client = client
        self.info = info
        self.id = info["id"]
        self.files = Files(self)

    def __repr__(self):
        return f"Sandbox({self.id!r})"

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def create(cls, template, timeout=300, env=None, socket=None, allow_hosts=None,
               deny_hosts=None, internet=None, client=None, credentials=None, upstreams=None,
               mounts=None):
        """A new sandbox from ``template`` (an id) living ``timeout`` seconds.

        ``allow_hosts``/``deny_hosts`` (lists of rules such as ``"pypi.org:443"``,
        ``"*.pythonhosted.org"``, ``"10.0.0.0/8:443"``) and ``internet`` set its egress policy;
        with none of them given the template's default applies (docs/api.md, "Egress").
        ``credentials`` (a list of ``{"hosts": [...], "header": "Authorization: Bearer
        {secret}", "secret": ..., "env": "NAME"}``) are added by the host's proxy to the requests
        for their hosts; the sandbox sees only a sentinel in ``$NAME``. ``upstreams`` (``[{"alias":
        "api.carapace.internal", "origin": "https://api.example.com"}]``) are plain-HTTP names
        the proxy sends on to their origins over verified TLS (docs/api.md, "Credentials").
        ``mounts`` (``[{"host_path": "/srv/ws/proj", "guest_path": "/work/proj", "mode": "rw"}]``
        or ``[("/srv/ws/proj", "/work/proj", "rw")]``; mode ``ro`` by default, ``rw`` or
        ``rw-nodelete``) shares host folders beneath the daemon's ``mount_roots``; given (also
        as ``[]``) it replaces the template's (docs/api.md, "Mounts")."""
        c = _client(socket, client)
        body = {"template": template}
        if timeout is not None:
            body["timeout_s"] = int(timeout)
        if env:
            body["env"] = dict(env)
        network = _network(allow_hosts, deny_hosts, internet, credentials, upstreams)
        if network is not None:
            body["network"] = network
        if mounts is not None:
            body["mounts"] = _mounts(mounts)
        return cls(c.json("POST", "/sandboxes", body), c)

    @classmethod
    def connect(cls, sandbox_id, socket=None, client=None):
        """An existing sandbox by id."""
        c = _client(socket, client)
        return cls(c.json("GET", f"/sandboxes/{_q(sandbox_id)}"), c)

    @classmethod
    def list(cls, socket=None, client=None):
        c = _client(socket, client)
        return [cls(info, c) for info in (c.json("GET", "/sandboxes") or {}).get("sandboxes", [])]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    # -- commands -----------------------------------------------------------------------------
    def exec(self, cmd, env=None, cwd=None, timeout=None, on_stdout=None, on_stderr=None,
             stdin=None):
        """Runs ``cmd`` (a list is the argv; a str runs under ``sh -c``). ``timeout`` in seconds.
        With ``on_stdout``/``on_stderr`` the output is streamed to them (as str, decoded as
        UTF-8 with replacement) while the command runs, and also collected in the result."""
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        body = {"argv": argv}
        if env:
            body["env"] = dict(env)
        if cwd:
            body["cwd"] = cwd
        if stdin is not None:
            body["stdin"] = stdin
        if timeout is not None:
            body["timeout_ms"] = max(1, int(timeout * 1000))
        wait = (timeout if timeout is not None else _DEFAULT_EXEC_WAIT_S) + _WAIT_SLACK_S
        if on_stdout is None and on_stderr is None:
            body["stream"] = False
            return ExecResult.from_json(
                self._client.json("POST", self._path("/exec"), body, timeout=wait))
        body["stream"] = True
        return self._exec_stream(body, wait, on_stdout, on_stderr)

    def _exec_stream(self, body, wait, on_stdout, on_stderr):
        conn, resp = self._client.open("POST", self._path("/exec"), body,
                                       {"Accept": "text/event-stream"}, timeout=wait)
        out, err = bytearray(), bytearray()
        # A UTF-8 character may be split between two events: decode incrementally per stream.
        decoders = {name: codecs.getincrementaldecoder("utf-8")(errors="replace")
                    for name in ("stdout", "stderr")}
        try:
            for event, data in read_sse(resp):
                try:
                    doc = json.loads(data)
                except ValueError:
                    raise TransportError(f"exec stream: event {event!r} is not JSON") from None
                if event == "exit":
                    return ExecResult.from_json(doc, out.decode("utf-8", "replace"),
                                                err.decode("utf-8", "replace"))
                if event == "error":
                    raise error_from_document(doc)
                if event not in ("stdout", "stderr"):
                    continue
                try:
                    chunk = base64.b64decode(doc.get("data", ""), validate=True)
                except (binascii.Error, AttributeError, TypeError):
                    raise TransportError(f"exec stream: bad base64 in a {event} event") from None
                (out if event == "stdout" else err).extend(chunk)
                cb = on_stdout if event == "stdout" else on_stderr
                text = decoders[event].decode(bytes(chunk))
                if cb is not None and text:
                    cb(text)
        finally:
            conn.close()
        raise TransportError("exec stream ended without an exit event")

    # Alias in the E2B spelling.
    def run(self, cmd, **kwargs):
        return self.exec(cmd, **kwargs)

    def document(self, spec, format="docx"):
        """Renders a docgen ``spec`` (dict) into ``format`` (docx, pptx, xlsx, pdf): the bytes."""
        _, _, body = self._client.request("POST", self._path("/documents"),
                                          {"spec": spec, "format": format},
                                          timeout=max(self._client.timeout, 300.0))
        return body

    # -- lifecycle ----------------------------------------------------------------------------
    def refresh(self):
        self.info = self._client.json("GET", self._path())
        return self.info

    @property
    def state(self):
        return self.info.get("state")

    def pause(self):
        self.info = self._client.json("POST", self._path("/pause"), {})
        return self

    def resume(self):
        self.info = self._client.json("POST", self._path("/resume"), {})
        return self

    def fork(self, count=1, network=None, mounts=None, mounts_mode=None):
        """``count`` children of this running sandbox, as Sandbox objects. ``network`` (a dict
        of the API's shape: ``{"allow_hosts": [...], "deny_hosts": [...], "internet": bool}``) is
        the children's egress policy; without it each child keeps the parent's rules but gets
        no credentials (name them in ``network["credentials"]`` to give some). ``mounts``:
        none by default, ``"inherit"`` (the parent's, made read-only unless ``mounts_mode`` is
        ``"same"``) or a list as ``create`` takes."""
        body = {"count": int(count)}
        if network is not None:
            body["network"] = dict(network)
        if mounts is not None:
            body["mounts"] = "inherit" if mounts == "inherit" else _mounts(mounts)
        if mounts_mode is not None:
            body["mounts_mode"] = mounts_mode
        j = self._client.json("POST", self._path("/fork"), body,
                              timeout=max(self._client.timeout, 300.0))
        return [Sandbox(info, self._client) for info in (j or {}).get("children", [])]

    @property
    def mounts(self):
        """The sandbox's mounts: ``[{"host_path", "guest_path", "mode"}]``."""
        return self.info.get("mounts", [])

    @property
    def network(self):
        """The egress policy as the daemon last reported it: ``{"internet", "allow_hosts",
        "deny_hosts", "credentials", "upstreams", "proxy"}``; ``proxy`` is the address programs inside use
        (None without internet); each credential's ``secret`` reads ``"<redacted>"``."""
        return self.info.get("network")

    def set_network(self, allow_hosts=(), deny_hosts=(), internet=None, credentials=(),
                    upstreams=()):
        """Replaces the egress policy live (connections it now denies are cut); no allow rule,
        or ``internet=False``, leaves no way out. ``credentials`` replace the sandbox's: an
        entry whose ``env`` it already had keeps its sentinel (a new secret is a rotation), one
        left out is revoked. Returns self with ``info`` updated."""
        body = {"allow_hosts": _rules("allow_hosts", allow_hosts),
                "deny_hosts": _rules("deny_hosts", deny_hosts),
                "credentials": _credentials(credentials),
                "upstreams": [dict(u) for u in upstreams]}
        if internet is not None:
            body["internet"] = bool(internet)
        self.info = self._client.json("PUT", self._path("/network"), body)
        return self

    def set_timeout(self, seconds):
        """A new time to live, counted from now."""
        self.info = self._client.json("POST", self._path("/timeout"), {"timeout_s": int(seconds)})
        return self

    def kill(self):
        """Destroys the sandbox; a sandbox already gone is not an error."""
        from .errors import NotFound

        try:
            self._client.request("DELETE", self._path())
        except NotFound:
            pass

    def _path(self, suffix=""):
        return f"/sandboxes/{_q(self.id)}{suffix}"


@dataclass
class Template:
    """A template: built once, then sandboxes are restored from it."""

    info: dict
    client: Client = field(repr=False)

    @property
    def id(self):
        return self.info["id"]

    @classmethod
    def create(cls, isolation=None, kernel=None, rootfs=None, initrd=None, boot_args=None,
               name=None, vcpus=None, mem_mib=None, pool_size=None, agent_timeout_s=None,
               network=None, socket=None, client=None, timeout=900.0):
        """Builds a template (blocks until its snapshot exists; ``timeout`` seconds at most)."""
        c = _client(socket, client)
        body = {k: v for k, v in {
            "name": name, "isolation": isolation, "kernel": kernel, "initrd": initrd,
            "rootfs": rootfs, "boot_args": boot_args, "vcpus": vcpus, "mem_mib": mem_mib,
            "pool_size": pool_size, "agent_timeout_s": agent_timeout_s, "network": network,
        }.items() if v is not None}
        return cls(c.json("POST", "/templates", body, timeout=timeout), c)

    @classmethod
    def get(cls, template_id, socket=None, client=None):
        c = _client(socket, client)
        return cls(c.json("GET", f"/templates/{_q(template_id)}"), c)

    @classmethod
    def list(cls, socket=None, client=None):
        c = _client(socket, client)
        return [cls(info, c) for info in (c.json("GET", "/templates") or {}).get("templates", [])]

    def delete(self):
        self.client.request("DELETE", f"/templates/{_q(self.id)}")


def health(socket=None, client=None):
    """GET /health: version, isolation kinds, counts."""
    return _client(socket, client).json("GET", "/health")
