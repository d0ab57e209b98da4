"""``nmt align --encoding`` names a text encoding (issue 70): rot13 is a codec Python knows, but of
text to text, and decoding with it raised a LookupError traceback; now one line, before any model loads."""

from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.mark.parametrize("encoding", ["rot13", "base64", "nosuch"])
def test_an_encoding_that_does_not_turn_bytes_into_text_is_one_line(tmp_path, capsys, encoding):
    src, tgt = tmp_path / "src.txt", tmp_path / "tgt.txt"
    src.write_text("ein Hund\n", encoding="utf-8")
    tgt.write_text("a dog\n", encoding="utf-8")
    missing = tmp_path / "no_model.pt"  # never loaded: the encoding is refused first
    argv = ["align", "--checkpoint", str(missing), "--src", str(src), "--tgt", str(tgt), "--encoding", encoding]
    code, out, err = run_cli(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"nmt: error: --encoding '{encoding}': ")
    assert str(missing) not in err
