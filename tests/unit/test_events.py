"""The event log: typed records written and read back, old lines, crash-cut lines."""

from __future__ import annotations

import json

import pytest

from nmt.run import events


def _log() -> list[events.Event]:
    return [
        events.Start(
            step=0, epoch=0, elapsed_s=0.0, params=123, world_size=1, amp="off", hardware={"device": "cpu", "cpus": 2}
        ),
        events.Train(step=100, epoch=1, loss=4.5, lr=1e-3, tf=1.0, tok_s=5000.0, tgt_tokens=2000, elapsed_s=30.0),
        events.Valid(
            step=174,
            epoch=2,
            elapsed_s=60.0,
            lr=1e-3,
            best=12.5,
            loss=3.3,
            ppl=27.1,
            bleu=12.5,
            chrf=28.0,
            bleu_signature="nrefs:1",
            samples=[{"src": "a", "ref": "b", "hyp": "c"}],
            length_ratio=0.97,
        ),
        events.Stop(reason="max_steps", step=500, epoch=3, elapsed_s=300.0, best=30.1),
    ]


def test_append_then_read_gives_the_same_records(tmp_path):
    for event in _log():
        events.append(tmp_path, event)
    assert events.read(tmp_path) == _log()
    assert [e.kind for e in events.of_kind(events.read(tmp_path), events.Valid)] == ["valid"]


def test_the_file_is_flat_json_with_the_hardware_at_the_top_level(tmp_path):
    events.append(tmp_path, _log()[0])
    line = json.loads((tmp_path / events.FILE_NAME).read_text(encoding="utf-8"))
    assert line == {
        "event": "start",
        "step": 0,
        "epoch": 0,
        "elapsed_s": 0.0,
        "params": 123,
        "world_size": 1,
        "amp": "off",
        "device": "cpu",
        "cpus": 2,
    }


def test_lines_of_older_runs_read_with_defaults(tmp_path):
    (tmp_path / events.FILE_NAME).write_text(
        '{"event": "start", "step": 0, "epoch": 0, "elapsed_s": 0.0}\n'
        '{"event": "valid", "step": 5, "epoch": 1, "elapsed_s": 1.0, "lr": 0.1, "best": 1.0,'
        ' "loss": 2.0, "ppl": 7.4, "bleu": 1.0, "chrf": 2.0, "later_field": 3}\n',
        encoding="utf-8",
    )
    start, valid = events.read(tmp_path)
    assert start.params is None and start.hardware == {}
    assert valid.samples == [] and valid.bleu == 1.0
    assert valid.length_ratio is None  # logged since 2026-11-27


def test_a_line_cut_short_by_a_crash_is_dropped_and_the_log_goes_on(tmp_path):
    first, second, third = _log()[:3]
    events.append(tmp_path, first)
    path = tmp_path / events.FILE_NAME
    path.write_text(path.read_text(encoding="utf-8") + json.dumps(events.to_json(second))[:30], encoding="utf-8")
    assert events.read(tmp_path) == [first]
    events.append(tmp_path, third)
    assert events.read(tmp_path) == [first, third]


def test_a_broken_line_in_the_middle_names_file_and_line(tmp_path):
    (tmp_path / events.FILE_NAME).write_text(
        '{"event": "start", "step": 0, "epoch": 0, "elapsed_s": 0}\ngarbage\n{"event": "nope"}\n', encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"metrics.jsonl:2: not a metrics event"):
        events.read(tmp_path)


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    """The message was only "'utf-8' codec can't decode byte 0xcd in position 151", with no file or line."""
    first, second, third = (json.dumps(events.to_json(e)).encode("utf-8") for e in _log()[:3])
    (tmp_path / events.FILE_NAME).write_bytes(
        first + b"\n" + second[:40] + b"\xcd\xff" + second[40:] + b"\n" + third + b"\n"
    )
    with pytest.raises(ValueError) as info:
        events.read(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / events.FILE_NAME}:2: not UTF-8 (byte 0xcd at column 41)"), message
    assert "\n" not in message


def test_a_line_cut_short_inside_a_character_is_dropped_as_any_cut_line(tmp_path):
    first = _log()[0]
    events.append(tmp_path, first)
    with open(tmp_path / events.FILE_NAME, "ab") as handle:
        handle.write(b'{"event": "train", "note": "\xc3')  # the first byte of a two-byte character
    assert events.read(tmp_path) == [first]


def test_no_file_is_no_events(tmp_path):
    assert events.read(tmp_path) == []
