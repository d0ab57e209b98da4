"""The ``data`` and ``decode`` sections of the experiment config, one model each.

Every option has its default and a one-line description here (the ``model`` section's in
:mod:`nmt.config.model_sections`, the ``train`` section's in :mod:`nmt.config.train_section`),
and nowhere else: the data layer's cleaning and SentencePiece settings, for one, come from
:class:`DataConfig`.  Each section validates its own fields and the combinations inside it;
checks across sections, loading and overrides live in :mod:`nmt.config`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, model_validator

from nmt.config.section import Section

NORMALIZATIONS = ("nfc", "nfkc", "none")
"""Valid ``data.normalization``: Unicode composed form, compatibility form, or neither."""

SPM_MODEL_TYPES = ("unigram", "bpe")
"""Valid ``data.spm_type``: the SentencePiece model types we train."""


class DataConfig(Section):
    """Corpus source, the cleaning of its training split, and SentencePiece training."""

    corpus: Literal["synthetic", "multi30k", "europarl", "tatoeba", "hub", "local"] = Field(
        "synthetic",
        description="Corpus source: embedded synthetic en-de, Multi30k, the Europarl sample (NLTK's ComTrans, "
        "de-en), Tatoeba de-en (manythings.org), a Hugging Face hub set, or local files.",
    )
    src: str = Field("en", min_length=2, description="Source language code.")
    tgt: str = Field("de", min_length=2, description="Target language code.")
    root: str = Field("data", description="Folder under which prepared corpora live (data/<corpus>/<src>-<tgt>/).")
    mirror: Optional[str] = Field(
        None,
        description="Local folder standing in for the download of Multi30k, Europarl or Tatoeba (else "
        "$NMT_DATA_MIRROR): the upstream file names (Europarl: comtrans.g.gz and comtrans.e.gz, or comtrans.zip; "
        "Tatoeba: deu-eng.zip).",
    )
    gold_alignments: Optional[str] = Field(
        None,
        description="corpus europarl: the RWTH gold alignments (DeEnGoldAlignment.tar.gz or its folder; null: "
        "<root>/alignments/, where nmt data fetch-alignments puts it); every pair sharing a German or English "
        "line with them is removed before the split, and counted.",
    )
    split_seed: int = Field(
        1, description="corpus europarl or tatoeba: seed of the hash that splits pairs into train, valid and test."
    )
    synthetic_sizes: dict[str, Annotated[int, Field(ge=0)]] = Field(
        {"train": 40000, "valid": 500, "test": 1000}, description="Pairs per split for the synthetic corpus."
    )
    synthetic_seed: int = Field(1, description="Seed of the synthetic corpus generator.")
    synthetic_min_words: int = Field(3, ge=3, description="Shortest synthetic English sentence, in words.")
    synthetic_max_words: int = Field(40, ge=3, description="Longest synthetic English sentence, in words.")
    hub_name: Optional[str] = Field(None, description="Hugging Face dataset name (corpus: hub), e.g. wmt14.")
    hub_config: Optional[str] = Field(None, description="Hugging Face dataset configuration, e.g. de-en.")
    hub_splits: dict[str, str] = Field(
        {"train": "train", "valid": "validation", "test": "test"}, description="Our split name -> hub split name."
    )
    local_files: dict[str, list[str]] = Field(
        {}, description="corpus: local; split -> [src_file, tgt_file] or [tsv_or_jsonl_file]."
    )
    normalization: Literal[NORMALIZATIONS] = Field(  # type: ignore[valid-type]
        "nfc", description="Unicode normalization of all splits."
    )
    min_len: int = Field(1, ge=1, description="Training pairs with fewer words on a side are dropped.")
    max_len: int = Field(100, ge=1, description="Training pairs with more words on a side are dropped.")
    max_ratio: float = Field(
        9.0, ge=1.0, description="Training pairs whose word-length ratio exceeds this are dropped (Moses default 9)."
    )
    join_captions: int = Field(
        1,
        ge=1,
        le=20,
        description="Join each split's consecutive pairs in groups of 1, 2, ..., N pairs in turn (N = this): "
        "long pairs made of short ones, for BLEU by length beyond the captions' 30 words (the length lab); "
        "not natural long sentences. 1 = off; N > 1 prepares into <root>/<corpus>/<src>-<tgt>-joinN-maxL/ "
        "(L = data.max_len, so the paper's two training caps keep a folder each).",
    )
    vocab_size: int = Field(8000, ge=16, description="SentencePiece vocabulary size (per model).")
    spm_type: Literal[SPM_MODEL_TYPES] = Field(  # type: ignore[valid-type]
        "unigram", description="SentencePiece model type."
    )
    joint_vocab: bool = Field(True, description="One SentencePiece model for both languages (else one per side).")
    character_coverage: float = Field(1.0, gt=0.0, le=1.0, description="SentencePiece character coverage.")
    input_sentence_size: int = Field(1_000_000, ge=1, description="Most sentences SentencePiece trains on.")

    @property
    def pair(self) -> str:
        return f"{self.src}-{self.tgt}"

    @property
    def prepared_dir(self) -> Path:
        """``<root>/<corpus>/<src>-<tgt>``; for local files one folder further, named after the
        files (:meth:`local_key`), so two local corpora of one pair never replace each other.
        Joined captions go to ``<src>-<tgt>-joinN-maxL``: N captions at most per pair, training
        pairs of at most L words, so runs trained with two caps (Bahdanau et al. 2015's 30 and 50
        words) can be prepared side by side and trained at once."""
        joined = f"-join{self.join_captions}-max{self.max_len}" if self.join_captions > 1 else ""
        folder = Path(self.root) / self.corpus / (self.pair + joined)
        return folder / self.local_key() if self.corpus == "local" else folder

    def local_key(self) -> str:
        """Ten hex digits of a hash of ``local_files`` as written (split -> paths, in split order)."""
        spec = json.dumps({split: list(files) for split, files in sorted(self.local_files.items())})
        return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:10]


MAX_BEAM_ROWS = 4096
"""Most beam rows (sentences x beam, or sentences x samples) one search call may hold, on every
engine.

