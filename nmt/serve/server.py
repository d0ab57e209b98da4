"""Start uvicorn on the application: ``nmt serve``."""

from __future__ import annotations

import ipaddress
import logging
from typing import Sequence

from nmt import runtime
from nmt import threads as torch_threads
from nmt.errors import UserError
from nmt.serve.limits import Limits
from nmt.serve.models import attention_label, load_served

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(checkpoints: Sequence[str], *, host: str, port: int, limits: Limits, device: str = "auto",
          threads: int = 0) -> None:
    """Load every checkpoint once and serve them until interrupted (Ctrl-C)."""
    try:
        import uvicorn

        from nmt.serve.app import create_app
    except ImportError as exc:
        raise UserError(f"nmt serve needs FastAPI and uvicorn ({exc}); pip install fastapi uvicorn") from None
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port}: must be between 0 and 65535 (0 = any free port)")
    if threads < 0:
        raise UserError(f"--threads {threads}: must be 0 (follow the free cores) or more")
    torch_device = runtime.select_device(device)
    torch_threads.configure(threads)
    models = load_served(checkpoints, torch_device)
    if not is_loopback(host):
        log.warning("--host %s: the server is reachable from other machines; it has no authentication", host)
    for model in models.values():
        log.info("model %s: %s, %s attention, update %d", model.name, model.path,
                 attention_label(model.config), model.loaded.step)
    uvicorn.run(create_app(models, limits), host=host, port=port, log_level="info")
