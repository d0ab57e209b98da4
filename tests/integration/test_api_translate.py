"""The library's translation surface (``nmt.load``, ``Translator``, ``nmt.plot_attention``) on the trained toy model.

Properties rather than numbers: the three ways to name a model (checkpoint, run folder, export
folder) translate alike, and as ``nmt translate`` does; blank inputs keep their place; attention
rows are distributions over the source tokens; forced decoding gives back a search's own score.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nmt
from conftest import run_cli
from nmt.util.errors import UserError

SOURCES = 12


@pytest.fixture(scope="module")
def sentences(toy_files) -> list[str]:
    """Test-split sources with a blank line among them and one of unknown words."""
    _, files = toy_files
    lines = Path(files["test"][0]).read_text(encoding="utf-8").splitlines()[:SOURCES]
    return [*lines[:3], "", *lines[3:], "   ", "ant zebra quokka"]


@pytest.fixture(scope="module")
def translator(trained_toy: Path) -> nmt.Translator:
    return nmt.load(trained_toy)


def test_checkpoint_run_folder_and_export_translate_alike(trained_toy, translator, sentences, tmp_path):
    from nmt.export.release import write_release

    export = write_release(trained_toy / "checkpoints" / "best.pt", tmp_path / "release", False)
    want = translator.translate(sentences, beam=3, n_best=2)
    for path in (trained_toy / "checkpoints" / "best.pt", export):
        got = nmt.load(path).translate(sentences, beam=3, n_best=2)
        assert [r.text for r in got] == [r.text for r in want]
        for a, b in zip(got, want):
            assert [h.tokens for h in a.hypotheses] == [h.tokens for h in b.hypotheses]
            np.testing.assert_allclose([h.score for h in a.hypotheses], [h.score for h in b.hypotheses], atol=1e-5)
    assert len(set(r.text for r in want)) > SOURCES // 2  # a model that learned: varied outputs


def test_the_cli_translates_as_the_library(trained_toy, translator, sentences, tmp_path, capsys):
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    argv = ["translate", "--checkpoint", str(trained_toy / "checkpoints" / "best.pt"), "-i", str(source)]
    code, _, err = run_cli([*argv, "-o", str(out), "--beam", "2"], capsys)
    assert code == 0, err
    assert out.read_text(encoding="utf-8").splitlines() == [r.text for r in translator.translate(sentences, beam=2)]


def test_one_result_per_input_and_blank_inputs_keep_their_place(translator, sentences):
    results = translator.translate(sentences, beam=2, n_best=2, return_attention=True)
    assert len(results) == len(sentences)
    assert [r.source for r in results] == sentences
    assert all(len(result.hypotheses) == 2 for result in results)
    blank = [r for r in results if not r.source.strip()]
    assert len(blank) == 2
    for result in blank:
        assert result.text == "" and result.tokens == [] and result.score == 0.0
        assert result.attention is not None and result.attention.shape == (0, 0)
    assert all(r.text for r in results if r.source.strip())


@pytest.mark.parametrize("beam", [1, 3])
def test_attention_is_target_by_source_and_rows_sum_to_one(translator, sentences, beam):
    for result in translator.translate(sentences, beam=beam, return_attention=True):
        if not result.source.strip():
            continue
        assert isinstance(result.attention, np.ndarray)
        assert result.attention.shape == (len(result.tokens), len(result.source_tokens))
        assert result.tokens[-1] == "</s>"
        np.testing.assert_allclose(result.attention.sum(1), 1.0, atol=1e-4)
    assert translator.translate(sentences[:2])[0].attention is None  # only when asked


@pytest.mark.parametrize("beam", [1, 4])
def test_forced_decoding_gives_back_the_search_score(translator, sentences, beam):
    """Beam scores equal forced-decoding scores: score() of each hypothesis's tokens is its log_prob."""
    sources = [s for s in sentences if s.strip()]
    results = translator.translate(sources, beam=beam, n_best=beam, return_attention=True)
    for k in range(beam):
        scored = translator.score(sources, [r.hypotheses[k].tokens for r in results])
        for result, forced in zip(results, scored):
            assert forced.tokens == result.hypotheses[k].tokens
            assert forced.log_probs.shape == (len(forced.tokens),) and (forced.log_probs <= 0).all()
            assert forced.total == pytest.approx(result.hypotheses[k].log_prob, abs=1e-4)
            assert forced.attention is not None
            assert forced.attention.shape == (len(forced.tokens), len(forced.source_tokens))
            if k == 0:  # the same steps, so the same weights as the search's best hypothesis
                np.testing.assert_allclose(forced.attention, result.attention, atol=1e-5)


def test_score_takes_text_and_refuses_what_it_cannot_score(translator, sentences):
    (one,) = translator.score([sentences[0]], ["ANT BEE"], return_attention=False)
    assert one.attention is None and np.isfinite(one.total) and one.tokens[-1] == "</s>"
    for sources, targets, needle in (
        ([sentences[0]], ["A", "B"], "1 sources but 2 targets"),
        ([""], ["ANT"], "source 0 is blank"),
        ([sentences[0]], [["no-such-piece"]], "not a token of the target vocabulary"),
        ([sentences[0]], "ANT", "not one string"),
    ):
        with pytest.raises(UserError, match=needle) as info:
            translator.score(sources, targets)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda root: root / "missing", "no such checkpoint, run folder or export folder"),
        (lambda root: root, "not a checkpoint, a run folder"),
    ],
)
def test_a_bad_path_raises_one_line(tmp_path, make, needle):
    with pytest.raises(UserError, match=needle) as info:
        nmt.load(make(tmp_path))
    assert "\n" not in str(info.value)


