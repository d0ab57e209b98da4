"""``--engine ctranslate2``: greedy and beam search on an exported Transformer, without torch.

:class:`CT2Translator` loads a folder written by :mod:`nmt.export.ctranslate2` into a
``ctranslate2.Translator`` (CPU, float32 or int8) and translates SentencePiece ids as
:func:`nmt.decode.inference.translate_ids` does: the same output budgets, the same forbidden
tokens (PAD, BOS, EOS before ``min_len``), n-gram blocking, hypotheses without EOS, and scores
defined as ours.  Where CTranslate2 computes something else, this is what is done about it:

- **Scores.**  CTranslate2 renormalizes the softmax after it removes the forbidden tokens; ours
  does not.  Every hypothesis it returns is rescored by ``Translator.score_batch`` (forced
  decoding, full softmax), so ``log_probs`` are the ones our searches sum.  Its beam still ranks
  live hypotheses with the renormalized scores, which differ from ours by the probability the
  model gives PAD and BOS: about zero once trained, as neither is ever a training target.
- **Output budget.**  Ours is floor(a * S) + b tokens per sentence, EOS included and forced at
  the last position; CTranslate2 takes one ``max_decoding_length`` per call and stops there
  without EOS.  Sentences are grouped by budget, each group searched for budget - 1 tokens, and a
  hypothesis cut there scored with the EOS ours would force.  (Where ``min_len`` forbids that
  EOS, ours scores it float32's lowest value; this engine, its log-probability.)  At the budget
  the two beams keep slightly different hypotheses: ours forces EOS on the beam best that did not
  end, CTranslate2 keeps its beam best candidates, ended or not.
- **Length penalty.**  We rank finished beam hypotheses by log P / ((5 + |Y|) / 6) ** alpha
  (GNMT; |Y| counts EOS) and search until no live hypothesis could still win; CTranslate2 ranks
  by log P / |Y| ** penalty (|Y| with EOS too) and stops once beam x patience hypotheses have
  ended, or, with penalty 0, once the best candidate ends.  So with alpha = 0 and no coverage
  penalty its penalty-0 search is used, which finds our best hypothesis; otherwise its finished
  hypotheses are re-ranked here by the GNMT formula (plus the GNMT coverage penalty, from the
  last layer's attention averaged over heads, as ours): our ranking over the first
  beam x ``patience`` hypotheses to end, where ours may go on and find a better one.
- Sampling is not offered (its draws could not match ours); it needs the torch engine.

It lives with the searches it mirrors, whose result (:class:`~nmt.decode.batched.Translation`),
output budgets (:func:`~nmt.decode.common.max_lengths`) and coverage penalty
(:func:`~nmt.decode.rules.coverage_penalty`) it uses itself, on numpy arrays; like them it
imports no torch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import ctranslate2
import numpy as np

from nmt.config import DecodeConfig
from nmt.config.sections import MAX_BEAM_ROWS, MAX_OUTPUT_TOKENS
from nmt.data.tokenizer import BOS, EOS, PAD, Tokenizer
from nmt.decode.batched import Translation
from nmt.decode.common import max_lengths
from nmt.decode.rules import coverage_penalty
from nmt.engine.ct2_files import check_ct2_files
from nmt.engine.manifest import SRC_SPM, TGT_SPM, ExportError, check_vocab_sizes, read_manifest
from nmt.util.errors import UserError

log = logging.getLogger(__name__)

FORMAT = "ctranslate2"
COMPUTE_TYPES = ("float32", "int8")
"""How the weights run on the CPU: as exported, or quantized to 8 bits when loaded."""

Hypothesis = tuple[list[int], Optional[np.ndarray]]
"""Token ids without EOS, and (for the coverage penalty) attention (rows, S), EOS row included."""


def position_rows(decode: Mapping[str, Any]) -> int:
    """Positions an export stores: every output position, and sources up to the run's max_src_len."""
    return max(MAX_OUTPUT_TOKENS, int(decode.get("max_src_len", 0)))


