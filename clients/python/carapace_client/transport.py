"""HTTP to the daemon: over its Unix socket (default) or TCP with a bearer token. Standard
library only (http.client); one connection per request, so nothing is shared between threads."""

import http.client
import json
import os
import socket

from .errors import TransportError, error_for

DEFAULT_SOCKET = "/run/carapace.sock"


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose socket is a Unix stream socket."""

    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def resolve_socket(socket_path=None):
    """``socket_path``, else $CARAPACE_SOCKET, else /run/carapace.sock."""
    return socket_path or os.environ.get("CARAPACE_SOCKET") or DEFAULT_SOCKET


class Client:
    """Where the daemon is and how to talk to it.

    ``Client()`` uses the Unix socket from $CARAPACE_SOCKET (or /run/carapace.sock);
    ``Client(socket="/path")`` another socket; ``Client(host="127.0.0.1", port=N, token=T)`` the
    optional TCP listener (token defaults to $CARAPACE_TOKEN).
    """

    def __init__(self, socket=None, host=None, port=None, token=None, timeout=60.0):
        self.host = host
        self.port = port
        self.socket = None if host else resolve_socket(socket)
        self.token = token if token is not None else os.environ.get("CARAPACE_TOKEN")
        self.timeout = timeout

    def __repr__(self):
        where = self.socket if self.socket else f"{self.host}:{self.port}"
        return f"Client({where!r})"

    def _connection(self, timeout):
        if self.socket:
            return UnixHTTPConnection(self.socket, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=None):
        """Sends a request and returns (status, headers, body bytes) for a 2xx answer; raises the
        API's error otherwise. ``body``: dict (JSON), bytes or str."""
        conn, resp = self.open(method, path, body, headers, timeout)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"reading the answer to {method} {path}: {e}") from None
        finally:
            conn.close()
        return resp.status, resp.headers, data

    def json(self, method, path, body=None, timeout=None):
        """A JSON call: the decoded answer (None for 204)."""
        _, _, data = self.request(method, path, body, timeout=timeout)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError as e:
            raise TransportError(f"{method} {path}: invalid JSON from the daemon: {e}") from None

    def open(self, method, path, body=None, headers=None, timeout=None):
        """Sends a request; returns (connection, response) with the body unread when the status
        is 2xx (the caller closes the connection), raises the API's error otherwise."""
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        if self.token and not self.socket:
            hdrs["Authorization"] = f"Bearer {self.token}"
        conn = self._connection(self.timeout if timeout is None else timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            where = self.socket or f"{self.host}:{self.port}"
            raise TransportError(f"daemon at {where}: {method} {path}: {e}") from None
        if 200 <= resp.status < 300:
            return conn, resp
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException):
            data = b""
        finally:
            conn.close()
        raise _api_error(resp.status, data)


def _api_error(status, data):
    code, message = None, None
    try:
        err = json.loads(data).get("error", {})
        code, message = err.get("code"), err.get("message")
    except (ValueError, AttributeError):
        pass
    if not isinstance(message, str) or not message:
        message = f"HTTP {status}"
    if not isinstance(code, str):
        code = "http_" + str(status)
    return error_for(status, code, message)


def error_from_document(document, status=500):
    """An error from an ``{"error": {...}}`` object (the SSE ``error`` event)."""
    err = document.get("error", {}) if isinstance(document, dict) else {}
    code = err.get("code") if isinstance(err.get("code"), str) else "internal"
    message = err.get("message") if isinstance(err.get("message"), str) else "exec failed"
    statuses = {"bad_request": 400, "not_found": 404, "conflict": 409, "too_large": 413,
                "limit": 429, "internal": 500, "unavailable": 503}
    return error_for(statuses.get(code, status), code, message)


def read_sse(resp):
    """Yields (event, data) pairs from a text/event-stream response."""
    event, data = "message", []
    while True:
        try:
            line = resp.readline()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"event stream: {e}") from None
        if not line:
            return
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
