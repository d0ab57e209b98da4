"""``nmt serve`` as a child process on a free loopback port: for tests, benchmarks and screenshots.

Lives beside the benchmarks, not in the package: ``nmt`` never starts itself this way. The
benchmarks import it as ``_serve_process`` (their folder is on ``sys.path`` when they run),
docs_build/page_screenshot.py adds scripts/ to its path for it, and tests/conftest.py puts
scripts/ on ``sys.path`` for the tests' ``serving``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

LISTENING = re.compile(rb"Uvicorn running on (http://[0-9.]+:\d+)")


def _wait_for_url(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        match = LISTENING.search(log.read_bytes())
        if match:
            return match.group(1).decode()
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise RuntimeError(f"nmt serve exited with status {proc.returncode}: {tail[0]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"nmt serve did not listen within {timeout:.0f} s (log: {log})")
        time.sleep(0.05)


@contextmanager
def server_process(args: list[str], log: Path, timeout: float = 300, cwd: Optional[Path] = None) -> Iterator[str]:
    """Start ``nmt serve args --port 0`` (output to ``log``); yield its base URL once /health answers.

    The process is terminated (then killed) on exit, whatever happened inside.
    """
    with open(log, "w+b") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nmt", "serve", *args, "--port", "0"], cwd=cwd, stdout=handle, stderr=handle
        )
        try:
            url = _wait_for_url(proc, log, timeout)
            with urllib.request.urlopen(url + "/health", timeout=timeout) as response:
                if response.status != 200:
                    raise RuntimeError(f"{url}/health answered {response.status}")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
