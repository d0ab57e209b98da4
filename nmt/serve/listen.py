"""The server's listening socket, bound before any model loads, and the uvicorn server on it.

``nmt serve`` binds ``host:port`` itself, first, and hands the socket to uvicorn: a port that
is taken is then a one-line error before minutes of loading, and no other process can take
the port between a check and the server's own bind.
"""

from __future__ import annotations

import errno
import logging
import socket
from typing import Optional

import uvicorn

from nmt.util.errors import UserError


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not yet listening), with uvicorn's options.

    Port 0 binds any free port (read it back with ``getsockname()``).  A port in use, a host
    that is not an address of this machine, or a port the user may not bind is a
    :class:`~nmt.util.errors.UserError` in one line.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn decides it
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may reuse a port in TIME_WAIT
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(_bind_error(host, port, exc)) from None
    sock.set_inheritable(True)
    return sock


def _bind_error(host: str, port: int, exc: OSError) -> str:
    """One line saying why ``host:port`` could not be bound."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (another server?); choose another with --port, or 0 for any free port"
    if exc.errno == errno.EACCES:
        return f"port {port} on {host}: permission denied (ports below 1024 need privileges); choose another --port"
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"--host {host}: not an address of this machine ({exc.strerror or exc})"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


class ListeningServer(uvicorn.Server):
    """uvicorn's server, run on sockets bound beforehand: ``ListeningServer(config).run(sockets=[sock])``."""

    async def startup(self, sockets: Optional[list[socket.socket]] = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and sockets:  # uvicorn says where it listens only on sockets it binds itself
            host, port = self.config.host, sockets[0].getsockname()[1]
            logging.getLogger("uvicorn.error").info(  # the line uvicorn writes, which clients wait for
                "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", f"[{host}]" if ":" in host else host, port
            )
