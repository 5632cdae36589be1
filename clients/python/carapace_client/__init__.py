"""carapace_client: a Python client of the carapace sandbox daemon (``carapace serve``,
docs/api.md). Standard library only.

    from carapace_client import Sandbox
    with Sandbox.create(template="tpl-...") as sb:
        print(sb.exec("echo hi").stdout)
"""

from .errors import (BadRequest, CarapaceError, Conflict, InternalError, LimitExceeded,
                     NotFound, TooLarge, TransportError, Unavailable)
from .sandbox import ExecResult, Files, Sandbox, Template, health
from .transport import DEFAULT_SOCKET, Client

__all__ = [
    "BadRequest", "CarapaceError", "Client", "Conflict", "DEFAULT_SOCKET", "ExecResult", "Files",
    "InternalError", "LimitExceeded", "NotFound", "Sandbox", "Template", "TooLarge",
    "TransportError", "Unavailable", "health",
]
__version__ = "0.1.0"