class CT2Translator:
    """An exported Transformer in CTranslate2, translating lists of source ids (no BOS/EOS)."""

    def __init__(self, folder: Path, *, compute_type: str = "float32", threads: int = 0) -> None:
        """Load ``folder``; ``threads`` computing each batch (0: CTranslate2's default, four or
        OMP_NUM_THREADS; on a machine whose cores are busy, fewer threads are much faster)."""
        if compute_type not in COMPUTE_TYPES:
            raise UserError(f"unknown compute type {compute_type!r}; valid options: {', '.join(COMPUTE_TYPES)}")
        folder = Path(folder)
        self.manifest = read_manifest(folder, FORMAT)
        self.src_tok = Tokenizer.load(folder / self.manifest.files[SRC_SPM])
        self.tgt_tok = Tokenizer.load(folder / self.manifest.files[TGT_SPM])
        check_vocab_sizes(folder, self.manifest, self.src_tok.vocab_size, self.tgt_tok.vocab_size)
        self.src_pieces = [self.src_tok.sp.id_to_piece(i) for i in range(self.src_tok.vocab_size)]
        self.tgt_pieces = [self.tgt_tok.sp.id_to_piece(i) for i in range(self.tgt_tok.vocab_size)]
        check_ct2_files(folder, self.manifest, self.src_pieces, self.tgt_pieces)
        try:
            self.translator = ctranslate2.Translator(
                str(folder), device="cpu", compute_type=compute_type, intra_threads=threads
            )
        except (RuntimeError, ValueError) as exc:
            raise ExportError(
                f"{folder}: CTranslate2 cannot load the model ({str(exc).splitlines()[0][:200]})"
            ) from None
        self.tgt_ids = {piece: i for i, piece in enumerate(self.tgt_pieces)}
        self.max_source_tokens = position_rows(self.manifest.decode)
        self._never = [[self.tgt_pieces[PAD]], [self.tgt_pieces[BOS]]]  # what our searches never output

    @property
    def target_vocab_size(self) -> int:
        return len(self.tgt_pieces)

    def check_search(self, decode: DecodeConfig, beam: int, n_best: int, patience: float = 1.0) -> None:
        """Refuse, in one line, a search this engine does not run, before any input is read."""
        if patience < 1:
            raise UserError(f"patience {patience}: a beam must finish at least beam-size hypotheses (patience >= 1)")
        if decode.sample:
            raise UserError("the ctranslate2 engine runs greedy and beam search; sampling needs --engine torch")
        if not 1 <= beam <= self.target_vocab_size:
            raise UserError(f"--beam {beam}: the beam size must be between 1 and {self.target_vocab_size}")
        if not 1 <= n_best <= beam:
            raise UserError(f"--beam {beam} --n-best {n_best}: need 1 <= n-best <= beam")

    def translate_ids(
        self,
        sentences: Sequence[Sequence[int]],
        decode: DecodeConfig,
        *,
        beam: Optional[int] = None,
        n_best: int = 1,
        patience: float = 1.0,
    ) -> list[Translation]:
        """Translate id sequences (no BOS/EOS); results in input order, ``n_best`` per sentence.

        An empty source gives an empty translation without running the model; a source longer
        than the stored positions is cut, with a warning.  ``patience`` > 1 lets a beam whose
        ranking CTranslate2 cannot do finish more hypotheses before choosing (module docstring).
        """
        beam = beam or decode.beam
        self.check_search(decode, beam, n_best, patience)
        results: list[Optional[Translation]] = [None] * len(sentences)
        groups: dict[int, list[int]] = {}
        sources: dict[int, list[str]] = {}
        for i, ids in enumerate(sentences):
            if len(ids) == 0:
                results[i] = Translation([[] for _ in range(n_best)], [0.0] * n_best, [0.0] * n_best)
                continue
            if len(ids) > self.max_source_tokens:
                log.warning(
                    "sentence %d has %d tokens; translating its first %d", i + 1, len(ids), self.max_source_tokens
                )
            sources[i] = [self.src_pieces[t] for t in ids[: self.max_source_tokens]]
        lengths = np.array([len(pieces) for pieces in sources.values()], dtype=np.int64)
        for i, budget in zip(sources, max_lengths(lengths, decode.max_len_a, decode.max_len_b).tolist()):
            groups.setdefault(budget, []).append(i)
        for budget, rows in sorted(groups.items()):
            group = [sources[i] for i in rows]
            found = self._search(group, budget, decode, beam, patience)
            for i, hyps, log_probs in zip(rows, found, self._log_probs(group, found, decode.batch_size)):
                results[i] = _ranked(hyps, log_probs, decode, beam, n_best)
        return [r for r in results if r is not None]

    def _search(
        self, sources: list[list[str]], budget: int, decode: DecodeConfig, beam: int, patience: float
    ) -> list[list[Hypothesis]]:
        """Every sentence's finished hypotheses under one output budget (EOS included), to be rescored and ranked."""
        steps = budget - 1  # the tokens before the last position, where our searches force EOS
        if steps < 1:
            return [[([], None)] for _ in sources]
        coverage = beam > 1 and decode.coverage_penalty > 0
        # Ranked by log-probability alone, a beam may stop as soon as its best candidate ends (penalty 0):
        # no later hypothesis can beat it.  Ranked by GNMT, CTranslate2 collects beam x patience finished ones.
        early_stop = beam == 1 or (decode.length_penalty == 0 and not coverage)
        patience = 1.0 if early_stop else patience
        results = self.translator.translate_batch(
            sources,
            beam_size=beam,
            patience=patience,
            num_hypotheses=round(beam * patience),
            length_penalty=0.0 if early_stop else 1.0,
            max_decoding_length=steps,
            min_decoding_length=min(decode.min_len, steps),
            suppress_sequences=self._never,
            no_repeat_ngram_size=decode.no_repeat_ngram or 0,
            max_input_length=0,
            return_end_token=True,
            return_attention=coverage,
            max_batch_size=max(1, min(decode.batch_size, MAX_BEAM_ROWS // beam)),
        )
        found = []
        for result in results:
            attention = result.attention if coverage else [None] * len(result.hypotheses)
            found.append([(self._ids(tokens), _attention(a)) for tokens, a in zip(result.hypotheses, attention)])
        return found

    def score_ids(
        self, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], batch_size: int
    ) -> list[np.ndarray]:
        """Per-token log-probabilities of each target (ids without EOS; the last entry is EOS's)
        given its source, by CTranslate2's forced decoding (``score_batch``); no attention."""
        scored = self.translator.score_batch(
            [[self.src_pieces[t] for t in src[: self.max_source_tokens]] for src in sources],
            [[self.tgt_pieces[t] for t in tgt] for tgt in targets],
            max_input_length=0,
            max_batch_size=max(1, batch_size),
        )
        return [np.asarray(r.log_probs, dtype=np.float64) for r in scored]

    def _ids(self, tokens: list[str]) -> list[int]:
        ids = [self.tgt_ids[t] for t in tokens]
        return ids[:-1] if ids and ids[-1] == EOS else ids

    def _log_probs(self, sources: list[list[str]], found: list[list[Hypothesis]], batch_size: int) -> list[list[float]]:
        """log P(y, EOS | x) of every hypothesis under the full softmax, as our searches sum it."""
        pairs = [(src, hyp) for src, hyps in zip(sources, found) for hyp, _ in hyps]
        scored = self.translator.score_batch(
            [src for src, _ in pairs],
            [[self.tgt_pieces[t] for t in hyp] for _, hyp in pairs],
            max_input_length=0,
            max_batch_size=batch_size,
        )
        flat = iter(float(sum(r.log_probs)) for r in scored)
        return [[next(flat) for _ in hyps] for hyps in found]


def _attention(attention: Optional[list[list[float]]]) -> Optional[np.ndarray]:
    return None if attention is None else np.asarray(attention, dtype=np.float64)


def _ranked(
    hyps: list[Hypothesis], log_probs: list[float], decode: DecodeConfig, beam: int, n_best: int
) -> Translation:
    """The n-best by our ranking: log-probability for greedy search, the GNMT score for a beam."""
    scores = list(log_probs)
    if beam > 1:
        for j, (ids, attention) in enumerate(hyps):
            scores[j] = log_probs[j] / ((5.0 + len(ids) + 1) / 6.0) ** decode.length_penalty
            if attention is not None:
                scores[j] += float(coverage_penalty(attention.sum(0), decode.coverage_penalty))
    order = sorted(range(len(hyps)), key=lambda j: -scores[j])[:n_best]
    return Translation([hyps[j][0] for j in order], [log_probs[j] for j in order], [scores[j] for j in order])
