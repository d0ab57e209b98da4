"""How healthy each variant's attention is: energy scale, entropy and gradients, at init and during training.

For each variant (``nmt variants``) on ``--config``'s data this builds the model the trainer
would build and trains it with the trainer's loss; after each of the ``--steps`` update counts
(e.g. ``0,10,30,100``) it runs the same ``--batches`` teacher-forced training batches (the ones
after the last update) without updating and prints one JSON line with:

- ``energy_std``: standard deviation of the attention scores over the real source positions;
- ``entropy``: mean attention entropy divided by log(source length) (1 = uniform, 0 = one-hot);
- ``max_weight``: mean of the largest attention weight per query;
- ``context_rms``: root mean square of the context vectors;
- ``readout_saturation``: share of the readout's pre-activations (o_t = tanh(W_o [s; c; e]) or
  h~_t = tanh(W_c [c; h])) beyond 2.65 in size, where |tanh| > 0.99 and its gradient < 0.02;
- ``attention_weight_norm``: Frobenius norm of the attention's parameters (how far Adam moved them);
- ``grad_norm``: gradient norms of the loss per part (encoder, attention, decoder RNN, readout,
  output layer, embeddings) for one batch.

    python scripts/attention_health.py --config configs/multi30k_de_en_luong_general.yaml \\
        --variants bahdanau,luong_general --steps 0,100
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Iterator
from typing import Any, Optional

import torch

import _bench_common as common
from nmt import config as config_mod
from nmt.config.variants import VARIANTS, variant_overrides
from nmt.data.batching import collate
from nmt.data.pipeline import load_corpus
from nmt.model.build import build_model
from nmt.training.loss import batch_loss
from nmt.training.optim import apply_gradients, build_optimizer
from nmt.training.setup import make_sampler
from nmt.util import runtime, threads
from nmt.util.errors import UserError

SCRIPT = "attention_health"
CPU = torch.device("cpu")  # fp32 probes; the GPU path is not measured here
PARTS = {
    "encoder": "encoder.",
    "attention": "decoder.attention.",
    "decoder_rnn": "decoder.rnn.",
    "readout": "decoder.readout.",
    "output": "decoder.output.",
    "tgt_embedding": "decoder.embedding.",
}


class AttentionProbe:
    """Forward hook on the decoder's attention: collects score and weight statistics."""

    def __init__(self, attention: torch.nn.Module) -> None:
        self.attention, self.rows = attention, []
        self.handle = attention.register_forward_hook(self.hook)

    @torch.no_grad()
    def hook(self, module: torch.nn.Module, inputs: tuple, output: tuple) -> None:
        query, keys, _, mask = inputs
        context, weights = output  # (B, [T,] C), (B, [T,] S)
        if query.dim() == 2:
            query, context, weights = query.unsqueeze(1), context.unsqueeze(1), weights.unsqueeze(1)
        energy = module.energy(module.project_query(query), keys).float().mean(1)  # (B, T, S), mean over heads
        real = mask.unsqueeze(1).expand_as(weights) if mask is not None else torch.ones_like(weights, dtype=torch.bool)
        lengths = real.sum(-1).clamp(min=2).float()  # (B, T)
        p = weights.float().clamp_min(1e-12)
        entropy = -(p * p.log()).masked_fill(~real, 0).sum(-1) / lengths.log()
        centred = energy - (energy * real).sum(-1, keepdim=True) / real.sum(-1, keepdim=True).clamp(min=1)
        var = (centred.pow(2) * real).sum(-1) / (real.sum(-1) - 1).clamp(min=1)
        self.rows.append(
            {
                "energy_std": var.sqrt().mean().item(),
                "entropy": entropy.mean().item(),
                "max_weight": weights.float().max(-1).values.mean().item(),
                "context_rms": context.float().pow(2).mean().sqrt().item(),
            }
        )

    def summary(self) -> dict[str, float]:
        return {k: round(sum(r[k] for r in self.rows) / len(self.rows), 4) for k in self.rows[0]}


SATURATED = 2.65
"""|x| beyond which tanh(x) exceeds 0.99 in size (its derivative is below 0.02)."""


