"""The trainer: a toy task learned, exact resume, checkpoints that survive crashes."""

import json
import os
from pathlib import Path

import pytest
import torch

from conftest import interrupt_at, toy_overrides
from conftest import train_losses as losses
from nmt import config as C
from nmt.decode.inference import load_checkpoint, translate_ids
from nmt.run import checkpoint as ckpt
from nmt.run.state import TrainState
from nmt.score.metrics import score
from nmt.training.entry import run_training
from nmt.training.loop import Trainer, TrainingError
from nmt.util.errors import CheckpointError, UserError


def test_toy_task_learned_to_high_bleu(trained_toy, toy_files):
    """System test: a tiny model learns reversal + lexicon from scratch (greedy BLEU on test)."""
    _, files = toy_files
    loaded = load_checkpoint(trained_toy / "checkpoints" / "best.pt", torch.device("cpu"))
    srcs = Path(files["test"][0]).read_text().splitlines()
    refs = Path(files["test"][1]).read_text().splitlines()
    out = translate_ids(loaded.model, loaded.src_tok.encode(srcs), loaded.config.decode, torch.device("cpu"), beam=1)
    hyps = [loaded.tgt_tok.decode(t.ids[0]) for t in out]
    assert score(hyps, refs).bleu >= 90.0


def test_run_directory_contents(trained_toy):
    for name in (
        "config.yaml",
        "metrics.jsonl",
        "spm.src.model",
        "spm.tgt.model",
        "checkpoints/last.pt",
        "checkpoints/best.pt",
    ):
        assert (trained_toy / name).is_file(), name
    events = [json.loads(line) for line in (trained_toy / "metrics.jsonl").read_text().splitlines()]
    valid = [e for e in events if e["event"] == "valid"]
    assert valid and {"loss", "ppl", "bleu", "chrf", "samples", "length_ratio"} <= set(valid[-1])
    assert all(0 < e["length_ratio"] < 3 for e in valid)  # greedy output length / reference length
    assert events[-1]["event"] == "stop"
    assert list((trained_toy / "attention").glob("*.png"))
    cfg = C.load(trained_toy / "config.yaml")  # the resolved config rebuilds the experiment
    assert cfg.model.hidden_size == 64


REGULARIZED = dict(
    model__src_word_dropout=0.2, model__tgt_word_dropout=0.2, train__subword_alpha=0.3, train__max_tokens=4000
)  # about 5 updates per epoch: the interrupt falls in epoch 2


@pytest.mark.parametrize("more", [{}, REGULARIZED], ids=["plain", "word_dropout+subword_sampling"])
def test_resume_after_interrupt_gives_identical_losses(tmp_path, toy_files, monkeypatch, more):
    _, files = toy_files
    extra = dict(
        train__max_steps=14,
        train__teacher_forcing=0.6,
        model__dropout=0.3,
        train__valid_every=5,
        train__schedule="plateau",
        train__accumulate=2,
        **more,
    )
    run_training(None, toy_overrides(tmp_path / "a", files, **extra), progress=False)
    reference = losses(tmp_path / "a" / "runs" / "toy")
    assert sorted(reference) == list(range(1, 15))

    interrupt_at(monkeypatch, 6)
    outcome = run_training(None, toy_overrides(tmp_path / "b", files, **extra), progress=False)
    assert "interrupted by SIGINT at step 6" in outcome.summary and "--resume" in outcome.summary
    assert outcome.exit_code == 130  # 128 + SIGINT, so `nmt train ... && next` stops
    run_b = tmp_path / "b" / "runs" / "toy"
    assert max(losses(run_b)) == 6
    monkeypatch.undo()
    run_training(None, [], resume=run_b, progress=False)
    resumed = losses(run_b)
    assert resumed == reference  # bit-for-bit the same floats, every step


def test_refuses_to_overwrite_a_run(tmp_path, toy_files):
    _, files = toy_files
    overrides = toy_overrides(tmp_path, files, train__max_steps=1)
    run_training(None, overrides, progress=False)
    with pytest.raises(UserError, match="already holds a run"):
        run_training(None, overrides, progress=False)
    run_training(None, overrides, overwrite=True, progress=False)


def test_resume_with_different_model_is_refused(tmp_path, toy_files):
    _, files = toy_files
    run_training(None, toy_overrides(tmp_path, files, train__max_steps=1), progress=False)
    with pytest.raises(UserError, match=r"model\.hidden_size: 64 -> 32"):
        run_training(None, ["model.hidden_size=32"], resume=tmp_path / "runs" / "toy", progress=False)


