"""Errors of the carapace sandbox API (docs/api.md): one class per error code."""


class CarapaceError(Exception):
    """An API error: HTTP ``status`` (None for transport failures), the API's ``code`` and its
    one-line ``message``."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self):
        if self.status is None:
            return f"{self.code}: {self.message}"
        return f"{self.status} {self.code}: {self.message}"


class BadRequest(CarapaceError):
    """400: a malformed request, an unknown field, a wrong type or an out-of-range value."""


class Unauthorized(CarapaceError):
    """401: over TCP without the right bearer token."""


class NotFound(CarapaceError):
    """404: no such template or sandbox (or file)."""


class MethodNotAllowed(CarapaceError):
    """405: a known path, but not this method."""


class RequestTimeout(CarapaceError):
    """408: the request was not received in time."""


class Conflict(CarapaceError):
    """409: the sandbox or template is in the wrong state."""


class TooLarge(CarapaceError):
    """413: a request body (or a file asked for) over the daemon's limit."""


class UriTooLong(CarapaceError):
    """414: the request line is too long."""


class ExpectationFailed(CarapaceError):
    """417: an Expect header other than 100-continue."""


class MisdirectedRequest(CarapaceError):
    """421: a Host other than localhost on the TCP listener."""


class LimitExceeded(CarapaceError):
    """429: a daemon limit (max sandboxes, memory)."""


class HeadersTooLarge(CarapaceError):
    """431: the request's header fields are too large."""


class InternalError(CarapaceError):
    """500: the daemon failed."""


class NotImplementedByDaemon(CarapaceError):
    """501: an unknown method or transfer coding."""


class Unavailable(CarapaceError):
    """503: the daemon cannot serve this now."""


class InsufficientStorage(CarapaceError):
    """507: the sandbox's disk is full."""


class TransportError(CarapaceError):
    """The daemon could not be reached, or its answer was cut or malformed."""

    def __init__(self, message):
        super().__init__(None, "transport", message)


# docs/api.md's codes, each with its one status; a unit test of the daemon checks this table
# against the daemon's own (common/http/error_code.h) and docs/openapi.yaml.
_CODES = [
    ("bad_request", 400, BadRequest),
    ("unauthorized", 401, Unauthorized),
    ("not_found", 404, NotFound),
    ("method_not_allowed", 405, MethodNotAllowed),
    ("request_timeout", 408, RequestTimeout),
    ("conflict", 409, Conflict),
    ("too_large", 413, TooLarge),
    ("uri_too_long", 414, UriTooLong),
    ("expectation_failed", 417, ExpectationFailed),
    ("misdirected_request", 421, MisdirectedRequest),
    ("limit", 429, LimitExceeded),
    ("headers_too_large", 431, HeadersTooLarge),
    ("internal", 500, InternalError),
    ("not_implemented", 501, NotImplementedByDaemon),
    ("unavailable", 503, Unavailable),
    ("insufficient_storage", 507, InsufficientStorage),
]
_BY_STATUS = {status: cls for _, status, cls in _CODES}
_BY_CODE = {code: cls for code, _, cls in _CODES}


def error_for(status, code, message):
    """The most specific error class for an answer."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or CarapaceError
    return cls(status, code, message)
