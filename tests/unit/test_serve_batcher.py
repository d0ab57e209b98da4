"""The serving batcher: merging, grouping, chunking, errors and back-pressure, with a fake search."""

from __future__ import annotations

import threading

import pytest

from nmt.serve.batcher import Batcher, Busy, Job, _chunks
from nmt.serve.models import SearchKey
from nmt.util.errors import UserError

KEY = SearchKey("a", 5, 1, None, False)


class FakeSearch:
    """Echoes each sentence back; records every call's key and sentences; can be held or made to fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[SearchKey, list[list[int]]]] = []
        self.release = threading.Event()
        self.release.set()
        self.fail: Exception | None = None

    def __call__(self, key: SearchKey, sentences: list[list[int]]) -> list[dict]:
        self.release.wait(10)
        self.calls.append((key, sentences))
        if self.fail is not None:
            raise self.fail
        return [{"ids": list(s), "model": key.model} for s in sentences]


def make(search: FakeSearch, **kw: float) -> Batcher:
    options = dict(wait_s=0.0, max_sentences=64, max_pending=100) | kw
    return Batcher(search, **options)


def test_jobs_waiting_together_share_one_search_and_get_their_own_rows() -> None:
    search = FakeSearch()
    batcher = make(search)
    futures = [batcher.submit(KEY, [[i], [i, i]]) for i in range(5)]  # queued before the worker starts
    batcher.start()
    results = [f.result(10) for f in futures]
    batcher.close()
    assert len(search.calls) == 1 and len(search.calls[0][1]) == 10
    for i, rows in enumerate(results):
        assert [r["ids"] for r in rows] == [[i], [i, i]]
    assert batcher.stats.requests == 5 and batcher.stats.searches == 1 and batcher.stats.largest_search == 10


def test_different_keys_are_searched_apart() -> None:
    search = FakeSearch()
    batcher = make(search)
    other = KEY._replace(beam=1)
    futures = [batcher.submit(k, [[1]]) for k in (KEY, other, KEY, other._replace(model="b"))]
    batcher.start()
    rows = [f.result(10) for f in futures]
    batcher.close()
    assert sorted(len(s) for _, s in search.calls) == [1, 1, 2]
    assert {k for k, _ in search.calls} == {KEY, other, other._replace(model="b")}
    assert rows[3][0]["model"] == "b"


def test_a_search_holds_at_most_max_sentences_unless_one_request_is_larger() -> None:
    jobs = [Job(KEY, [[1]] * n) for n in (3, 2, 4, 9, 1)]
    sizes = [[len(j.sentences) for j in chunk] for chunk in _chunks(jobs, 5)]
    assert sizes == [[3, 2], [4], [9], [1]]


def test_requests_that_arrive_during_a_search_are_merged_into_the_next() -> None:
    search = FakeSearch()
    batcher = make(search)
    batcher.start()
    search.release.clear()  # hold the first search so the others queue up behind it
    first = batcher.submit(KEY, [[0]])
    later = [batcher.submit(KEY, [[i]]) for i in range(1, 7)]
    search.release.set()
    assert first.result(10)[0]["ids"] == [0]
    assert [f.result(10)[0]["ids"] for f in later] == [[i] for i in range(1, 7)]
    batcher.close()
    assert batcher.stats.searches < batcher.stats.requests == 7


def test_a_failing_search_fails_each_of_its_requests_and_the_worker_goes_on() -> None:
    search = FakeSearch()
    search.fail = UserError("bad beam")
    batcher = make(search)
    futures = [batcher.submit(KEY, [[1]]) for _ in range(2)]
    batcher.start()
    for f in futures:
        with pytest.raises(UserError, match="bad beam"):
            f.result(10)
    search.fail = None
    assert batcher.submit(KEY, [[2]]).result(10)[0]["ids"] == [2]
    batcher.close()


def test_a_full_queue_refuses_instead_of_growing() -> None:
    batcher = make(FakeSearch(), max_pending=2)  # not started: nothing leaves the queue
    batcher.submit(KEY, [[1]])
    batcher.submit(KEY, [[2]])
    with pytest.raises(Busy):
        batcher.submit(KEY, [[3]])


def test_a_request_that_gave_up_does_not_stop_the_worker() -> None:
    batcher = make(FakeSearch())
    gone = batcher.submit(KEY, [[1]])
    assert gone.cancel()  # its client went away before the search
    batcher.start()
    assert batcher.submit(KEY, [[2]]).result(10)[0]["ids"] == [2]
    batcher.close()


def test_close_answers_what_was_queued() -> None:
    batcher = make(FakeSearch())
    future = batcher.submit(KEY, [[4]])
    batcher.start()
    batcher.close()
    assert future.done() and future.result()[0]["ids"] == [4]
