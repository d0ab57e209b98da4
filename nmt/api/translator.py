"""``nmt.load`` and :class:`Translator`: a trained or exported model translating and scoring lists of strings.

One :class:`~nmt.decode.engines.Engine` does the work, the one ``nmt translate`` opens; the
requests go through :mod:`nmt.decode.request` as the command's do, so a sentence translated here
and by the command gets the same output.  What comes back is plain data (:mod:`nmt.api.results`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union, overload

import numpy as np

from nmt.api import arguments as check
from nmt.api.extending import allowing_modules
from nmt.api.results import EOS_PIECE, Hypothesis, ScoreResult, TranslationResult, host_array
from nmt.config.sections import MAX_OUTPUT_TOKENS
from nmt.decode.alignment import READINGS, AttentionChoice, align_pairs
from nmt.decode.batched import Translation
from nmt.decode.engines import ENGINE_NAMES, Engine, choose_engine, open_engine
from nmt.decode.request import decode_overrides, resolve_search, translate_lines
from nmt.decode.word_merge import MERGES, WordAlignment
from nmt.engine.manifest import MANIFEST
from nmt.run.paths import RunPaths
from nmt.util.errors import UserError

PathLike = Union[str, Path]


def _check_lines(lines: Sequence[str], what: str) -> list[str]:
    """``lines`` as a list of strings of Unicode text; one string, None, or anything else is refused
    in one line naming the parameter ``what``."""
    if isinstance(lines, (str, bytes)):
        raise UserError(f"{what}: give a list of sentences, not one string (e.g. [{short(lines)}])")
    if not isinstance(lines, Sequence):
        raise UserError(f"{what}: give a list of sentences, not {type(lines).__name__}")
    lines = list(lines)
    bad = next((i for i, line in enumerate(lines) if not isinstance(line, str)), None)
    if bad is not None:
        raise UserError(f"{what}: item {bad} is {type(lines[bad]).__name__}, not a string")
    return [check.text(f"{what}[{i}]", line) for i, line in enumerate(lines)]


def _check_lengths(what: str, ids: Sequence[Sequence[int]], limit: int, why: str) -> None:
    """Refuse a sentence of more than ``limit`` tokens: a forced score of a cut sentence would be
    another sentence's, and an unbounded one costs time and memory in length x vocabulary."""
    long = next((i for i, seq in enumerate(ids) if len(seq) > limit), None)
    if long is not None:
        raise UserError(f"{what}[{long}] has {len(ids[long]):,} tokens, more than {limit} ({why}); score a shorter one")


def short(text: Union[str, bytes], limit: int = 40) -> str:
    """``repr(text)`` cut to ``limit`` characters, for messages."""
    shown = repr(text[: limit + 1])
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _engine_for(path: Path, engine: Optional[str]) -> tuple[str, list[Path], Optional[Path]]:
    """What ``path`` is, as :func:`~nmt.decode.engines.open_engine` takes it: the engine, the
    checkpoints (a file, or a run folder's best) and the export folder."""
    if engine is not None and engine not in ENGINE_NAMES:
        raise UserError(f"engine {engine!r}: unknown; valid options: {', '.join(ENGINE_NAMES)}")
    if path.is_file():
        if engine not in (None, "torch"):
            raise UserError(f"{path}: a checkpoint runs on engine 'torch'; export it for {engine} (nmt export)")
        return "torch", [path], None
    if not path.is_dir():
        raise UserError(f"{path}: no such checkpoint, run folder or export folder")
    if (path / MANIFEST).is_file():
        return choose_engine(engine, [path]), [], path
    best = RunPaths(path).chosen  # the model nmt select (or train.select) chose, else best.pt
    if best.is_file():
        if engine not in (None, "torch"):
            raise UserError(f"{path}: a run folder runs on engine 'torch'; export it for {engine} (nmt export)")
        return "torch", [best], None
    if RunPaths(path).metrics.is_file():
        raise UserError(f"{path}: the run has no {best.relative_to(path)} yet (it saves one at its first validation)")
    raise UserError(f"{path}: not a checkpoint, a run folder (runs/NAME) or an export folder (holding {MANIFEST})")


