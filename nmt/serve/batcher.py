"""One worker thread runs every search; requests that arrive together share one search call.

A request becomes a :class:`Job` (its search key and source ids) with a future.  The worker
takes the first waiting job, waits up to ``wait_s`` for more, groups the jobs by
:class:`~nmt.serve.models.SearchKey` (same model, beam, n-best, length limit, attention) and
translates each group's sentences in one call, at most ``max_sentences`` at a time.  Beam
search treats every sentence of a batch alone, so a merged request gets the translations it
would get alone; it only waits less than it would behind the others one by one.

Its scores are the same up to float rounding, not to the last bit: a batch of another shape
(more rows, a longer padded source) makes the matrix products add in another order, on the
CPU as on a GPU, so a score may move in its 6th or 7th significant digit, and then across the
4-decimal rounding of the response (-432.8435 merged, -432.8436 alone).  The promise is
``|merged - alone| <= SCORE_RTOL * |alone| + SCORE_ATOL``; a translation could differ only
where two hypotheses tie within that rounding.  Bit-equal scores would need one search per
sentence, which is what merging exists to avoid.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Optional

from nmt.serve.models import SearchKey

log = logging.getLogger(__name__)

SCORE_RTOL = 1e-5
"""How far, relative to its size, a merged request's score may be from the score it gets alone."""
SCORE_ATOL = 1e-4
"""Plus one unit in the 4th decimal, where response scores are rounded."""

Rows = list[dict[str, Any]]
Translate = Callable[[SearchKey, list[list[int]]], Rows]
"""Runs one search call: ids of many sentences in, one response row per sentence out."""


class Busy(Exception):
    """More requests are waiting than the server queues."""


@dataclass
class Job:
    key: SearchKey
    sentences: list[list[int]]
    future: Future[Rows] = field(default_factory=Future)


@dataclass
class Stats:
    requests: int = 0  # jobs answered
    sentences: int = 0
    searches: int = 0  # search calls made: fewer than requests when requests were merged
    largest_search: int = 0  # most sentences in one call
    failed: int = 0  # jobs whose search raised


class Batcher:
    """The worker thread and its queue (start with :meth:`start`, end with :meth:`close`)."""

    def __init__(self, translate: Translate, *, wait_s: float, max_sentences: int, max_pending: int) -> None:
        self._translate, self._wait_s, self._max_sentences = translate, wait_s, max_sentences
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=max_pending)
        self._thread = threading.Thread(target=self._work, name="nmt-search", daemon=True)
        self.stats = Stats()

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Finish the jobs already queued, then stop the worker."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def submit(self, key: SearchKey, sentences: list[list[int]]) -> Future[Rows]:
        """Queue a job; its future holds the rows (or the exception the search raised)."""
        job = Job(key, sentences)
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise Busy(f"{self._queue.maxsize} requests are already waiting") from None
        return job.future

    def _gather(self, first: Job) -> tuple[list[Job], bool]:
        """``first`` and every job that arrives within the wait; True when asked to stop."""
        jobs, deadline = [first], time.monotonic() + self._wait_s
        while True:
            left = deadline - time.monotonic()  # after the wait, still take what is already queued
            try:
                job = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                return jobs, False
            if job is None:
                return jobs, True
            jobs.append(job)

    def _work(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                return
            jobs, stop = self._gather(first)
            try:
                self._serve(jobs)
            except Exception:
                log.exception("the search worker failed on a batch of %d requests", len(jobs))
                for job in jobs:
                    _settle(job.future, exc=RuntimeError("the search failed"))

    def _serve(self, jobs: list[Job]) -> None:
        groups: dict[SearchKey, list[Job]] = {}
        for job in jobs:
            groups.setdefault(job.key, []).append(job)
        for key, group in groups.items():
            for chunk in _chunks(group, self._max_sentences):
                self._run(key, chunk)

    def _run(self, key: SearchKey, jobs: list[Job]) -> None:
        sentences = [s for job in jobs for s in job.sentences]
        try:
            rows = self._translate(key, sentences)
        except Exception as exc:
            self.stats.failed += len(jobs)
            for job in jobs:
                _settle(job.future, exc=exc)
            return
        self.stats.searches += 1
        self.stats.largest_search = max(self.stats.largest_search, len(sentences))
        start = 0
        for job in jobs:
            _settle(job.future, rows=rows[start : start + len(job.sentences)])
            start += len(job.sentences)
            self.stats.requests += 1
            self.stats.sentences += len(job.sentences)


def _settle(future: Future[Rows], rows: Optional[Rows] = None, exc: Optional[BaseException] = None) -> None:
    """Give ``future`` its rows or exception, unless its request already gave up (cancelled) or got one."""
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(rows if rows is not None else [])
    except InvalidStateError:
        pass


def _chunks(jobs: list[Job], max_sentences: int) -> list[list[Job]]:
    """Consecutive jobs, at most ``max_sentences`` sentences per chunk (a larger job alone)."""
    chunks: list[list[Job]] = []
    size = 0
    for job in jobs:
        if chunks and size + len(job.sentences) <= max_sentences:
            chunks[-1].append(job)
            size += len(job.sentences)
        else:
            chunks.append([job])
            size = len(job.sentences)
    return chunks