class ReadoutProbe:
    """Forward hook on the decoder's readout layer: the share of saturated tanh inputs."""

    def __init__(self, readout: torch.nn.Module) -> None:
        self.saturated, self.total = 0, 0
        self.handle = readout.register_forward_hook(self.hook)

    @torch.no_grad()
    def hook(self, module: torch.nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        self.saturated += int((output.abs() > SATURATED).sum())
        self.total += output.numel()

    def summary(self) -> dict[str, float]:
        return {"readout_saturation": round(self.saturated / max(self.total, 1), 4)}


def grad_norms(model: torch.nn.Module) -> dict[str, float]:
    """Gradient norm per part of the model (parameters named by PARTS prefixes)."""
    sums = {part: 0.0 for part in PARTS}
    for name, param in model.named_parameters():
        if param.grad is None:
            continue
        for part, prefix in PARTS.items():
            if name.startswith(prefix):
                sums[part] += param.grad.float().pow(2).sum().item()
    return {part: round(math.sqrt(total), 4) for part, total in sums.items()}


def measure(model: torch.nn.Module, split: Any, batches: list[list[int]], t: Any) -> dict[str, Any]:
    """Attention and readout statistics, mean loss and per-part gradient norms over ``batches`` (no update)."""
    rng = torch.random.get_rng_state()  # dropout draws here must not shift the training that follows
    probe, readout = AttentionProbe(model.decoder.attention), ReadoutProbe(model.decoder.readout)
    norms, losses = {}, []
    for i, idx in enumerate(batches):
        batch = collate(split, idx, t.max_len)
        model.zero_grad(set_to_none=True)
        loss = batch_loss(model, batch, label_smoothing=t.label_smoothing, teacher_forcing=1.0, device=CPU, amp=None)
        (loss / batch.n_tgt_tokens).backward()
        losses.append(loss.item() / batch.n_tgt_tokens)
        if i == 0:
            norms = grad_norms(model)
    model.zero_grad(set_to_none=True)
    torch.random.set_rng_state(rng)
    probe.handle.remove()
    readout.handle.remove()
    weight_norm = math.sqrt(sum(p.detach().float().pow(2).sum().item() for p in model.decoder.attention.parameters()))
    return {
        "loss": round(sum(losses) / len(losses), 4),
        **probe.summary(),
        **readout.summary(),
        "attention_weight_norm": round(weight_norm, 3),
        "grad_norm": norms,
    }


def health(args: argparse.Namespace, variant: str) -> Iterator[dict[str, Any]]:
    """One row per update count in ``args.steps``, from one training run of ``variant``."""
    cfg = config_mod.load(args.config, [*variant_overrides(variant), *args.set])
    t = cfg.train
    threads.configure(args.threads or t.threads)
    runtime.seed_everything(t.seed)
    corpus = load_corpus(cfg.data, splits=("train",), progress=False)
    split = corpus.splits["train"]
    sampler = make_sampler(split, t)  # the batches nmt train would draw
    last = max(args.steps)
    order = [b for epoch in range(1000) for b in sampler.batches(epoch)][: last + args.batches]
    held = order[last:]  # measured at every update count, never trained on before the last one
    model = build_model(cfg.model, corpus.src_tok.vocab_size, corpus.tgt_tok.vocab_size).train()
    optimizer = build_optimizer(t, model)
    scaler = runtime.grad_scaler(CPU, None)  # disabled: fp32
    done = 0
    for steps in sorted(args.steps):
        for idx in order[done:steps]:
            batch = collate(split, idx, t.max_len)
            loss = batch_loss(
                model, batch, label_smoothing=t.label_smoothing, teacher_forcing=1.0, device=CPU, amp=None
            )
            (loss / batch.n_tgt_tokens).backward()
            apply_gradients(model, optimizer, scaler, t.clip_grad_norm)
        done = steps
        yield {
            "bench": "attention_health",
            "variant": variant,
            "steps": steps,
            "batches": args.batches,
            **measure(model, split, held, t),
            "config": args.config,
            "set": args.set,
        }


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/multi30k_de_en_luong_general.yaml", help="Base config.")
    parser.add_argument(
        "--variants",
        default=",".join(v for v in VARIANTS if v != "none"),
        help="Comma-separated variants (default: every one with attention).",
    )
    parser.add_argument("--steps", default="0", help="Comma-separated update counts to measure after (default: 0).")
    parser.add_argument("--batches", type=int, default=4, help="Batches measured (default: 4).")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = follow the free cores).")
    parser.add_argument("--set", action="append", default=[], help="Override for every variant (repeatable).")
    args = parser.parse_args(argv)
    try:
        args.steps = [int(n) for n in args.steps.split(",")]
    except ValueError:
        parser.error(f"--steps: comma-separated integers expected, got {args.steps!r}")
    if min(args.steps) < 0 or args.batches < 1:
        parser.error("--steps must be >= 0 and --batches >= 1")
    logging.basicConfig(level=logging.WARNING)
    for variant in args.variants.split(","):
        try:
            for row in health(args, variant):
                print(json.dumps(row), flush=True)
        except UserError as exc:
            common.fail(SCRIPT, str(exc))


if __name__ == "__main__":
    sys.exit(main())
