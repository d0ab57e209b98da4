"""The models a server holds: loaded once, named, described, and turned into response rows.

Every method that runs a model is called from the batcher's single worker thread
(:mod:`nmt.serve.batcher`), so no two searches share a model at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional

import torch

from nmt.config import Config
from nmt.data.tokenizer import BOS
from nmt.decode.inference import Loaded, Translation, load_checkpoint, translate_ids
from nmt.model.transformer import Transformer
from nmt.run.checkpoint import check_checkpoint_path
from nmt.run.paths import run_of_checkpoint
from nmt.util.errors import UserError

EOS_PIECE = "</s>"


class SearchKey(NamedTuple):
    """What must be equal for requests to share one search call."""

    model: str
    beam: int
    n_best: int
    max_len: Optional[int]  # None: the model's a * source length + b
    attention: bool


def parse_checkpoint_arg(arg: str) -> tuple[Optional[str], Path]:
    """``NAME=PATH`` or ``PATH`` (the name is then derived by :func:`default_name`)."""
    name, sep, path = arg.partition("=")
    if sep and name and "/" not in name and not Path(arg).exists():
        return name, Path(path)
    return None, Path(arg)


def default_name(path: Path) -> str:
    """runs/<run>/checkpoints/<file>.pt -> <run>; any other A.pt -> A."""
    run = run_of_checkpoint(path)
    return run.name if run is not None else path.stem


def attention_label(config: Config) -> str:
    """How /models and the page name a model's attention."""
    if config.model.arch == "transformer":
        return "transformer"
    attention = config.model.attention
    return f"custom ({attention.energy})" if attention.type == "custom" else attention.type


@dataclass
class ServedModel:
    """One checkpoint, loaded for serving."""

    name: str
    path: Path
    loaded: Loaded
    device: torch.device

    @property
    def config(self) -> Config:
        return self.loaded.config

    def info(self) -> dict[str, Any]:
        """The row of GET /models."""
        model = self.loaded.model
        return {
            "name": self.name,
            "checkpoint": str(self.path),
            "step": self.loaded.step,
            "arch": self.config.model.arch,
            "attention": attention_label(self.config),
            "parameters": sum(p.numel() for p in model.parameters()),
            "vocabulary": {
                "source": self.loaded.src_tok.vocab_size,
                "target": self.loaded.tgt_tok.vocab_size,
                "languages": [self.config.data.src, self.config.data.tgt],
            },
            "default_beam": self.config.decode.beam,
            "config": self.config.model_dump(mode="json"),
        }

    def encode(self, lines: Sequence[str], max_tokens: int) -> list[list[int]]:
        """Source ids; a sentence over ``max_tokens`` subwords is refused (a UserError naming it)."""
        ids = self.loaded.src_tok.encode(lines)
        for i, seq in enumerate(ids):
            if len(seq) > max_tokens:
                raise UserError(f"text[{i}] has {len(seq)} subword tokens; this server takes at most {max_tokens}")
        return ids

    def translate(self, key: SearchKey, sentences: list[list[int]]) -> list[dict[str, Any]]:
        """One search call over ``sentences``; one response row per sentence, in order."""
        # the model's length penalty, coverage penalty, n-gram block and a * source + b: as nmt translate
        # searches, except that a server never samples (a request names a beam instead)
        decode = self.config.decode.model_copy(
            update={
                "batch_size": max(len(sentences), 1),
                "sample": False,
                **({"max_len_a": 0.0, "max_len_b": key.max_len} if key.max_len else {}),
            }
        )
        results = translate_ids(
            self.loaded.model,
            sentences,
            decode,
            self.device,
            beam=key.beam,
            n_best=key.n_best,
            return_attention=key.attention,
        )
        return [self._row(src, result, key.attention) for src, result in zip(sentences, results)]

    def _row(self, src: list[int], result: Translation, attention: bool) -> dict[str, Any]:
        tgt_tok = self.loaded.tgt_tok
        hypotheses = [
            {"text": tgt_tok.decode(ids), "score": round(score, 4), "log_prob": round(log_prob, 4)}
            for ids, score, log_prob in zip(result.ids, result.scores, result.log_probs)
        ]
        row: dict[str, Any] = {"translation": hypotheses[0]["text"], "hypotheses": hypotheses}
        if attention:
            row["attention"] = self._attention(src, result)
        return row

    def _attention(self, src: list[int], result: Translation) -> Optional[dict[str, Any]]:
        """Weights of the best hypothesis: rows = its tokens and EOS, columns = source tokens.

        None for a model without attention or an empty source.  A Transformer adds
        ``layers``: its cross-attention per layer and head (layer, head, row, column).
        """
        if result.attention is None or not src:
            return None
        out = result.ids[0]
        view: dict[str, Any] = {
            "source_tokens": self.loaded.src_tok.decode_pieces(src),
            "target_tokens": self.loaded.tgt_tok.decode_pieces(out) + [EOS_PIECE],
            "weights": _rounded(result.attention),
        }
        model = self.loaded.model
        if isinstance(model, Transformer):
            with torch.inference_mode():
                maps = model.attention_maps(
                    torch.tensor([src], device=self.device),
                    torch.tensor([len(src)], device=self.device),
                    torch.tensor([[BOS] + out], device=self.device),
                )
            view["layers"] = _rounded(maps["cross"][0])
        return view


def _rounded(weights: torch.Tensor) -> list[Any]:
    """Nested lists of weights to 4 decimals (the JSON stays small; a heat map needs no more)."""
    return (weights.detach().double().cpu() * 10_000).round().div(10_000).tolist()


def load_served(args: Sequence[str], device: torch.device) -> dict[str, ServedModel]:
    """Load every ``--checkpoint`` once, keyed by name; clashing names are a UserError."""
    if not args:
        raise UserError("give at least one --checkpoint")
    paths: dict[str, Path] = {}
    for arg in args:  # every name and path is checked before the first model loads
        name, path = parse_checkpoint_arg(arg)
        name = name or default_name(path)
        if name in paths:
            raise UserError(
                f"--checkpoint {arg}: the name {name!r} is taken by {paths[name]}; "
                "name them yourself: --checkpoint NAME=PATH"
            )
        paths[name] = check_checkpoint_path(path)  # the wording translate and eval give
    return {name: ServedModel(name, path, load_checkpoint(path, device), device) for name, path in paths.items()}
