"""`nmt serve` as a real process on 127.0.0.1, spoken to over HTTP: answers, merging, bad requests."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

import pytest
import torch

from conftest import PROC_TIMEOUT, run_cli, serving, transformer_overrides

READ_TIMEOUT = 2.0
"""The shared server's --read-timeout (s): short, so a test can wait it out."""
LIMITS = [
    "--max-sentences",
    "8",
    "--max-chars",
    "200",
    "--max-src-tokens",
    "30",
    "--max-beam",
    "6",
    "--max-output-tokens",
    "40",
    "--max-request-bytes",
    "4096",
    "--batch-wait-ms",
    "50",
    "--max-attention-sentences",
    "3",
    "--read-timeout",
    str(READ_TIMEOUT),
]


def call(
    url: str,
    path: str,
    payload: Any = None,
    *,
    method: Optional[str] = None,
    raw: Optional[bytes] = None,
    chunked: bool = False,
) -> tuple[int, Any]:
    """One HTTP request; (status, parsed JSON body)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    body = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    try:
        if chunked:
            conn.request(
                method or "POST",
                path,
                body=iter([body]),
                encode_chunked=True,
                headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            )
        else:
            conn.request(
                method or ("GET" if body is None else "POST"),
                path,
                body=body,
                headers={"Content-Type": "application/json"},
            )
        response = conn.getresponse()
        data = response.read()
        assert response.getheader("Content-Type", "").startswith("application/json"), data[:200]
        return response.status, json.loads(data)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(trained_toy: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    ckpt = trained_toy / "checkpoints"
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with serving(
        ["--checkpoint", f"toy={ckpt / 'best.pt'}", "--checkpoint", f"twin={ckpt / 'last.pt'}", *LIMITS], log
    ) as url:
        yield url


@pytest.fixture(scope="module")
def sentences(toy_files) -> list[str]:
    _, files = toy_files
    return Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[:16]


def reference(trained_toy: Path, sentences: list[str], beam: int) -> list[str]:
    """What `nmt translate` would write: the model loaded here and searched sentence by sentence."""
    from nmt.decode.inference import load_checkpoint, translate_ids

    loaded = load_checkpoint(trained_toy / "checkpoints" / "best.pt", torch.device("cpu"))
    out = []
    for line in sentences:
        result = translate_ids(
            loaded.model, loaded.src_tok.encode([line]), loaded.config.decode, torch.device("cpu"), beam=beam
        )
        out.append(loaded.tgt_tok.decode(result[0].ids[0]))
    return out


def test_binds_to_loopback_and_reports_its_models(server: str) -> None:
    assert urlsplit(server).hostname == "127.0.0.1"
    status, health = call(server, "/health")
    assert status == 200 and health["status"] == "ok" and health["models"] == ["toy", "twin"]
    status, listing = call(server, "/models")
    assert status == 200 and listing["default"] == "toy"
    toy = listing["models"][0]
    assert toy["attention"] == "bahdanau" == toy["config"]["model"]["attention"]["type"]
    assert toy["parameters"] > 1000 and 0 < toy["vocabulary"]["source"] <= toy["config"]["data"]["vocab_size"]
    assert listing["limits"]["max_beam"] == 6
    assert (toy["engine"], toy["device"], toy["model_dir"]) == ("torch", "cpu", None) and toy["checkpoint"]
    assert toy["attention_weights"] and not toy["layer_attention"] and toy["attention_note"] is None


def test_translations_equal_those_of_the_model_alone(server: str, trained_toy: Path, sentences: list[str]) -> None:
    status, answer = call(server, "/translate", {"text": sentences[:4], "beam": 3, "n_best": 3})
    assert status == 200 and answer["model"] == "toy" and answer["beam"] == 3
    assert [t["translation"] for t in answer["translations"]] == reference(trained_toy, sentences[:4], beam=3)
    for item, source in zip(answer["translations"], sentences):
        scores = [h["score"] for h in item["hypotheses"]]
        assert item["source"] == source and len(scores) == 3 and scores == sorted(scores, reverse=True)
        assert item["hypotheses"][0]["text"] == item["translation"] and "attention" not in item


def test_attention_has_a_row_per_output_token_and_a_column_per_source_token(server: str, sentences: list[str]) -> None:
    status, answer = call(server, "/translate", {"text": sentences[:2], "beam": 1, "attention": True})
    assert status == 200
    for item in answer["translations"]:
        view = item["attention"]
        weights = torch.tensor(view["weights"])
        assert view["target_tokens"][-1] == "</s>"
        assert weights.shape == (len(view["target_tokens"]), len(view["source_tokens"]))
        assert torch.allclose(weights.sum(1), torch.ones(len(weights)), atol=1e-3)


def test_max_len_bounds_the_output(server: str, sentences: list[str]) -> None:
    status, answer = call(server, "/translate", {"text": [sentences[0]], "max_len": 2, "attention": True})
    assert status == 200 and len(answer["translations"][0]["attention"]["target_tokens"]) <= 2


def test_concurrent_requests_share_searches_and_get_their_own_answers(
    server: str, trained_toy: Path, sentences: list[str]
) -> None:
    expected = reference(trained_toy, sentences, beam=2)
    _, before = call(server, "/health")
    gate, answers = threading.Barrier(len(sentences)), {}

    def ask(i: int) -> None:
        gate.wait()
        answers[i] = call(server, "/translate", {"text": [sentences[i]], "beam": 2})

    workers = [threading.Thread(target=ask, args=(i,)) for i in range(len(sentences))]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [answers[i][1]["translations"][0]["translation"] for i in range(len(sentences))] == expected
    _, after = call(server, "/health")
    requests = after["stats"]["requests"] - before["stats"]["requests"]
    searches = after["stats"]["searches"] - before["stats"]["searches"]
    assert requests == len(sentences) and searches < requests, after["stats"]


@pytest.fixture(scope="module")
def toy_transformer(tmp_path_factory: pytest.TempPathFactory, toy_files) -> Path:
    """A toy Transformer trained one epoch: enough to have every layer's and head's weights."""
    from nmt.training.entry import run_training

    _, files = toy_files
    root = tmp_path_factory.mktemp("serve_transformer")
    run_training(None, transformer_overrides(root, files, train__max_epochs=1, train__valid_every=0), progress=False)
    return root / "runs" / "toy" / "checkpoints" / "best.pt"


def test_a_transformer_returns_every_layer_and_head(
    toy_transformer: Path, sentences: list[str], tmp_path: Path
) -> None:
    with serving(["--checkpoint", f"tf={toy_transformer}"], tmp_path / "server.log") as url:
        status, listing = call(url, "/models")
        assert status == 200 and listing["models"][0]["attention"] == "transformer"
        assert listing["models"][0]["layer_attention"] is True
        status, answer = call(url, "/translate", {"text": sentences[:2], "beam": 2, "attention": True, "max_len": 6})
    assert status == 200
    for item in answer["translations"]:
        view = item["attention"]
        layers = torch.tensor(view["layers"])  # (layer, head, output tokens + EOS, source tokens)
        assert layers.shape == (2, 4, len(view["target_tokens"]), len(view["source_tokens"]))
        assert torch.allclose(layers.sum(-1), torch.ones(layers.shape[:-1]), atol=1e-3)
        assert "note" not in view


def test_merged_requests_get_their_own_translations_and_scores_within_rounding(
    toy_transformer: Path, sentences: list[str]
) -> None:
    """Requests of different sizes and lengths, merged into one search per key, against each sentence alone."""
    from nmt.decode.inference import load_checkpoint
    from nmt.decode.torch_engine import TorchEngine
    from nmt.serve.batcher import SCORE_ATOL, SCORE_RTOL, Batcher
    from nmt.serve.models import SearchKey, ServedModel

    cpu = torch.device("cpu")
    served = ServedModel("tf", toy_transformer, TorchEngine(load_checkpoint(toy_transformer, cpu), cpu))
    requests = [served.encode(sentences[start : start + n], 100) for start, n in ((0, 1), (1, 4), (5, 2), (7, 6))]
    keys = [SearchKey("tf", 1, 1, None, False), SearchKey("tf", 3, 2, None, False)]
    batcher = Batcher(served.translate, wait_s=0.0, max_sentences=64, max_pending=64)
    futures = {(key, r): batcher.submit(key, ids) for key in keys for r, ids in enumerate(requests)}  # all queued
    batcher.start()
    try:
        merged = {job: future.result(timeout=PROC_TIMEOUT) for job, future in futures.items()}
    finally:
        batcher.close()
    assert batcher.stats.searches == len(keys) and batcher.stats.largest_search == 13  # one search per key
    for (key, r), rows in merged.items():
        for ids, row in zip(requests[r], rows):
            alone = served.translate(key, [ids])[0]
            assert [h["text"] for h in row["hypotheses"]] == [h["text"] for h in alone["hypotheses"]]
            for got, want in zip(row["hypotheses"], alone["hypotheses"]):
                assert abs(got["score"] - want["score"]) <= SCORE_RTOL * abs(want["score"]) + SCORE_ATOL


def test_a_second_model_is_chosen_by_name(server: str, sentences: list[str]) -> None:
    status, answer = call(server, "/translate", {"text": sentences[:1], "model": "twin"})
    assert status == 200 and answer["model"] == "twin"


BAD = [
    ({"text": []}, 422, "text"),
    ({"text": ["a b"] * 9}, 422, "text"),  # over --max-sentences 8
    ({"text": ["a" * 201]}, 422, "text"),  # over --max-chars 200
    ({"text": [" ".join(["zz"] * 40)]}, 422, "subword tokens"),  # over --max-src-tokens 30
    ({"text": ["a"], "beam": 7}, 422, "beam"),  # over --max-beam 6
    ({"text": ["a"], "beam": 0}, 422, "beam"),
    ({"text": ["a"], "beam": 2, "n_best": 3}, 422, "n_best"),
    ({"text": ["a"], "n_best": 6}, 422, "n_best"),  # above the default beam 5
    ({"text": ["a"], "max_len": 41}, 422, "max_len"),  # over --max-output-tokens 40
    ({"text": ["a"], "model": "nope"}, 404, "unknown model"),
    ({"text": "a"}, 422, "text"),
    ({"text": ["a"], "temperature": 2}, 422, "temperature"),
    ({"txt": ["a"]}, 422, "text"),
    ({"text": ["a"], "beam": "x"}, 422, "beam"),
    ({"text": ["a"], "n_best": 0}, 422, "n_best"),
    ({"text": ["a"], "max_len": 0}, 422, "max_len"),
    ({"text": [None]}, 422, "text"),
    ({"text": ["\ud800 a"]}, 422, "text"),  # a lone surrogate: not text
    ({"text": ["a"] * 4, "attention": True}, 422, "attention"),  # over --max-attention-sentences 3
    *[
        ({"text": ["a"], field: value}, 422, field)  # a boolean or float is not an integer
        for field in ("beam", "n_best", "max_len")
        for value in (True, 2.0)
    ],
    ({"text": ["a"], "attention": 1}, 422, "attention"),  # nor an integer a boolean
]


@pytest.mark.parametrize("payload, status, word", BAD)
def test_a_bad_request_gets_a_4xx_with_a_json_error(server: str, payload: dict, status: int, word: str) -> None:
    got, body = call(server, "/translate", payload)
    assert got == status and word in body["error"], body


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_size_limit_is_413(server: str, chunked: bool) -> None:
    got, body = call(server, "/translate", raw=json.dumps({"text": ["a" * 5000]}).encode(), chunked=chunked)
    assert got == 413 and "4096 bytes" in body["error"]


@pytest.mark.parametrize(
    "path, method, raw, status",
    [
        ("/translate", "POST", b"{not json", 422),
        ("/nowhere", "GET", None, 404),
        ("/translate", "GET", None, 405),
    ],
)
def test_malformed_requests(server: str, path: str, method: str, raw: Optional[bytes], status: int) -> None:
    got, body = call(server, path, method=method, raw=raw)
    assert got == status and body["error"]
    assert call(server, "/health")[0] == 200  # and the server is still up


def test_the_page_and_its_script_are_served_without_outside_assets(server: str) -> None:
    parts = urlsplit(server)
    for path in ("/", "/static/page.js", "/static/page.css"):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        conn.request("GET", path)
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        assert response.status == 200 and "http://" not in text and "https://" not in text, path


@pytest.mark.parametrize(
    "args, message",
    [
        (["--checkpoint", "missing.pt"], "checkpoint not found"),
        (["--checkpoint", "a=best.pt", "--checkpoint", "a=last.pt"], "taken"),
        (["--checkpoint", "best.pt", "--max-beam", "0"], "--max-beam 0"),
        (["--checkpoint", "best.pt", "--port", "70000"], "--port 70000"),
    ],
)
def test_bad_command_lines_fail_in_one_line_before_serving(
    args: list[str], message: str, capsys, trained_toy: Path, monkeypatch
) -> None:
    monkeypatch.chdir(trained_toy / "checkpoints")
    code, _, err = run_cli(["serve", *args, *([] if "--port" in args else ["--port", "0"])], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


# --- slow clients: --read-timeout ------------------------------------------------------------

HALF_REQUESTS = {
    "nothing": b"",
    "half the headers": b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Le",
    "half the body": b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b'Content-Length: 100\r\n\r\n{"text": [',
}


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=READ_TIMEOUT + 60)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout here fails the test)."""
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got