def test_nonfinite_losses_skip_updates_then_stop(tmp_path, toy_files, monkeypatch):
    _, files = toy_files
    monkeypatch.setattr(
        torch.nn.functional, "cross_entropy", lambda *a, **k: torch.tensor(float("nan"), requires_grad=True)
    )
    with pytest.raises(TrainingError, match="non-finite") as info:
        run_training(None, toy_overrides(tmp_path, files, train__max_nonfinite=3), progress=False)
    assert isinstance(info.value, UserError)  # one line and exit 2 from the CLI, not an internal error


# ------------------------------------------------------------ checkpoints


def _tiny(step: int, w: torch.Tensor) -> ckpt.Checkpoint:
    """A checkpoint with a one-tensor "model", enough to tell two saves apart."""
    return ckpt.Checkpoint(config={}, model={"w": w}, tokenizers={}, state=TrainState(step=step))


def test_interrupted_checkpoint_write_keeps_previous(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    ckpt.save(path, _tiny(1, torch.ones(3)))

    def crash(obj, handle, *a, **k):
        handle.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt  # killed mid-write

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save(path, _tiny(2, torch.zeros(3)))
    monkeypatch.undo()
    assert ckpt.load(path).state.step == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]  # no temporary left behind


def test_disk_full_is_reported_and_previous_kept(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    ckpt.save(path, _tiny(1, torch.ones(3)))

    def full(obj, handle, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError, match="disk full"):
        ckpt.save(path, _tiny(2, torch.zeros(3)))
    monkeypatch.undo()
    assert ckpt.load(path).state.step == 1


def test_truncated_random_and_foreign_files_are_clear_errors(tmp_path):
    good = tmp_path / "good.pt"
    ckpt.save(good, _tiny(3, torch.randn(100)))
    data = good.read_bytes()
    cases = {
        "truncated.pt": data[: len(data) // 2],
        "random.pt": os.urandom(4096),
        "empty.pt": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(CheckpointError, match="not a loadable nmt checkpoint"):
            ckpt.load(tmp_path / name)
    torch.save({"weights": torch.ones(2)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="another program"):
        ckpt.load(tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not found"):
        ckpt.load(tmp_path / "missing.pt")


class _Payload:
    """Unpickling this would create a file: the attack a checkpoint must not allow."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_code_executing_pickle_is_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"format": ckpt.FORMAT, "version": ckpt.VERSION, "x": _Payload(str(marker))}, evil)
    with pytest.raises(CheckpointError):
        ckpt.load(evil)
    assert not marker.exists()


def test_out_of_memory_names_the_batch(tmp_path, toy_files, monkeypatch):
    """A CUDA out-of-memory error (simulated on CPU) becomes a user error with the batch shape."""
    from nmt.model.seq2seq import Seq2Seq

    _, files = toy_files

    def oom(self, *args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(Seq2Seq, "forward", oom)
    with pytest.raises(UserError, match=r"out of memory on a batch of \d+ sentences.*train.max_tokens"):
        run_training(None, toy_overrides(tmp_path, files), progress=False)


def test_kill_9_during_checkpoint_writes_leaves_a_loadable_file(tmp_path):
    """A process killed with SIGKILL while saving checkpoints in a loop never leaves a broken one."""
    import subprocess
    import sys

    path = tmp_path / "last.pt"
    ckpt.save(path, _tiny(0, torch.zeros(10)))
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import torch, sys\n"
                "from nmt.run import checkpoint as c\n"
                "from nmt.run.state import TrainState\n"
                "for step in range(1, 10**6):\n"
                "    c.save(sys.argv[1], c.Checkpoint({}, {'w': torch.full((5_000_000,), float(step))}, {}, TrainState(step)))\n"
                "    print(step, flush=True)\n"
            ),
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    # Each line is a complete save; right after one the writer is in the next, whatever the machine's speed.
    assert [writer.stdout.readline().strip() for _ in range(3)] == ["1", "2", "3"]
    writer.kill()
    writer.wait(timeout=60)
    loaded = ckpt.load(path)
    assert loaded.state.step >= 3 and bool((loaded.model["w"] == float(loaded.state.step)).all())


def test_subword_sampling_draws_a_new_segmentation_per_epoch_from_seed_and_epoch(toy_files, tmp_path):
    """Each epoch's ids decode to the same text, differ from the one segmentation and from the
    other epochs, and a second set-up with the same seed draws exactly the same."""
    from nmt.training.setup import TrainingData

    _, files = toy_files
    cfg = C.load(None, toy_overrides(tmp_path, files, train__subword_alpha=0.3))
    trainer = Trainer(cfg, tmp_path / "run", progress=False)
    data, tok = trainer.data, trainer.parts.tgt_tok
    fixed = [data.split.tgt(i).tolist() for i in range(200)]
    epochs = [[split.tgt(i).tolist() for i in range(200)] for split, _ in map(data.for_epoch, (0, 1))]
    assert epochs[0] != fixed and epochs[1] != fixed and epochs[0] != epochs[1]
    assert [tok.decode(ids) for ids in epochs[1]] == [tok.decode(ids) for ids in fixed]
    again = TrainingData(data.split, cfg.train, data.text, data.tokenizers)
    assert [again.for_epoch(1)[0].tgt(i).tolist() for i in range(200)] == epochs[1]
    off = TrainingData(data.split, cfg.train.model_copy(update={"subword_alpha": 0.0}))
    assert off.for_epoch(3) == (off.split, off.sampler)  # the cached ids, every epoch


def test_valid_attention_map_off_draws_nothing_and_trains_the_same(tmp_path, toy_files):
    """train.valid_attention_map=false skips the picture, not the validation: same losses, same scores."""
    _, files = toy_files
    runs = {}
    for draw in (True, False):
        root = tmp_path / str(draw)
        sets = toy_overrides(root, files, train__max_steps=6, train__valid_every=3)
        run_training(None, [*sets, f"train.valid_attention_map={str(draw).lower()}"], progress=False)
        runs[draw] = root / "runs" / "toy"
    assert list((runs[True] / "attention").glob("*.png"))
    assert not list((runs[False] / "attention").glob("*.png"))

    def valid_scores(run: Path) -> list[tuple[int, float]]:
        lines = (run / "metrics.jsonl").read_text().splitlines()
        return [(e["step"], e["bleu"]) for e in map(json.loads, lines) if e["event"] == "valid"]

    assert losses(runs[True]) == losses(runs[False]) and valid_scores(runs[True]) == valid_scores(runs[False])
    assert len(valid_scores(runs[False])) >= 2


def test_max_words_trains_on_the_pairs_within_the_cap_from_the_one_prepared_folder(toy_files, tmp_path):
    """train.max_words keeps exactly the pairs of at most N words on both sides, ids and text in corpus
    order, reads the folder prepared without the cap (one folder, one SentencePiece model for every cap),
    and refuses a cap that leaves nothing."""
    _, files = toy_files
    from nmt.data.pipeline import load_corpus

    capped = Trainer(C.load(None, toy_overrides(tmp_path, files, train__max_words=5)), tmp_path / "capped", False)
    cfg = C.load(None, toy_overrides(tmp_path, files))
    whole = Trainer(cfg, tmp_path / "whole", progress=False)
    corpus = load_corpus(cfg.data, splits=("train",))
    src_text, tgt_text = corpus.text("train", cfg.data.src), corpus.text("train", cfg.data.tgt)
    keep = [i for i, (s, t) in enumerate(zip(src_text, tgt_text)) if len(s.split()) <= 5 and len(t.split()) <= 5]
    assert 0 < len(keep) < len(src_text) == len(whole.data.split)
    assert len(capped.data.split) == len(keep)
    from nmt.training.setup import training_split  # what the update timing and the health check read too

    capped_cfg = C.load(None, toy_overrides(tmp_path, files, train__max_words=5))
    assert training_split(corpus, capped_cfg).src_lengths.tolist() == capped.data.split.src_lengths.tolist()
    assert [capped.data.split.src(j).tolist() for j in range(len(keep))] == [
        whole.data.split.src(i).tolist() for i in keep
    ]
    assert [capped.data.split.tgt(j).tolist() for j in range(len(keep))] == [
        whole.data.split.tgt(i).tolist() for i in keep
    ]
    assert len(list((tmp_path / "data").rglob("manifest.json"))) == 1
    with pytest.raises(UserError, match=r"train\.max_words=1 leaves none of the 3000 training pairs"):
        Trainer(C.load(None, toy_overrides(tmp_path, files, train__max_words=1)), tmp_path / "none", False)
