"""Every public function checks its arguments: a wrong type, a value out of range or a process
environment torch would trip over is one UserError naming the Python parameter, raised before any
work, never a segmentation fault, a raw torch or SentencePiece error, or a silently wrong run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import nmt
from conftest import REPO, toy_overrides
from nmt.util.errors import UserError


@pytest.fixture(scope="module")
def translator(trained_toy: Path) -> nmt.Translator:
    return nmt.load(trained_toy, threads=1)


def _refused(call, needle: str) -> None:
    with pytest.raises(UserError, match=needle) as info:
        call()
    assert "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"beam": 1.5}, r"^beam=1\.5: give a whole number of at least 1"),
        ({"beam": "3"}, r"^beam='3': give a whole number"),
        ({"beam": True}, r"^beam=True: give a whole number"),
        ({"beam": 0}, r"^beam=0: give a whole number of at least 1"),
        ({"n_best": 2.0}, r"^n_best=2\.0"),
        ({"seed": 2**70}, r"^seed=1180591620717411303424: give a whole number from 0 to 4294967295"),
        ({"sample": True, "seed": -1}, r"^seed=-1"),
        ({"length_penalty": float("inf")}, r"^length_penalty=inf: give a finite number of at least 0"),
        ({"top_p": 0.0, "sample": True}, r"^top_p=0\.0: give a finite number greater than 0 and at most 1"),
        ({"temperature": "hot", "sample": True}, r"^temperature='hot'"),
        ({"max_len_b": None, "max_len_a": float("nan")}, r"^max_len_a=nan"),
        ({"sample": 1}, r"^sample=1: give True or False"),
        ({"return_attention": "yes"}, r"^return_attention='yes': give True or False"),
        ({"batch_size": 0}, r"^batch_size=0: give a whole number of at least 1"),
        ({"batch_size": 2.5}, r"^batch_size=2\.5: give a whole number"),
        ({"batch_size": True}, r"^batch_size=True: give a whole number"),
    ],
)
def test_translate_refuses_arguments_of_the_wrong_type_naming_them(translator, options, needle):
    _refused(lambda: translator.translate(["ANT"], **options), needle)


def test_sentences_are_a_list_of_unicode_strings(translator):
    _refused(lambda: translator.translate(["ok", "\ud800"]), r"^sentences\[1\]: .* a lone surrogate")
    _refused(lambda: translator.translate(None), r"^sentences: give a list of sentences, not NoneType")
    _refused(lambda: translator.translate(["a", None]), r"^sentences: item 1 is NoneType")


def test_score_checks_its_targets(translator):
    _refused(lambda: translator.score(["a"], [None]), r"^targets\[0\] is NoneType")
    _refused(lambda: translator.score(["a"], None), r"^targets: give a list of targets, not NoneType")
    _refused(lambda: translator.score(["a"], ["A"], return_attention=None), r"^return_attention=None")


def test_score_refuses_a_source_or_target_longer_than_the_model_reads(translator):
    """A 60,000-token source took 89 s with memory growing with length x vocabulary."""
    huge = " ".join(["ant"] * 5000)
    _refused(lambda: translator.score([huge], ["ANT"]), r"^sources\[0\] has [\d,]+ tokens, more than 256")
    _refused(lambda: translator.score(["ant"], [huge.upper()]), r"^targets\[0\] has [\d,]+ tokens, more than 1023")


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"path": None}, r"^path=None: give a path"),
        ({"threads": -1}, r"^threads=-1: give 0 .* or a count from 1 to"),
        ({"threads": 10**6}, r"^threads=1000000: give 0"),
        ({"threads": 1.5}, r"^threads=1\.5"),
        ({"device": "gpu"}, r"^device='gpu': give one of 'auto', 'cpu', 'cuda', 'mps'"),
        ({"engine": 3}, r"^engine=3: give one of"),
    ],
)
def test_load_checks_its_arguments(trained_toy, kwargs, needle):
    _refused(lambda: nmt.load(**{"path": trained_toy, **kwargs}), needle)


def test_a_million_threads_is_refused_not_a_segmentation_fault(trained_toy):
    """`nmt.load(path, threads=10**6)` killed the caller with SIGSEGV."""
    code = (
        f"import nmt\ntry:\n    nmt.load({str(trained_toy)!r}, threads=10**6)\nexcept nmt.UserError as e:\n    print(e)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("threads=1000000"), proc.stderr[-500:]


def test_load_sets_torch_threads_for_the_process_as_documented(trained_toy):
    before = torch.get_num_threads()
    try:
        nmt.load(trained_toy, threads=2)
        assert torch.get_num_threads() == 2
        assert "whole process" in nmt.load.__doc__
    finally:
        torch.set_num_threads(before)


def test_plot_attention_and_run_open_check_their_arguments(tmp_path):
    _refused(lambda: nmt.plot_attention(None), r"^result: give one result of Translator\.translate")
    _refused(lambda: nmt.Run.open(None), r"^folder=None: give a path")


def _drawable() -> nmt.TranslationResult:
    """A result with attention, made by hand: the checks run before anything is drawn."""
    hypothesis = nmt.Hypothesis("B", ["B", "</s>"], -1.0, -1.0)
    return nmt.TranslationResult("a", ["a"], [hypothesis], np.ones((2, 1)))


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"fontsize": 0}, r"^fontsize=0: give a finite number greater than 0 and at most 200"),
        ({"fontsize": "large"}, r"^fontsize='large': give a finite number"),
        ({"colorbar": "no"}, r"^colorbar='no': give True or False"),
        ({"title": 3}, r"^title=3: give a string"),
    ],
)
def test_plot_attention_checks_its_arguments(kwargs, needle):
    _refused(lambda: nmt.plot_attention(_drawable(), **kwargs), needle)


@pytest.mark.parametrize(
    "args, kwargs, needle",
    [
        ((_drawable(),), {}, r"^results: give a list of results, not TranslationResult"),
        (([],), {}, r"^results: give at least one result"),
        (([_drawable(), None],), {}, r"^results\[1\]: give one result of Translator\.translate"),
        (([_drawable()], ["a", "b"]), {}, r"^titles: 2 titles for 1 results; give one per result"),
        (([_drawable()], "a"), {}, r"^titles='a': give a list of strings"),
        (([_drawable()], [None]), {}, r"^titles\[0\]=None: give a string"),
        (([_drawable()],), {"ncols": 0}, r"^ncols=0: give a whole number of at least 1"),
        (([_drawable()],), {"fontsize": -2}, r"^fontsize=-2"),
    ],
)
def test_plot_attention_grid_checks_its_arguments(args, kwargs, needle):
    _refused(lambda: nmt.plot_attention_grid(*args, **kwargs), needle)


def test_evaluate_checks_its_arguments(tmp_path):
    hyp = tmp_path / "h.txt"
    hyp.write_text("a\n")
    _refused(lambda: nmt.evaluate(hyps=str(hyp), ref=hyp), r"^hyps='.*h\.txt': give a list of paths")
    _refused(lambda: nmt.evaluate(hyps=[hyp], ref=hyp, seed=2**70), r"^seed=")
    _refused(lambda: nmt.evaluate(hyps=[hyp], ref=hyp, bootstrap_samples=True), r"^bootstrap_samples=True")
    _refused(lambda: nmt.evaluate(hyps=[None], ref=hyp), r"^hyps\[0\]=None: give a path")
    _refused(lambda: nmt.evaluate(model=tmp_path, src=hyp, ref=hyp, engine="tf"), r"^engine='tf'")


def test_evaluate_takes_the_export_s_own_engine_as_load_does(trained_toy, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from nmt.export.onnx_export import export_onnx

    folder = tmp_path / "onnx"
    export_onnx(trained_toy / "checkpoints" / "best.pt", folder)
    src = tmp_path / "src.txt"
    src.write_text("ant bee\n")
    result = nmt.evaluate(model=folder, src=src, ref=src, out=tmp_path / "ev")
    assert result.report["systems"] and next(iter(result.report["systems"])).startswith("onnxruntime")


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"seeds": 3}, r"^seeds=3: give a list"),
        ({"steps": "2"}, r"^steps=.2.: give a whole number of at least 0"),
        ({"time_updates": "3"}, r"^time_updates='3'"),
        ({"jobs": 0}, r"^jobs=0"),
        ({"force": "yes"}, r"^force='yes'"),
        ({"sweep": {"train.lr": ["0.1,0.2"]}}, r"^sweep\['train\.lr'\]\[0\]='0\.1,0\.2': one item per list entry"),
        ({"variants": [None]}, r"^variants\[0\]=None"),
        ({"dry_run": "yes"}, r"^dry_run='yes': give True or False"),
        ({"dry_run": True, "jobs": 0}, r"^jobs=0"),
    ],
)
def test_compare_checks_its_arguments(tmp_path, kwargs, needle):
    _refused(lambda: nmt.compare(**{"variants": "bahdanau", "runs_dir": tmp_path / "c", **kwargs}), needle)
    assert not (tmp_path / "c").exists()


def test_train_checks_its_arguments(tmp_path):
    _refused(lambda: nmt.train(3), r"^config: give a YAML path, a mapping, a Config or None, not int")
    _refused(lambda: nmt.train(None, [1]), r"^overrides: 1 is not a KEY=VALUE string")
    _refused(lambda: nmt.train(None, {"train.lr": float("inf")}), r"^overrides: Out of range float values")
    _refused(lambda: nmt.train(None, [f"runs_dir={tmp_path}"], overwrite="yes"), r"^overwrite='yes'")


@pytest.mark.parametrize(
    "environment, needle",
    [
        ({"WORLD_SIZE": "4"}, r"WORLD_SIZE=4 without RANK"),
        ({"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "x", "MASTER_PORT": "notaport"}, r"MASTER_PORT='notaport'"),
        ({"WORLD_SIZE": "1", "RANK": "7"}, r"RANK=.*7"),
    ],
)
def test_train_checks_the_torchrun_environment_as_the_command_does(tmp_path, monkeypatch, environment, needle):
    """From Python, `WORLD_SIZE=4` gave `KeyError: 'RANK'` and `RANK=7` of 1 was accepted."""
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    _refused(lambda: nmt.train(None, [f"runs_dir={tmp_path}"]), needle)
    assert not any(tmp_path.iterdir())


def test_a_section_given_as_a_mapping_keeps_its_other_options(toy_files, tmp_path):
    """`nmt.train(config, {"train": {"max_steps": 3}})` trained with the defaults' lr and batch size."""
    _, files = toy_files
    base = toy_overrides(tmp_path, files, train__lr=0.0123, train__valid_every=0)
    run = nmt.train(None, [*base, 'train={"max_steps": 2}'], progress=False)
    assert run.config.train.max_steps == 2 and run.config.train.lr == 0.0123
    assert run.config.model.hidden_size == 64


def test_training_errors_are_user_errors_and_exported():
    assert issubclass(nmt.TrainingError, nmt.UserError) and issubclass(nmt.ConfigError, nmt.UserError)


def test_a_model_too_large_for_memory_is_refused_before_it_is_built(toy_files, tmp_path):
    """`model.hidden_size=100000000` ended in the allocator's RuntimeError, an internal error."""
    _, files = toy_files
    _refused(
        lambda: nmt.train(None, toy_overrides(tmp_path, files, model__hidden_size=10**8), progress=False),
        r"^model: [\d,]+ parameters need at least [\d,.]+ GiB to train .* cpu has [\d,.]+ GiB free",
    )
