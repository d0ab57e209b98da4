"""The merge rule of ``nmt align`` on hand-made attention, and which attention each engine is asked for.

Properties: a word's weight is the sum over its pieces; every target word with pieces gets exactly
one link, to the source word of highest weight; a sentence's pieces are its words' pieces in order;
the layer and head options are refused in one line where the model or engine cannot give them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pytest

from nmt.data.tokenizer import Tokenizer
from nmt.decode.alignment import AttentionChoice, align_pairs, check_alignable, describe_choice
from nmt.decode.forced import Forced
from nmt.decode.model_info import ModelInfo
from nmt.decode.word_merge import hard_links, merge_pieces, word_alignment, word_pieces
from nmt.util.errors import UserError


def test_pieces_are_summed_into_words_and_each_target_word_gets_one_link() -> None:
    # target words: "AB" (pieces 0, 1) and "C" (piece 2); source words: "x" (piece 0), "yz" (pieces 1, 2)
    attention = np.array(
        [
            [0.6, 0.2, 0.2],  # piece A: x 0.6, yz 0.4
            [0.5, 0.3, 0.2],  # piece B: x 0.5, yz 0.5
            [0.4, 0.35, 0.25],  # piece C: x 0.4 but yz 0.6 once its two pieces are summed
        ]
    )
    weights = merge_pieces(attention, source_owner=[0, 1, 1], target_owner=[0, 0, 1], source_words=2, target_words=2)
    np.testing.assert_allclose(weights, [[1.1 / 2, 0.9 / 2], [0.4, 0.6]])
    np.testing.assert_allclose(weights.sum(1), 1.0)
    assert hard_links(weights) == [(0, 0), (1, 1)]


def test_a_tie_goes_to_the_first_source_word_and_a_word_without_pieces_gets_no_link() -> None:
    weights = merge_pieces(np.full((1, 2), 0.5), [0, 1], [1], source_words=2, target_words=3)
    assert hard_links(weights) == [(0, 1)]  # target words 0 and 2 have no pieces: zero rows
    assert weights[0].sum() == weights[2].sum() == 0.0


def test_word_alignment_keeps_the_words_and_writes_pharaoh() -> None:
    found = word_alignment(np.array([[0.1, 0.9], [0.8, 0.2]]), "a b", "c d", [0, 1], [0, 1])
    assert found.source_words == ["a", "b"] and found.target_words == ["c", "d"]
    assert found.links == [(0, 1), (1, 0)] and found.pharaoh == "0-1 1-0"


def test_a_sentences_pieces_are_its_words_pieces_in_order(big_spm: bytes) -> None:
    tok = Tokenizer(big_spm)
    sentences = ["w1 x7 y13", "w12  x84\ty156", "", "w3"]
    found = word_pieces(tok, sentences)
    for sentence, (ids, owner) in zip(sentences, found):
        assert ids == tok.encode([sentence])[0]
        assert owner == sorted(owner) and set(owner) == set(range(len(sentence.split())))


@dataclass
class FakeEngine:
    """An engine as far as alignment asks: what it describes, and forced attention of its own."""

    arch: str = "rnn"
    layers: bool = False
    attention: bool = True
    dec_layers: Optional[int] = 2
    heads: Optional[int] = 1  # an RNN's attention heads, as its config says (None: its type's)
    name: str = "fake"
    forced: list[Any] = field(default_factory=list)
    type: str = "qkv"  # an RNN's model.attention.type

    def describe(self) -> ModelInfo:
        attention = {"type": self.type, "heads": self.heads}
        model = {"transformer": {"dec_layers": self.dec_layers}, "attention": attention}
        config = None if self.dec_layers is None else {"model": model}
        return ModelInfo(self.arch, self.arch, "cpu", self.attention, self.layers, config=config)


@pytest.mark.parametrize(
    ("engine", "choice", "needle"),
    [
        (
            FakeEngine(attention=False, name="ctranslate2"),
            AttentionChoice(),
            "--engine ctranslate2 returns no attention",
        ),
        (FakeEngine(), AttentionChoice(layer=1), "an RNN model has one attention (layer 0)"),
        (FakeEngine(layers=True), AttentionChoice(layer=-2, head=0), "an RNN model has one attention (layer 0)"),
        # several heads (or none known): the engine stands in the way
        (FakeEngine(heads=4), AttentionChoice(head=1), "--engine fake gives an RNN's heads averaged (one head needs"),
        (FakeEngine(dec_layers=None), AttentionChoice(head=1), "--engine fake gives an RNN's heads averaged"),
        (FakeEngine(heads=None, type="my_energy"), AttentionChoice(head=1), "--engine fake gives an RNN's heads"),
        # one head: torch refuses it too, so no engine is offered (issue 70: it said "needs --engine torch")
        (FakeEngine(), AttentionChoice(head=1), "head 1: the model's attention has one head"),
        (FakeEngine(heads=None, type="bahdanau"), AttentionChoice(head=1), "the model's attention has one head"),
        (FakeEngine(name="torch"), AttentionChoice(head=1), "the model's attention has one head"),
        (FakeEngine(name="torch", heads=4), AttentionChoice(head=1), "an ensemble gives its members' heads averaged"),
        (FakeEngine("transformer"), AttentionChoice(layer=0), "the last layer's cross-attention only"),
        (FakeEngine("transformer"), AttentionChoice(head=0), "the last layer's cross-attention only"),
        (FakeEngine("transformer", dec_layers=None), AttentionChoice(layer=1), "give layer -1"),
    ],
)
def test_what_an_engine_cannot_give_is_refused_in_one_line(engine, choice, needle) -> None:
    with pytest.raises(UserError) as error:
        check_alignable(engine, choice)
    assert needle in str(error.value) and "\n" not in str(error.value)


def test_an_rnn_takes_its_one_layer_and_one_head_where_the_engine_has_its_heads_maps() -> None:
    for layer in (None, 0, -1):
        check_alignable(FakeEngine(), AttentionChoice(layer=layer))
        check_alignable(FakeEngine(layers=True), AttentionChoice(layer=layer, head=1))  # the head: checked on the maps


def test_a_negative_head_is_described_as_the_head_it_reads() -> None:
    """-1 is the last head, as the refusal of a head out of range offers ("or -2 to -1")."""
    two = FakeEngine(layers=True, heads=2, name="torch")
    check_alignable(two, AttentionChoice(head=-1))
    assert describe_choice(two, AttentionChoice(head=-1)) == "the model's attention, head 1"
    assert describe_choice(two, AttentionChoice(head=-2)) == "the model's attention, head 0"
    assert describe_choice(FakeEngine("transformer", layers=True, dec_layers=3), AttentionChoice(1, -1)) == (
        "decoder layer 1 of 3 (counted from 0), head -1"  # the config gives no head count: as given
    )


@pytest.mark.parametrize("layer", [None, -1, 1])
def test_the_last_layer_is_what_an_engine_without_layer_maps_gives(layer) -> None:
    check_alignable(FakeEngine("transformer"), AttentionChoice(layer=layer))  # 2 decoder layers: 1 is the last
    check_alignable(FakeEngine("transformer", layers=True), AttentionChoice(layer=0, head=3))  # checked on the maps


@dataclass
class LayerEngine(FakeEngine):
    """A Transformer engine with every layer's maps: layer l, head h weighs source piece (l + h) % S."""

    arch: str = "transformer"
    layers: bool = True
    src_tok: Any = None
    tgt_tok: Any = None

    def decode_config(self, overrides: Any) -> Any:
        from nmt.config import DecodeConfig

        return DecodeConfig()

    def layer_attention(self, sources: list[list[int]], outputs: list[list[int]], batch_size: int = 64) -> list:
        return [self.maps(src, out) for src, out in zip(sources, outputs)]

    def maps(self, src_ids: list[int], out_ids: list[int]) -> np.ndarray:
        L, H, T, S = 3, 2, len(out_ids) + 1, len(src_ids)
        maps = np.zeros((L, H, T, S))
        for layer in range(L):
            for head in range(H):
                maps[layer, head, :, (layer + head) % S] = 1.0
        return maps

    def force(self, *args: Any, **kwargs: Any) -> list[Forced]:
        raise AssertionError("a Transformer with layer maps is not forced")


