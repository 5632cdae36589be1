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
    """400: an unknown field, a wrong type or an out-of-range value."""


class NotFound(CarapaceError):
    """404: no such template or sandbox (or file)."""


class Conflict(CarapaceError):
    """409: the sandbox or template is in the wrong state."""


class TooLarge(CarapaceError):
    """413: a request body over the daemon's limit."""


class LimitExceeded(CarapaceError):
    """429: a daemon limit (max sandboxes, memory)."""


class InternalError(CarapaceError):
    """500: the daemon failed."""


class Unavailable(CarapaceError):
    """503: the daemon cannot serve this now."""


class TransportError(CarapaceError):
    """The daemon could not be reached, or its answer was cut or malformed."""

    def __init__(self, message):
        super().__init__(None, "transport", message)


_BY_STATUS = {
    400: BadRequest,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: LimitExceeded,
    500: InternalError,
    503: Unavailable,
}
_BY_CODE = {
    "bad_request": BadRequest,
    "not_found": NotFound,
    "conflict": Conflict,
    "too_large": TooLarge,
    "limit": LimitExceeded,
    "internal": InternalError,
    "unavailable": Unavailable,
}


def error_for(status, code, message):
    """The most specific error class for an answer."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or CarapaceError
    return cls(status, code, message)
