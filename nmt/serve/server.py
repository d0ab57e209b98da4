"""Start uvicorn on the application: ``nmt serve``.

Torch is imported only where a model needs it (``--engine torch``): a server of ONNX or
CTranslate2 exports runs without it.
"""

from __future__ import annotations

import ipaddress
import logging
import math
from collections.abc import Sequence
from typing import Optional

from nmt.serve.limits import READ_TIMEOUT, Limits
from nmt.serve.models import check_sources, describe, load_served
from nmt.util.errors import UserError

log = logging.getLogger(__name__)

KEEP_ALIVE = 5
"""Seconds an idle kept-alive connection stays open (uvicorn's default, written down)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    checkpoints: Sequence[str],
    *,
    host: str,
    port: int,
    limits: Limits,
    model_dirs: Sequence[str] = (),
    engine: Optional[str] = None,
    device: str = "auto",
    threads: int = 0,
    compute_type: str = "float32",
    read_timeout: float = READ_TIMEOUT,
) -> None:
    """Load every checkpoint and export folder once and serve them until interrupted (Ctrl-C).

    The port is bound before any model loads, so a port in use is a one-line error at once;
    a client has ``read_timeout`` seconds to send a whole request (:mod:`nmt.serve.protocol`).
    ``engine`` runs every model (``--checkpoint`` needs torch; ``model_dirs`` are ``nmt export``
    folders of its format; None: torch beside a checkpoint, else the folders' own format's engine);
    ``threads`` are its CPU threads.
    """
    try:
        import uvicorn

        from nmt.serve.app import create_app
        from nmt.serve.listen import ListeningServer, bind
        from nmt.serve.protocol import protocol_class
    except ImportError as exc:
        raise UserError(f"nmt serve needs FastAPI and uvicorn ({exc}); pip install fastapi uvicorn") from None
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port}: must be between 0 and 65535 (0 = any free port)")
    if threads < 0:
        raise UserError(f"--threads {threads}: must be 0 (follow the free cores) or more")
    if not (math.isfinite(read_timeout) and read_timeout > 0):
        raise UserError(f"--read-timeout {read_timeout}: must be a number of seconds above 0")
    engine = check_sources(checkpoints, model_dirs, engine, device)
    sock = bind(host, port)  # first: a port in use fails before anything else happens
    try:
        models = load_served(
            checkpoints,
            device,
            model_dirs=model_dirs,
            engine=engine,
            threads=threads,
            compute_type=compute_type,
        )
        if not is_loopback(host):
            log.warning("--host %s: the server is reachable from other machines; it has no authentication", host)
        for model in models.values():
            log.info("%s", describe(model))
        config = uvicorn.Config(
            create_app(models, limits),
            host=host,
            port=sock.getsockname()[1],
            http=protocol_class(read_timeout),
            timeout_keep_alive=KEEP_ALIVE,
            log_level="info",
        )
        ListeningServer(config).run(sockets=[sock])
    finally:
        sock.close()