def read_response(sock: socket.socket) -> bytes:
    """One response on a kept-alive connection: its headers and Content-Length bytes of body."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(4096)
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_clients_that_send_half_a_request_are_cut_off_after_the_read_timeout(server: str) -> None:
    start = time.monotonic()
    clients = [(name, connect(server)) for name in HALF_REQUESTS for _ in range(4)]  # 12 at once
    for name, sock in clients:
        sock.sendall(HALF_REQUESTS[name])
    replies = []
    for name, sock in clients:
        with sock:
            replies.append((name, read_until_closed(sock)))
    elapsed = time.monotonic() - start
    assert READ_TIMEOUT * 0.9 <= elapsed <= READ_TIMEOUT + 30, elapsed
    for name, reply in replies:
        if name == "half the body":  # the request had begun: nothing to answer it with
            assert reply == b"", reply
        else:
            head, _, body = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408") and f"{READ_TIMEOUT:g} s" in json.loads(body)["error"], reply
    assert call(server, "/health")[0] == 200


def test_a_kept_alive_connection_gets_the_same_timeout_for_its_next_request(server: str) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        sock.sendall(HALF_REQUESTS["half the body"])
        assert read_until_closed(sock) == b""
    assert READ_TIMEOUT * 0.9 <= time.monotonic() - start <= READ_TIMEOUT + 30


def test_a_request_sent_slowly_within_the_timeout_is_answered(server: str) -> None:
    body = json.dumps({"text": ["a b"], "beam": 1}).encode()
    with connect(server) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        time.sleep(READ_TIMEOUT / 4)
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body[:5])
        time.sleep(READ_TIMEOUT / 4)
        sock.sendall(body[5:])
        reply = read_response(sock)
    assert reply.startswith(b"HTTP/1.1 200") and json.loads(reply.partition(b"\r\n\r\n")[2])["translations"]
