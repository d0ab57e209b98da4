"""Load test of `nmt serve` on loopback: requests/s and latency percentiles by sentences per request.

Starts ``nmt serve --checkpoint CKPT`` as a child process on a free 127.0.0.1 port, then for
each size in ``--batch-sizes`` sends requests of that many sentences (taken in turn from the
input) from ``--concurrency`` client threads, each on its own keep-alive connection, until
``--requests`` requests are answered or ``--seconds`` have passed, whichever comes first.
Two untimed requests warm each size up.  One JSON line per size on stdout: requests and
sentences per second, latency percentiles (ms), and how many search calls the server made
(fewer than requests when it merged concurrent ones).  Nothing leaves the machine.

Command behind the README figures (after ``make demo``)::

    python scripts/bench_serve.py --checkpoint runs/demo/checkpoints/best.pt
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

import _bench_common as common
from _serve_process import server_process
from bench_decode import default_input
from nmt.config.saved import saved_config
from nmt.run import checkpoint as ckpt
from nmt.util import runtime
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines

SCRIPT = "bench_serve.py"
EXAMPLE = "runs/demo/checkpoints/best.pt"


class Client:
    """One keep-alive connection to the server (opened again when the server closed an idle one)."""

    def __init__(self, url: str) -> None:
        self.conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=300)  # netloc: "host:port"

    def _send(self, method: str, path: str, body: Optional[bytes] = None) -> tuple[int, dict[str, Any]]:
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
                response = self.conn.getresponse()
                return response.status, json.loads(response.read())
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()  # uvicorn drops connections idle for 5 s; the next request reconnects
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        status, data = self._send("POST", path, json.dumps(payload).encode())
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}: {data.get('error')}")
        return data

    def get(self, path: str) -> dict[str, Any]:
        return self._send("GET", path)[1]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def load(
    url: str, lines: list[str], size: int, *, requests: int, seconds: float, concurrency: int, beam: Optional[int]
) -> dict[str, Any]:
    """Send up to ``requests`` requests of ``size`` sentences from ``concurrency`` threads."""

    def payload(i: int) -> dict[str, Any]:
        start = (i * size) % len(lines)
        text = [lines[(start + k) % len(lines)] for k in range(size)]
        return {"text": text, **({"beam": beam} if beam else {})}

    warm = Client(url)
    for i in range(2):
        warm.post("/translate", payload(i))
    before = warm.get("/health")["stats"]
    latencies: list[float] = []
    counter, lock, errors = iter(range(requests)), threading.Lock(), []
    deadline = time.monotonic() + seconds

    def worker() -> None:
        client = Client(url)
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            began = time.perf_counter()
            try:
                client.post("/translate", payload(i))
            except Exception as exc:
                errors.append(str(exc))
                return
            with lock:
                latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    after = warm.get("/health")["stats"]
    done = len(latencies)
    ms = [1000 * x for x in latencies] or [float("nan")]
    return {
        "sentences_per_request": size,
        "concurrency": concurrency,
        "requests": done,
        "seconds": round(wall, 2),
        "requests_per_s": round(done / wall, 2),
        "sentences_per_s": round(done * size / wall, 1),
        "latency_ms": {
            "mean": round(statistics.fmean(ms), 1),
            **{f"p{q}": round(percentile(ms, q), 1) for q in (50, 90, 99)},
            "max": round(max(ms), 1),
        },
        "searches": after["searches"] - before["searches"],
        "errors": errors[:3],
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=Path(EXAMPLE),
        help=f"Checkpoint to serve (default: {EXAMPLE}, trained by `make demo`).",
    )
    parser.add_argument(
        "--input",
        type=Path,
        default=None,
        help="Source sentences, one per line (default: the test split of the checkpoint's corpus).",
    )
    parser.add_argument("--batch-sizes", default="1,16", help="Comma-separated sentences per request (default: 1,16).")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads sending at once (default: 8).")
    parser.add_argument("--requests", type=int, default=300, help="Most requests per size (default: 300).")
    parser.add_argument("--seconds", type=float, default=60, help="Most seconds per size (default: 60).")
    parser.add_argument("--beam", type=int, default=None, help="Beam per request (default: the model's decode.beam).")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="Where the server runs its model: auto = CUDA when present, else CPU (default: auto).",
    )
    parser.add_argument(
        "--server-threads",
        type=int,
        default=0,
        help="Torch threads of the server (0 = follow the free cores) (default: 0).",
    )
    return parser


def main(argv: Optional[list[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        sizes = common.parse_list(args.batch_sizes, int)
    except ValueError:
        common.fail(SCRIPT, f"--batch-sizes takes comma-separated integers (got {args.batch_sizes!r})")
    if not sizes or min(sizes) < 1 or args.concurrency < 1 or args.requests < 1 or args.seconds <= 0:
        common.fail(SCRIPT, "--batch-sizes, --concurrency, --requests and --seconds must be positive")
    if not args.checkpoint.is_file():
        common.fail(SCRIPT, f"--checkpoint {args.checkpoint}: no such file (`make demo` trains {EXAMPLE})")
    try:
        device = runtime.select_device(args.device)
        config = saved_config(ckpt.load(args.checkpoint).config)
        lines = [line for line in read_lines(args.input or default_input(config)) if line.strip()]
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    if not lines:
        common.fail(SCRIPT, "no sentences to send")
    server_args = [
        "--checkpoint",
        str(args.checkpoint),
        "--host",
        "127.0.0.1",  # loopback only, always
        "--max-sentences",
        str(max(sizes)),
        "--threads",
        str(args.server_threads),
        "--device",
        args.device,
    ]
    with tempfile.TemporaryDirectory() as tmp, server_process(server_args, Path(tmp) / "server.log") as url:
        for size in sizes:
            record = load(
                url,
                lines,
                size,
                requests=args.requests,
                seconds=args.seconds,
                concurrency=args.concurrency,
                beam=args.beam,
            )
            common.emit(
                {
                    "bench": "serve",
                    "checkpoint": str(args.checkpoint),
                    "beam": args.beam or config.decode.beam,
                    **record,
                    **runtime.hardware(device),
                }
            )


if __name__ == "__main__":
    main()
