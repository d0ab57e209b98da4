"""The FastAPI application: /translate, /models, /health and the page at /.

Every error a client can cause is a 4xx with a JSON body ``{"error": "...", ...}``: 404 for
an unknown model or path, 413 for a body over the size limit, 422 for a request outside the
schema or the limits (or asking attention of a model whose engine returns none), 503 when too
many requests wait.  Anything else is a 500 whose body
says only that the server failed (the traceback goes to the server's log, not the client).
"""

# no ``from __future__ import annotations``: FastAPI reads the handler's request type at runtime
import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nmt.serve.batcher import Batcher, Busy
from nmt.serve.limits import Limits
from nmt.serve.models import SearchKey, ServedModel
from nmt.serve.schema import TranslateRequest, request_model
from nmt.util.errors import UserError

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")


def error(status: int, message: str, headers: Optional[Mapping[str, str]] = None, **extra: Any) -> JSONResponse:
    """The body of every error: ``{"error": "one line", ...}``."""
    return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 before it is parsed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = error(413, f"request body over {self.limit} bytes")
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        messages: list[Message] = []  # read it all (chunked bodies declare no length), then replay
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":  # the client left (or was timed out): nobody to answer
                return
            messages.append(message)
            size += len(message.get("body", b""))
            more = message["type"] == "http.request" and message.get("more_body", False)
            if size > self.limit:
                await too_large(scope, receive, send)
                return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def validation_errors(errors: Sequence[Any]) -> tuple[str, list[dict[str, Any]]]:
    """One line naming the first problem, and every problem as type, location and message.

    The client's own input is not echoed back: it may be large, or not encodable as UTF-8
    (a lone surrogate), which would turn a 422 into a 500.
    """
    detail: list[dict[str, Any]] = [
        {
            "type": str(e.get("type")),
            "loc": [str(part) for part in e.get("loc", ())],
            "msg": str(e.get("msg", "invalid")),
        }
        for e in errors
    ]
    first = detail[0] if detail else {"type": "", "loc": [], "msg": "invalid request"}
    if first["type"] == "json_invalid":
        return "the request body is not valid JSON", detail
    where = ".".join(part for part in first["loc"] if part != "body")
    return (f"{where}: {first['msg']}" if where else str(first["msg"])), detail


def create_app(models: dict[str, ServedModel], limits: Limits) -> FastAPI:
    """The application serving ``models`` (the first is the default) under ``limits``."""
    if not models:
        raise UserError("a server needs at least one model")
    default = next(iter(models))
    batcher = Batcher(
        lambda key, ids: models[key.model].translate(key, ids),
        wait_s=limits.batch_wait_ms / 1000,
        max_sentences=limits.batch_sentences,
        max_pending=limits.max_pending,
    )
    Body = request_model(limits)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        batcher.start()
        yield
        batcher.close()

    # no /docs or /redoc: they load their scripts from a CDN, and the server must work offline
    app = FastAPI(title="nmt serve", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_middleware(BodyLimit, limit=limits.max_request_bytes)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, detail = validation_errors(exc.errors())
        return error(422, message, detail=detail)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail), headers=exc.headers)  # 405 keeps its Allow header

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        log.error("internal error: %s: %s", type(exc).__name__, exc)
        return error(500, "internal server error (see the server's log)")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness, the loaded model names, and how many requests were merged into how many searches."""
        return {"status": "ok", "models": list(models), "stats": asdict(batcher.stats)}

    @app.get("/models")
    async def list_models() -> dict[str, Any]:
        """Every loaded model: name, engine, attention type and what attention it shows, parameters,
        vocabulary sizes and the config (null where an export does not record them)."""
        return {"default": default, "limits": asdict(limits), "models": [m.info() for m in models.values()]}

    async def translate(body: Body) -> Any:  # type: ignore[valid-type]
        """Translate ``text`` with one model; scores per hypothesis, attention on request."""
        request: TranslateRequest = body
        name = request.model or default
        served = models.get(name)
        if served is None:
            return error(404, f"unknown model {name!r}; loaded: {', '.join(models)}")
        beam = request.beam or min(served.decode.beam, limits.max_beam)
        if request.n_best > beam:
            return error(422, f"n_best {request.n_best} exceeds the beam {beam}")
        if request.attention and not served.about.search_attention:
            return error(
                422,
                f"model {name!r} runs on --engine {served.engine.name}, which returns no attention weights; "
                'leave out "attention", or serve the model with --engine torch or onnxruntime',
            )
        if request.attention and len(request.text) > limits.max_attention_sentences:
            return error(
                422,
                f"attention is returned for at most {limits.max_attention_sentences} sentences "
                f"per request (got {len(request.text)}); split the request",
            )
        try:
            ids = served.encode(request.text, limits.max_src_tokens)
            future = batcher.submit(SearchKey(name, beam, request.n_best, request.max_len, request.attention), ids)
            rows = await asyncio.wrap_future(future)
        except Busy as exc:
            return error(503, f"server busy: {exc}; retry later", headers={"Retry-After": "1"})
        except UserError as exc:
            return error(422, str(exc))
        return {
            "model": name,
            "beam": beam,
            "n_best": request.n_best,
            "translations": [{"source": text, **row} for text, row in zip(request.text, rows)],
        }

    app.post("/translate")(translate)
    return app