def load(
    path: PathLike,
    engine: Optional[str] = None,
    device: str = "auto",
    *,
    threads: int = 0,
    compute_type: str = "float32",
    modules: Sequence[str] = (),
) -> Translator:
    """Load a model to translate with: a checkpoint file (``.pt``), a run folder (its best
    checkpoint, ``checkpoints/best.pt``) or a folder written by ``nmt export``.

    Args:
        path: the checkpoint, run folder or export folder.
        engine: ``"torch"``, ``"onnxruntime"`` or ``"ctranslate2"``; None takes the engine that
            runs ``path``: torch for a checkpoint or a run, the export's own for an export folder.
        device: ``"auto"`` (CUDA, then Apple's MPS, then the CPU), ``"cpu"``, ``"cuda"`` or
            ``"mps"``; only the torch engine runs anywhere but the CPU.
        threads: CPU threads, from 0 to 4 per CPU (0: torch follows the cores other processes
            leave free; the other engines use their own default).  On the torch engine this is
            torch's thread count for the whole process (``torch.set_num_threads``), which stays
            set after the call: the caller's own torch work runs with it too, until it is set again.
        compute_type: CTranslate2's weights: ``"float32"`` or ``"int8"``.
        modules: modules allowed to supply code the checkpoint was trained with (an attention or a
            schedule of your own, see :func:`nmt.register_attention`): names, or ``.py`` paths.
            A checkpoint never imports code by itself; one that needs a module not named here is
            refused in one line naming it, and one whose module's source changed since training too.

    Raises:
        nmt.util.errors.UserError: a path that is none of these, an engine that cannot run it, a
            device that is not there, an argument of the wrong type or out of range (naming the
            parameter); always one line.
    """
    from nmt.util.threads import check_count

    where = check.path("path", path)
    if engine is not None:
        check.choice("engine", engine, ENGINE_NAMES)
    check.choice("device", device, ("auto", "cpu", "cuda", "mps"))
    check_count(threads)
    check.text("compute_type", compute_type)  # its values: nmt.decode.engines.check_compute_type
    with allowing_modules(modules):
        name, checkpoints, folder = _engine_for(where, engine)
        opened = open_engine(name, checkpoints, folder, compute_type=compute_type, threads=threads, device=device)
    return Translator(opened, where)