A row costs a few hundred KB on a large model (a 64-sentence batch with beam 1000,
64,000 rows, took 21 GB), so 4096 rows stay near 1-2 GB whatever the beam; the
defaults (64 sentences, beam 5: 320 rows) and beams up to 64 are never cut.
"""

MAX_OUTPUT_TOKENS = 1024
"""Most tokens (EOS included) any search writes for one sentence, whatever ``a * S + b`` says.

Every search clamps its per-sentence budget to this (:func:`nmt.decode.greedy.max_lengths`), so
no decode option can grow an output, and the state that grows with it, without bound:
the defaults (1.5 x a 256-token source + 10 = 394) stay well below it.
"""

MAX_LEN_A = 10.0
"""Largest ``decode.max_len_a``: an output ten times its source is already far past any translation."""

SAMPLING_ONLY = {"top_k": "--top-k", "top_p": "--top-p", "temperature": "--temperature"}
"""Decode options that only sampling reads, with their ``nmt translate`` flags."""


class DecodeConfig(Section):
    """Greedy and beam search settings, also applied at translation time."""

    beam: int = Field(5, ge=1, description="Beam size (1 = greedy).")
    length_penalty: float = Field(1.0, ge=0.0, description="GNMT length penalty alpha (0 = none).")
    max_len_a: float = Field(
        1.5,
        ge=0.0,
        le=MAX_LEN_A,
        description=f"Max output length = a * source length + b: a, at most {MAX_LEN_A:g} "
        f"(the length itself is at most {MAX_OUTPUT_TOKENS} tokens).",
    )
    max_len_b: int = Field(
        10,
        ge=1,
        le=MAX_OUTPUT_TOKENS,
        description=f"Max output length = a * source length + b: b, at most "
        f"{MAX_OUTPUT_TOKENS}; any longer a * S + b is cut to "
        f"{MAX_OUTPUT_TOKENS} tokens (EOS included).",
    )
    min_len: int = Field(1, ge=0, description="Least output tokens before EOS (1 = never an empty translation).")
    batch_size: int = Field(64, ge=1, description="Sentences decoded at once.")
    n_best: int = Field(1, ge=1, description="Hypotheses written per input (at most beam).")
    max_src_len: int = Field(256, ge=1, description="Longer inputs are cut to this many tokens, with a warning.")
    no_repeat_ngram: Optional[int] = Field(
        None, ge=1, description="Forbid repeating any n-gram of this many tokens in an output (null = off)."
    )
    coverage_penalty: float = Field(
        0.0, ge=0.0, description="GNMT coverage penalty beta for beam search (0 = off; Wu et al. 2016 use 0.2)."
    )
    sample: bool = Field(False, description="Draw each token instead of searching; n_best samples per input, beam 1.")
    top_k: int = Field(
        0, ge=0, description="Sampling: draw from the k most probable tokens only (0 = all; needs sample)."
    )
    top_p: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="Sampling: draw from the smallest set of tokens "
        "holding this probability (nucleus; 1 = all; needs sample).",
    )
    temperature: float = Field(
        1.0, gt=0.0, description="Sampling: divide the logits by this (<1 sharper, >1 flatter; needs sample)."
    )
    seed: int = Field(1, ge=0, description="Sampling: random seed, so the same command draws the same samples.")

    @model_validator(mode="after")
    def _check_search(self) -> DecodeConfig:
        if self.sample and self.beam > 1:
            raise ValueError(f"decode.sample draws samples instead of a beam: set decode.beam 1 (not {self.beam})")
        if self.coverage_penalty > 0 and (self.sample or self.beam == 1):
            raise ValueError("decode.coverage_penalty applies to beam search: needs decode.beam > 1 and no sampling")
        unused = [key for key in SAMPLING_ONLY if getattr(self, key) != type(self).model_fields[key].default]
        if unused and not self.sample:  # a value that would do nothing is refused, so nobody trusts it
            values = ", ".join(f"decode.{key}={getattr(self, key)}" for key in unused)
            flags = ", ".join(SAMPLING_ONLY[key] for key in unused)
            verb, them = ("applies", "it") if len(unused) == 1 else ("apply", "them")
            raise ValueError(
                f"{values} ({flags}) only {verb} when sampling: add --sample (decode.sample=true) or leave {them} out"
            )
        return self

    @classmethod
    def relax_saved(cls, raw: Any) -> None:
        """Make a saved decode section (a dict, changed in place) pass today's checks, so an older
        checkpoint or run still loads: sampling options saved without ``sample`` did nothing and
        return to their defaults; length limits above today's maxima come down to them."""
        if not isinstance(raw, dict):
            return
        if not raw.get("sample"):
            for key in SAMPLING_ONLY:
                raw.pop(key, None)
        for key, most in (("max_len_a", MAX_LEN_A), ("max_len_b", MAX_OUTPUT_TOKENS)):
            value = raw.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > most:
                raw[key] = type(value)(most)
