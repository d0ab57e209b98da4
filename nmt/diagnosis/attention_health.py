"""How healthy each variant's attention is: energy scale, entropy and gradients, at init and during training.

For each variant (``nmt variants``) on a config's data this builds the model the trainer would
build and trains it with the trainer's loss and batches; after each of the requested update
counts (e.g. 0, 10, 30, 100) it runs the same few teacher-forced training batches (the ones after
the last update) without updating, and reports (:mod:`nmt.diagnosis.probes`):

- ``energy_std``: standard deviation of the attention scores over the real source positions;
- ``entropy``: mean attention entropy divided by log(source length) (1 = uniform, 0 = one-hot);
- ``max_weight``: mean of the largest attention weight per query;
- ``context_rms``: root mean square of the context vectors;
- ``readout_saturation``: share of the readout's pre-activations (o_t = tanh(W_o [s; c; e]) or
  h~_t = tanh(W_c [c; h])) beyond 2.65 in size, where |tanh| > 0.99 and its gradient < 0.02;
- ``attention_weight_norm``: Frobenius norm of the attention's parameters (how far Adam moved them);
- ``grad_norm``: gradient norms of the loss per part (encoder, attention, decoder RNN, readout,
  output layer, embeddings) for one batch.

Measured on the CPU in fp32; writes no file.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

import torch

from nmt import config as config_mod
from nmt.config import Config, TrainConfig
from nmt.config.variants import VARIANTS, variant_overrides
from nmt.data.batching import collate
from nmt.data.dataset import EncodedSplit
from nmt.data.pipeline import load_corpus
from nmt.diagnosis.probes import AttentionProbe, ReadoutProbe, grad_norms
from nmt.diagnosis.results import AttentionHealth
from nmt.model.build import build_model
from nmt.training.loss import batch_loss
from nmt.training.optim import apply_gradients, build_optimizer
from nmt.training.setup import make_sampler, training_split
from nmt.training.user_code import check_user_energies, naming_user_code
from nmt.util import runtime, threads
from nmt.util.errors import UserError

CPU = torch.device("cpu")  # fp32 probes; the GPU path is not measured here
DEFAULT_VARIANTS = tuple(name for name in VARIANTS if name != "none")
"""Every variant with attention."""
MAX_STEPS, EPOCHS = 10**9, 1000
"""The most updates a count of ``--steps`` may ask for (as ``train.max_steps``), and the epochs drawn for them."""


def measure(model: Any, split: EncodedSplit, batches: list[list[int]], t: TrainConfig) -> dict[str, Any]:
    """Attention and readout statistics, mean loss and per-part gradient norms over ``batches`` (no update)."""
    rng = torch.random.get_rng_state()  # dropout draws here must not shift the training that follows
    probe, readout = AttentionProbe(model.decoder.attention), ReadoutProbe(model.decoder.readout)
    norms: dict[str, float] = {}
    losses = []
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


def health(
    cfg: Config, variant: str, steps: Sequence[int], batches: int, thread_count: int
) -> Iterator[dict[str, Any]]:
    """One row per update count in ``steps``, from one training run of ``variant`` (its config ``cfg``)."""
    t = cfg.train
    threads.configure(thread_count or t.threads)
    runtime.seed_everything(t.seed)
    corpus = load_corpus(cfg.data, splits=("train",), progress=False)
    split = training_split(corpus, cfg)
    sampler = make_sampler(split, t)  # the batches nmt train would draw
    last = max(steps)
    order = [b for epoch in range(EPOCHS) for b in sampler.batches(epoch)][: last + batches]
    held = order[last:]  # measured at every update count, never trained on before the last one
    if len(held) < batches:
        raise UserError(
            f"variant {variant}: {last:,} updates and {batches} batches after them take more than "
            f"{EPOCHS} epochs of its training data; ask for fewer updates"
        )
    model = build_model(cfg.model, corpus.src_tok.vocab_size, corpus.tgt_tok.vocab_size).train()
    optimizer = build_optimizer(t, model)
    scaler = runtime.grad_scaler(CPU, None)  # disabled: fp32
    done = 0
    for count in sorted(steps):
        for idx in order[done:count]:
            batch = collate(split, idx, t.max_len)
            loss = batch_loss(
                model, batch, label_smoothing=t.label_smoothing, teacher_forcing=1.0, device=CPU, amp=None
            )
            (loss / batch.n_tgt_tokens).backward()
            apply_gradients(model, optimizer, scaler, t.clip_grad_norm)
        done = count
        yield {"variant": variant, "steps": count, "batches": batches, **measure(model, split, held, t)}


def variant_config(config: Optional[Path], variant: str, overrides: Sequence[str]) -> Config:
    """The config ``variant`` trains with; a variant without attention, or a Transformer, is refused
    (the probes hook the RNN decoder's one attention and its readout)."""
    cfg = config_mod.load(config, [*variant_overrides(variant), *overrides], import_code=True)  # it trains
    if cfg.model.arch != "rnn":
        raise UserError(
            f"variant {variant}: model.arch={cfg.model.arch}; the attention probes hook an RNN decoder's "
            "attention and readout (model.arch=rnn)"
        )
    if cfg.model.attention.type == "none":
        raise UserError(f"variant {variant}: model.attention.type=none has no attention to measure")
    return cfg


def run_attention_health(
    config: Optional[Path],
    *,
    variants: Sequence[str] = DEFAULT_VARIANTS,
    steps: Sequence[int] = (0,),
    batches: int = 4,
    thread_count: int = 0,
    overrides: Sequence[str] = (),
    names: Optional[dict[str, str]] = None,
) -> Iterator[AttentionHealth]:
    """``nmt diagnose attention`` and ``nmt.attention_health``: every variant's config (and the thread
    count) is checked now, before this returns; then one :class:`AttentionHealth` per variant and
    update count, each as it is measured (a user's attention is checked first, as ``nmt train`` checks it,
    and what it raises later is one PluginError naming it).  ``names``: how messages name the options (default the
    command's: ``--steps``, ``--batches``, ``--threads``, ``--variants``)."""
    name = {"steps": "--steps", "batches": "--batches", "threads": "--threads", "variants": "--variants"}
    name.update(names or {})
    if not variants:
        raise UserError(f"{name['variants']}: give at least one variant (nmt variants lists them)")
    twice = next((v for i, v in enumerate(variants) if v in variants[:i]), None)
    if twice is not None:
        raise UserError(f"{name['variants']}: {twice} is given twice; give each variant once")
    if not steps or min(steps) < 0:
        raise UserError(f"{name['steps']}: give update counts of 0 or more, e.g. 0,100")
    if max(steps) > MAX_STEPS:
        raise UserError(f"{name['steps']}: {max(steps):,} updates; give at most {MAX_STEPS:,}, as train.max_steps")
    if batches < 1:
        raise UserError(f"{name['batches']}={batches}: give 1 or more batches to measure")
    threads.check_count(thread_count, name["threads"])
    configs = {variant: variant_config(config, variant, overrides) for variant in variants}
    for cfg in configs.values():
        check_user_energies(cfg)  # a user's attention: the checks nmt train runs, before anything is measured
    shown = None if config is None else str(config)

    def rows() -> Iterator[AttentionHealth]:
        for variant, cfg in configs.items():
            with naming_user_code(cfg, f"measuring variant {variant}"):
                for row in health(cfg, variant, steps, batches, thread_count):
                    yield AttentionHealth(**row, config=shown, overrides=list(overrides))

    return rows()