class Translator:
    """A loaded model: :meth:`translate` lists of sentences, :meth:`score` given translations,
    :meth:`align` the words of given sentence pairs.

    Made by :func:`load`.  Decoding options left out (None) take the model's own ``decode``
    section, as ``nmt translate`` does.  Called, it gives just the text:
    ``translator("The cats do not like dogs.")`` is the translation (a string), a list of
    sentences gives a list of translations (see :meth:`__call__`).
    """

    def __init__(self, engine: Engine, path: Path) -> None:
        self.engine = engine
        self.path = path

    def __repr__(self) -> str:
        return f"Translator({str(self.path)!r}, engine={self.engine.name!r}, step={self.step})"

    @overload
    def __call__(self, sentences: str, **options: Any) -> str: ...

    @overload
    def __call__(self, sentences: Sequence[str], **options: Any) -> list[str]: ...

    def __call__(self, sentences: Union[str, Sequence[str]], **options: Any) -> Union[str, list[str]]:
        """The best translation's text: of one sentence (a string), or of each of a list of them
        (a list of strings, in input order).

        Args:
            sentences: one source sentence, or a list of them.
            **options: decoding options, passed to :meth:`translate` as they are (``beam=5``,
                ``batch_size=16``, ...); ``return_attention`` is not one (use :meth:`translate`).

        Raises:
            nmt.util.errors.UserError: as :meth:`translate` does, and for an option it does not take.
        """
        if "return_attention" in options:
            raise UserError("return_attention: a call gives text only; use Translator.translate for attention")
        valid = [n for n in inspect.signature(self.translate).parameters if n not in ("sentences", "return_attention")]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise UserError(f"{unknown[0]}: not an option of Translator.translate; give one of {', '.join(valid)}")
        if isinstance(sentences, str):
            return self.translate([sentences], **options)[0].text
        return [result.text for result in self.translate(sentences, **options)]

    @property
    def engine_name(self) -> str:
        """The engine that runs the model: torch, onnxruntime or ctranslate2."""
        return self.engine.name

    @property
    def step(self) -> int:
        """The training update the model was saved at."""
        return self.engine.step

    def translate(
        self,
        sentences: Sequence[str],
        *,
        beam: Optional[int] = None,
        n_best: Optional[int] = None,
        sample: bool = False,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        temperature: Optional[float] = None,
        seed: Optional[int] = None,
        no_repeat_ngram: Optional[int] = None,
        coverage_penalty: Optional[float] = None,
        length_penalty: Optional[float] = None,
        max_len_a: Optional[float] = None,
        max_len_b: Optional[int] = None,
        batch_size: Optional[int] = None,
        return_attention: bool = False,
        overrides: Sequence[str] = (),
    ) -> list[TranslationResult]:
        """Translate each sentence; one result per input, in input order (a blank one keeps its place).

        Args:
            sentences: source sentences, one string each.
            beam: beam size (1: greedy search); default the model's ``decode.beam``.
            n_best: hypotheses per sentence (at most the beam; with ``sample``, samples).
            sample: draw tokens instead of searching (torch engine only).
            top_k: sampling: only the k most probable tokens (0: all).
            top_p: sampling: only the most probable tokens holding this probability, in (0, 1].
            temperature: sampling: logits divided by this (> 0).
            seed: sampling: the random seed (the same seed draws the same samples).
            no_repeat_ngram: never repeat an n-gram of this many tokens.
            coverage_penalty: GNMT coverage penalty for beam search (beam 2 or more).
            length_penalty: GNMT length penalty alpha that ranks a beam's hypotheses.
            max_len_a: output length limit a * source tokens + b: a.
            max_len_b: output length limit a * source tokens + b: b.
            batch_size: sentences searched at once (1 or more; ``decode.batch_size``); the
                translations do not depend on it, the memory and speed do.
            return_attention: add each best hypothesis's attention matrix (not ctranslate2).
            overrides: further ``decode.KEY=VALUE`` settings, as ``--set`` gives them.

        Raises:
            nmt.util.errors.UserError: an option the model or engine cannot use, or an argument of
                the wrong type or out of range (naming the parameter), in one line.
        """
        lines = _check_lines(sentences, "sentences")
        options = {
            "sample": sample,
            "top_k": top_k,
            "top_p": top_p,
            "temperature": temperature,
            "seed": seed,
            "no_repeat_ngram": no_repeat_ngram,
            "coverage_penalty": coverage_penalty,
            "length_penalty": length_penalty,
            "max_len_a": max_len_a,
            "max_len_b": max_len_b,
            "batch_size": batch_size,
        }
        for name, value in {"beam": beam, "n_best": n_best, **options}.items():
            check.decode_option(name, value)
        check.flag("return_attention", return_attention)
        search = resolve_search(self.engine, beam, n_best, [*overrides, *decode_overrides(options)])
        ids, found = translate_lines(self.engine, search, lines, attention=return_attention)
        return [self._result(line, src, t, return_attention) for line, src, t in zip(lines, ids, found)]

    def _result(self, line: str, src_ids: list[int], found: Translation, attention: bool) -> TranslationResult:
        src_pieces = self.engine.src_tok.decode_pieces(src_ids)
        hypotheses = [
            Hypothesis(
                text=self.engine.tgt_tok.decode(ids),
                tokens=self.engine.tgt_tok.decode_pieces(ids) + [EOS_PIECE] if src_ids else [],
                score=float(score),
                log_prob=float(log_prob),
            )
            for ids, score, log_prob in zip(found.ids, found.scores, found.log_probs)
        ]
        weights = None
        if attention:
            weights = host_array(found.attention) if src_ids else np.zeros((0, 0))
        return TranslationResult(line, src_pieces, hypotheses, weights)

    def score(
        self,
        sources: Sequence[str],
        targets: Sequence[Union[str, Sequence[str]]],
        *,
        return_attention: bool = True,
    ) -> list[ScoreResult]:
        """Force-decode each target given its source: per-token log-probabilities, their total and
        the attention (where the engine has weights: torch and onnxruntime).

        A target is a string (split into subwords as the model's tokenizer does) or a list of the
        model's subword tokens, e.g. a :class:`TranslationResult`'s ``tokens`` (a final ``</s>``
        is optional): scoring a hypothesis's own tokens gives back its ``log_prob``.

        Raises:
            nmt.util.errors.UserError: lists of different lengths, a blank source, a token the
                target vocabulary lacks, attention asked of ctranslate2; one line each.
        """
        lines = _check_lines(sources, "sources")
        if isinstance(targets, (str, bytes)):
            raise UserError(f"targets: give a list of targets, not one string (e.g. [{short(targets)}])")
        if not isinstance(targets, Sequence):
            raise UserError(f"targets: give a list of targets, not {type(targets).__name__}")
        check.flag("return_attention", return_attention)
        if len(targets) != len(lines):
            raise UserError(
                f"sources and targets: {len(lines)} sources but {len(targets)} targets; give one target each"
            )
        target_ids = [self._target_ids(i, target) for i, target in enumerate(targets)]
        decode = self.engine.decode_config([])
        src_ids = self.engine.src_tok.encode(lines)
        _check_lengths("sources", src_ids, decode.max_src_len, "the model's decode.max_src_len")
        _check_lengths("targets", target_ids, MAX_OUTPUT_TOKENS - 1, "the most tokens a search writes, </s> aside")
        forced = self.engine.force(src_ids, target_ids, decode, attention=return_attention)
        tgt = self.engine.tgt_tok
        return [
            ScoreResult(
                source_tokens=self.engine.src_tok.decode_pieces(s),
                tokens=tgt.decode_pieces(t) + [EOS_PIECE],
                log_probs=f.log_probs,
                attention=f.attention,
            )
            for s, t, f in zip(src_ids, target_ids, forced)
        ]

    def align(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        *,
        layer: Optional[int] = None,
        head: Optional[int] = None,
        batch_size: Optional[int] = None,
        reading: str = "predict",
        merge: str = "sum",
    ) -> list[WordAlignment]:
        """Hard word alignments of given sentence pairs, read from the attention with each target
        forced through the model (as :meth:`score` forces it); one result per pair, in input order.

        Words are each sentence's whitespace tokens (give tokenized text, as gold alignments count
        words); each word is split into subword pieces on its own.  The pieces are merged by one
        rule: sum the attention over a target word's pieces, then over a source word's pieces
        (``merge``), and link each target word to the source word of highest weight (the first on a tie).  So each
        target word gets one link; a pair with a blank side gets none.  A result's ``links`` are
        (source word, target word) pairs, 0-based, its ``pharaoh`` the ``i-j`` line ``nmt align``
        writes, its ``weights`` the word-level attention.  Score them against gold links with
        :func:`nmt.alignment_error`.

        Args:
            sources: source sentences, one string each.
            targets: their translations, one string each.
            layer: a Transformer's decoder layer whose cross-attention is read (0 the first, -1 the
                last); default the penultimate, as Garg et al. (2019) found best.  An RNN has one (0).
            head: one head of that layer, or of a multi-head RNN attention (``model.attention.heads``
                above 1) on the torch engine (0 the first, -1 the last); default the heads' average.
            batch_size: pairs forced at once (default the model's ``decode.batch_size``).
            reading: ``"predict"`` aligns a target word by the step that predicts it (as attention is
                drawn), ``"input"`` by the step that reads it as its input (Chen et al. 2020's shift).
            merge: how a source word's pieces merge: ``"sum"`` (a word of many pieces gets all their
                weight), ``"mean"`` or ``"max"`` (a word weighs what its pieces do, however many).

        Raises:
            nmt.util.errors.UserError: lists of different lengths, an engine without attention
                (ctranslate2), a layer or head the model or engine cannot give, a sentence longer
                than the model takes, an argument of the wrong type; one line each.
        """
        lines, translations = _check_lines(sources, "sources"), _check_lines(targets, "targets")
        for name, value in (("layer", layer), ("head", head)):
            if value is not None:
                check.integer(name, value)
        check.decode_option("batch_size", batch_size)
        choice = AttentionChoice(
            layer, head, check.choice("reading", reading, READINGS), check.choice("merge", merge, MERGES)
        )
        return align_pairs(self.engine, lines, translations, choice, batch_size=batch_size)

    def _target_ids(self, index: int, target: Union[str, Sequence[str]]) -> list[int]:
        """The ids of one target: a string encoded, or subword tokens looked up (``</s>`` last dropped)."""
        tok = self.engine.tgt_tok
        if isinstance(target, str):
            return tok.encode([check.text(f"targets[{index}]", target)])[0]
        if not isinstance(target, Sequence) or isinstance(target, bytes):
            raise UserError(
                f"targets[{index}] is {type(target).__name__}: give a string or a list of the target vocabulary's tokens"
            )
        pieces = list(target)
        if pieces and pieces[-1] == EOS_PIECE:
            pieces = pieces[:-1]
        ids = [tok.sp.piece_to_id(p) if isinstance(p, str) else -1 for p in pieces]
        unknown = next((p for p, i in zip(pieces, ids) if i < 0 or tok.sp.id_to_piece(i) != p), None)
        if unknown is not None:
            raise UserError(f"targets[{index}] holds {short(str(unknown))}, not a token of the target vocabulary")
        return ids