@pytest.mark.parametrize(
    ("layer", "head", "piece"),
    [(None, 0, 1), (1, 1, 2), (-1, 0, 2), (0, 0, 0), (-3, 1, 1)],
)
def test_the_default_layer_is_the_penultimate_and_a_head_can_be_read_alone(big_spm, layer, head, piece) -> None:
    tok = Tokenizer(big_spm)
    engine = LayerEngine(src_tok=tok, tgt_tok=tok)
    (found,) = align_pairs(engine, ["w1 w2 w3 w4"], ["x7"], AttentionChoice(layer, head))
    pieces = word_pieces(tok, ["w1 w2 w3 w4"])[0][1]
    assert found.links == [(pieces[piece], 0)]  # the word that holds the piece weighed
    with pytest.raises(UserError, match=r"layer 3: the model has 3 \(layer 0 to 2, or -3 to -1\)"):
        align_pairs(engine, ["w1 w2"], ["x7"], AttentionChoice(layer=3))
    with pytest.raises(UserError, match=r"head 2: the model has 2"):
        align_pairs(engine, ["w1 w2"], ["x7"], AttentionChoice(head=2))


def test_the_mean_and_the_max_do_not_favour_the_word_of_most_pieces_where_the_sum_does() -> None:
    # source words: "a" (1 piece), "bcd" (3 pieces); one target word attending uniformly over the 4 pieces
    uniform = np.full((1, 4), 0.25)
    owner, target = [0, 1, 1, 1], [0]
    summed = merge_pieces(uniform, owner, target, 2, 1, "sum")
    np.testing.assert_allclose(summed, [[0.25, 0.75]])  # diffuse attention goes to the long word
    np.testing.assert_allclose(merge_pieces(uniform, owner, target, 2, 1, "mean"), [[0.5, 0.5]])
    np.testing.assert_allclose(merge_pieces(uniform, owner, target, 2, 1, "max"), [[0.5, 0.5]])
    peaked = np.array([[0.4, 0.2, 0.2, 0.2]])  # the one-piece word is the strongest piece
    assert hard_links(merge_pieces(peaked, owner, target, 2, 1, "sum")) == [(1, 0)]
    assert hard_links(merge_pieces(peaked, owner, target, 2, 1, "mean")) == [(0, 0)]
    assert hard_links(merge_pieces(peaked, owner, target, 2, 1, "max")) == [(0, 0)]
    no_pieces = merge_pieces(uniform, owner, target, 3, 1, "mean")  # a third word read as nothing
    assert no_pieces[0, 2] == 0 and np.isclose(no_pieces.sum(), 1.0)
    with pytest.raises(ValueError, match="unknown merge 'median'"):
        merge_pieces(uniform, owner, target, 2, 1, "median")


