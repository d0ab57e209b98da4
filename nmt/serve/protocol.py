"""uvicorn's HTTP/1.1 protocol with a read timeout, so a slow client cannot hold a connection.

uvicorn closes an idle kept-alive connection after ``timeout_keep_alive`` seconds, but once a
client has sent one byte of a request (or opened a connection and sent nothing), it waits for
the rest for ever: a few clients that send half a request each could hold every connection.
:func:`protocol_class` adds a deadline: a client has ``read_timeout`` seconds, counted from the
moment the connection opens or the previous response was sent, to send a whole request
(headers and body).  Past it the server answers 408 if no request had begun (the headers were
incomplete), and closes the connection.  The time the server itself takes to translate does
not count: the clock stops when the request is whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

READING = (h11.IDLE, h11.SEND_BODY)
"""The client's h11 states while the server waits for (the rest of) a request."""


class ReadTimeoutProtocol(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request is not whole in time."""

    read_timeout: float = 30.0  # seconds; :func:`protocol_class` sets it per server

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_clock()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._stop_clock()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state not in READING:  # the request is whole (or the connection is over)
            self._stop_clock()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start on a pipelined request, which stops the clock
        if not self.transport.is_closing() and self.conn.their_state in READING:
            self._start_clock()

    def _start_clock(self) -> None:
        self._stop_clock()
        self._deadline = self.loop.call_later(self.read_timeout, self._timed_out)

    def _stop_clock(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        """Answer 408 when no request has begun, then close; a half-sent body just closes."""
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info(
            "closed a connection from %s: no whole request within %g s (--read-timeout)",
            self.client[0] if self.client else "?",
            self.read_timeout,
        )
        if self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE:
            body = json.dumps({"error": f"no whole request within {self.read_timeout:g} s"}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            try:
                self.transport.write(
                    self.conn.send(h11.Response(status_code=408, headers=headers, reason=b"Request Timeout"))
                )
                self.transport.write(self.conn.send(h11.Data(data=body)))
                self.transport.write(self.conn.send(h11.EndOfMessage()))
            except h11.LocalProtocolError:  # h11 would not send it in this state: just close
                pass
        self.transport.close()


def protocol_class(read_timeout: float) -> type[ReadTimeoutProtocol]:
    """The protocol class uvicorn should build connections with: ``Config(http=...)``."""
    return type("ReadTimeoutProtocol", (ReadTimeoutProtocol,), {"read_timeout": read_timeout})
