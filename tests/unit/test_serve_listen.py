"""nmt serve binds its port before it loads a model: a port in use is one line and exit 2, at once."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from nmt.serve.listen import bind
from nmt.util.errors import UserError


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another socket listens on (as a running server would)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server would: no excuse to share
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_bind_refuses_a_port_in_use(taken_port: int) -> None:
    with pytest.raises(UserError, match=f"port {taken_port} on 127.0.0.1 is in use"):
        bind("127.0.0.1", taken_port)


def test_bind_port_zero_takes_a_free_port() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1" and sock.getsockname()[1] > 0
    finally:
        sock.close()


def test_a_host_that_is_not_this_machine_is_one_line() -> None:
    with pytest.raises(UserError, match=r"--host 192\.0\.2\.1: not an address of this machine"):
        bind("192.0.2.1", 0)  # TEST-NET-1: never a local address


def test_serve_on_a_port_in_use_fails_in_one_line_before_loading_a_model(
    taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[object] = []
    monkeypatch.setattr("nmt.serve.server.load_served", lambda *args, **kwargs: loads.append(args))
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"not loaded")
    code, out, err = run_cli(["serve", "--checkpoint", str(checkpoint), "--port", str(taken_port)], capsys)
    assert code == 2 and out == "", err
    assert err.strip().splitlines() == [err.strip()] and f"port {taken_port} on 127.0.0.1 is in use" in err, err
    assert err.startswith("nmt: error: ") and loads == []


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_read_timeout_that_is_not_a_positive_number_is_refused(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code, _, err = run_cli(["serve", "--checkpoint", str(tmp_path / "x.pt"), "--read-timeout", value], capsys)
    assert code == 2 and "--read-timeout" in err and len(err.strip().splitlines()) == 1, err