def test_bad_options_raise_one_line(translator, trained_toy):
    for call, needle in (
        (lambda: translator.translate("one string"), "not one string"),
        (lambda: translator.translate(["a"], beam=2, n_best=3), "n-best"),
        (lambda: translator.translate(["a"], sample=True, beam=3), "sampling"),
        (lambda: nmt.load(trained_toy, engine="ctranslate2"), "export it"),
        (lambda: nmt.load(trained_toy, engine="tensorflow"), "^engine=.tensorflow.: give one of"),
    ):
        with pytest.raises(UserError, match=needle) as info:
            call()
        assert "\n" not in str(info.value)


def test_sampling_options_as_the_cli_has_them(translator, sentences):
    first = translator.translate(sentences[:3], sample=True, n_best=3, top_k=5, temperature=0.8, seed=7)
    again = translator.translate(sentences[:3], sample=True, n_best=3, top_k=5, temperature=0.8, seed=7)
    assert [[h.text for h in r.hypotheses] for r in first] == [[h.text for h in r.hypotheses] for r in again]
    assert all(len(r.hypotheses) == 3 for r in first)


def test_plot_attention_puts_the_tokens_on_the_axes(translator, sentences):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    (result,) = translator.translate([sentences[0]], beam=2, return_attention=True)
    fig = Figure()
    FigureCanvasAgg(fig)
    ax = nmt.plot_attention(result, ax=fig.add_subplot())
    assert [t.get_text() for t in ax.get_xticklabels()] == result.source_tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == result.tokens
    assert len(fig.axes) == 2  # the heat map and its colour bar
    with pytest.raises(UserError, match="return_attention=True"):
        nmt.plot_attention(translator.translate([sentences[0]])[0], ax=fig.add_subplot())


def test_plot_attention_sets_the_font_size_and_can_leave_out_its_colour_bar(translator, sentences):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    (result,) = translator.translate([sentences[0]], return_attention=True)
    fig = Figure()
    FigureCanvasAgg(fig)
    ax = nmt.plot_attention(result, ax=fig.add_subplot(), title="a lecture", fontsize=18, colorbar=False)
    assert len(fig.axes) == 1  # no colour bar
    labels = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title, ax.xaxis.label, ax.yaxis.label]
    assert {label.get_fontsize() for label in labels} == {18.0}
    assert ax.images[0].get_clim() == (0.0, 1.0)


def test_plot_attention_grid_draws_one_panel_per_result_under_one_colour_bar(translator, sentences, tmp_path):
    import matplotlib.pyplot as plt

    results = translator.translate([s for s in sentences if s.strip()][:3], return_attention=True)
    fig = nmt.plot_attention_grid(results, ["one", "two", "three"], ncols=2, fontsize=14, title="three sentences")
    try:
        panels = [ax for ax in fig.axes if ax.images]
        assert len(panels) == 3 and len(fig.axes) == 2 * 2 + 1  # a 2 x 2 grid (one panel off) and one bar
        assert [ax.get_title() for ax in panels] == ["one", "two", "three"]
        for ax, result in zip(panels, results):
            assert [t.get_text() for t in ax.get_xticklabels()] == result.source_tokens
            assert [t.get_text() for t in ax.get_yticklabels()] == result.tokens
            assert ax.images[0].get_clim() == (0.0, 1.0)  # one scale, so the one bar is true for each
            assert {t.get_fontsize() for t in ax.get_xticklabels()} == {14.0}
        fig.savefig(tmp_path / "grid.png")
        assert (tmp_path / "grid.png").read_bytes().startswith(b"\x89PNG")
    finally:
        plt.close(fig)


def test_a_translator_called_gives_the_text(translator, sentences):
    assert translator(sentences[0]) == translator.translate([sentences[0]])[0].text
    assert translator(sentences[:3], beam=3) == [r.text for r in translator.translate(sentences[:3], beam=3)]
    assert translator("") == "" and translator([]) == []
    for options, needle in (
        ({"beem": 3}, "^beem: not an option of Translator.translate; give one of beam, "),
        ({"return_attention": True}, "^return_attention: a call gives text only"),
        ({"beam": 0}, "^beam=0: give a whole number"),
    ):
        with pytest.raises(UserError, match=needle):
            translator(sentences[0], **options)


@pytest.mark.parametrize("beam", [1, 3])
def test_batch_size_changes_nothing_but_the_batches(translator, sentences, beam):
    one = translator.translate(sentences, beam=beam, batch_size=1)
    many = translator.translate(sentences, beam=beam, batch_size=64)
    assert [r.text for r in one] == [r.text for r in many]
    np.testing.assert_allclose([r.score for r in one], [r.score for r in many], atol=1e-5)
