"""Does every attention compute the same thing on a CUDA GPU as on the CPU?  One JSON line per model.

For each model of the design space (every attention preset, coverage and local attention
with their state across steps among them; each normalization; self-attention; an LSTM; the
Transformer with its own and with a registered energy and normalization), a tiny model is built
once, seeded, and copied to the GPU.  On one padded batch it then compares, CPU against
CUDA in fp32 (TF32 off, so both sides do the same arithmetic):

- ``logits``: the largest absolute difference of the teacher-forced logits;
- ``grads``: the largest difference of any parameter's gradient of the cross-entropy, relative
  to that parameter's largest gradient on the CPU;
- ``greedy`` and ``beam``: whether greedy search and beam search (beam 4, two hypotheses) choose
  the same tokens, and the largest difference of the beam scores;
- ``bf16``: the largest difference of the logits under bf16 autocast (what ``train.amp: auto``
  trains with) from the fp32 logits, and whether its loss and gradients are finite.

A line's ``ok`` holds when logits agree to ``--atol``, gradients to ``--rtol``, both searches choose
the same tokens and bf16 stays finite; the script exits 1 when a line is not ok.  On a machine
without CUDA it says so in one line and exits 2.

    python scripts/cuda_parity.py > parity.jsonl
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from _bench_common import emit, environment, fail, one_line_parser
from nmt.config import from_dict
from nmt.config.attention_space import ATTENTION_TYPES
from nmt.decode.beam import beam_search
from nmt.decode.greedy import greedy
from nmt.model.build import TranslationModel, build_model

V_SRC, V_TGT, BOS = 23, 29, 2
SCRIPT = "cuda_parity.py"
RNN = {"emb_size": 8, "hidden_size": 12, "enc_hidden_size": "half", "dropout": 0.0, "emb_dropout": 0.0}
TRANSFORMER = {"d_model": 16, "heads": 2, "ff_size": 32, "enc_layers": 2, "dec_layers": 2}


def cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, model section) for every model checked."""
    for preset in ATTENTION_TYPES:  # every preset, so a new one is checked too
        yield preset, {**RNN, "attention": {"type": preset}}
    for norm in ("sparsemax", "entmax15", "epanechnikov"):
        yield f"bahdanau+{norm}", {**RNN, "attention": {"type": "bahdanau", "normalize": norm}}
    yield "luong_general+lstm", {**RNN, "cell": "lstm", "attention": {"type": "luong_general"}}
    yield (
        "bahdanau+self_attention",
        {
            **RNN,
            "attention": {"type": "bahdanau"},
            "enc_self_attention": {"layers": 1},
            "dec_self_attention": {"enabled": True},
        },
    )
    base = {"arch": "transformer", "dropout": 0.0, "emb_dropout": 0.0}
    yield "transformer", {**base, "transformer": {**TRANSFORMER, "attention_dropout": 0.0}}
    for name, extra in (("mlp", {"energy": "mlp"}), ("sparsemax", {"normalize": "sparsemax"})):
        yield f"transformer+{name}", {**base, "transformer": {**TRANSFORMER, "attention_dropout": 0.0, **extra}}


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Source ids (4, 9) padded after lengths 9, 5, 2, 7; their lengths; target input and output (4, 6)."""
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([9, 5, 2, 7])
    src = torch.randint(4, V_SRC, (4, 9), generator=g)
    src[torch.arange(9) >= lengths.unsqueeze(1)] = 0
    tgt = torch.randint(4, V_TGT, (4, 7), generator=g)
    tgt[:, 0] = BOS
    return src, lengths, tgt[:, :-1], tgt[:, 1:]


def run(model: TranslationModel, data: tuple[torch.Tensor, ...], bf16: bool = False) -> dict[str, Any]:
    """Logits, gradients (name -> tensor), greedy tokens, beam tokens and scores of ``model`` on ``data``."""
    src, lengths, tgt_in, tgt_out = data
    model.train()  # cuDNN's RNN backward needs training mode; every dropout of the cases is 0
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        logits, _ = model(src, lengths, tgt_in)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
    model.eval()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        found = greedy(model, src, lengths, max_len_b=8)
        beamed = beam_search(model, src, lengths, beam=4, alpha=1.0, max_len_b=8, n_best=2)
    return {
        "logits": logits.detach().float().cpu(),
        "loss": float(loss.detach()),
        "grads": grads,
        "greedy": found.tokens.cpu(),
        "beam": beamed.tokens.cpu(),
        "beam_scores": beamed.scores.float().cpu(),
    }


def compare(name: str, section: dict[str, Any], atol: float, rtol: float) -> dict[str, Any]:
    """One line: CPU against CUDA fp32, and bf16 against fp32, for the model ``section`` describes."""
    cfg = from_dict({"model": section})
    torch.manual_seed(0)
    cpu_model = build_model(cfg.model, V_SRC, V_TGT)
    gpu_model = copy.deepcopy(cpu_model).cuda()
    data = batch()
    on_cpu = run(cpu_model, data)
    on_gpu = run(gpu_model, tuple(t.cuda() for t in data))
    in_bf16 = run(gpu_model, tuple(t.cuda() for t in data), bf16=True)
    shared = on_cpu["grads"].keys() & on_gpu["grads"].keys()  # a gradient on one side only: same_grad_params
    grad_gap = max(
        (
            float(
                (on_cpu["grads"][n] - on_gpu["grads"][n]).abs().max() / on_cpu["grads"][n].abs().max().clamp_min(1e-12)
            )
            for n in shared
        ),
        default=0.0,
    )
    line: dict[str, Any] = {
        "model": name,
        "params": sum(p.numel() for p in cpu_model.parameters()),
        "logits_max_abs_diff": float((on_cpu["logits"] - on_gpu["logits"]).abs().max()),
        "grads_max_rel_diff": grad_gap,
        "same_grad_params": sorted(on_cpu["grads"]) == sorted(on_gpu["grads"]),
        "greedy_same_tokens": torch.equal(on_cpu["greedy"], on_gpu["greedy"]),
        "beam_same_tokens": torch.equal(on_cpu["beam"], on_gpu["beam"]),
        "beam_scores_max_abs_diff": float((on_cpu["beam_scores"] - on_gpu["beam_scores"]).abs().max()),
        "bf16_logits_max_abs_diff": float((in_bf16["logits"] - on_gpu["logits"]).abs().max()),
        "bf16_finite": bool(
            torch.isfinite(torch.tensor(in_bf16["loss"]))
            and all(torch.isfinite(g).all() for g in in_bf16["grads"].values())
        ),
    }
    line["ok"] = bool(
        line["logits_max_abs_diff"] <= atol
        and line["grads_max_rel_diff"] <= rtol
        and line["same_grad_params"]
        and line["greedy_same_tokens"]
        and line["beam_same_tokens"]
        and line["bf16_finite"]
    )
    return line


def main(argv: list[str] | None = None) -> int:
    parser: argparse.ArgumentParser = one_line_parser(SCRIPT, __doc__.split("\n\n")[0])
    parser.add_argument("--atol", type=float, default=1e-4, help="Largest logit difference allowed (default: 1e-4).")
    parser.add_argument(
        "--rtol", type=float, default=1e-3, help="Largest relative gradient difference allowed (default: 1e-3)."
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        fail(SCRIPT, "no CUDA device here: this script compares the CPU with a GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    emit({"environment": environment(torch.device("cuda"), keep_memory=True)})
    checked = failed = 0
    for name, section in cases():
        line = compare(name, section, args.atol, args.rtol)
        checked, failed = checked + 1, failed + (not line["ok"])
        emit(line)
    print(f"{SCRIPT}: {failed} of {checked} models differ", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
