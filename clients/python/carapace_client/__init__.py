"""carapace_client: a Python client of the carapace sandbox daemon (``carapace serve``,
docs/api.md). Standard library only.

    from carapace_client import Sandbox
    with Sandbox.create(template="tpl-...") as sb:
        print(sb.exec("echo hi").stdout)
"""

from .errors import (BadRequest, CarapaceError, Conflict, ExpectationFailed, HeadersTooLarge,
                     InsufficientStorage, InternalError, LimitExceeded, MethodNotAllowed,
                     MisdirectedRequest, NotFound, NotImplementedByDaemon, RequestTimeout,
                     TooLarge, TransportError, Unauthorized, Unavailable, UriTooLong)
from .sandbox import ExecResult, Files, Sandbox, Template, health
from .transport import DEFAULT_SOCKET, Client

__all__ = [
    "BadRequest", "CarapaceError", "Client", "Conflict", "DEFAULT_SOCKET", "ExecResult",
    "ExpectationFailed", "Files", "HeadersTooLarge", "InsufficientStorage", "InternalError",
    "LimitExceeded", "MethodNotAllowed", "MisdirectedRequest", "NotFound", "NotImplementedByDaemon",
    "RequestTimeout", "Sandbox", "Template", "TooLarge", "TransportError", "Unauthorized",
    "Unavailable", "UriTooLong", "health",
]
__version__ = "0.1.0"