@dataclass
class ShiftEngine(LayerEngine):
    """Row t of every map weighs source piece t % S: the step t attends where piece t of the target sits."""

    def maps(self, src_ids: list[int], out_ids: list[int]) -> np.ndarray:
        T, S = len(out_ids) + 1, len(src_ids)
        maps = np.zeros((3, 2, T, S))
        for t in range(T):
            maps[:, :, t, t % S] = 1.0
        return maps


def test_the_input_reading_aligns_each_target_word_by_the_step_that_reads_it(big_spm) -> None:
    """Chen et al.'s (2020) shift: target piece t is read as the decoder's input at step t + 1."""
    tok = Tokenizer(big_spm)
    engine = ShiftEngine(src_tok=tok, tgt_tok=tok)
    source, target = "w1 w2 w3 w4", "x7 x8"
    src_owner = word_pieces(tok, [source])[0][1]
    tgt_first = [word_pieces(tok, [target])[0][1].index(j) for j in range(2)]  # each target word's first piece
    (predict,) = align_pairs(engine, [source], [target], AttentionChoice(reading="predict"))
    (shifted,) = align_pairs(engine, [source], [target], AttentionChoice(reading="input"))
    assert predict.links[0] == (src_owner[tgt_first[0] % len(src_owner)], 0)
    assert shifted.links[0] == (src_owner[(tgt_first[0] + 1) % len(src_owner)], 0)
    with pytest.raises(UserError, match="reading 'next': give one of predict, input"):
        AttentionChoice(reading="next")
    with pytest.raises(UserError, match="merge 'median': give one of sum, mean, max"):
        AttentionChoice(merge="median")
