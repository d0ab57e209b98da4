"""The normalize step of attention: nmt's softmax, sparsemax and 1.5-entmax, and a user's.

Properties: each maps scores onto the simplex with masked keys at exactly 0; sparsemax is the
Euclidean projection onto the simplex and 1.5-entmax the maximizer of p.e + H_1.5(p) (checked
against the entmax package of the method's authors, and against their definitions); their
gradients are the closed forms; an attention or a config names one like an energy; a user's is
checked like an energy, and refused in one line naming the property it breaks.
"""

from __future__ import annotations

from typing import Optional

import pytest
import torch
from torch import Tensor

import nmt
from nmt import config as C
from nmt.config.normalizations import NORMALIZATION_NAMES, NORMALIZATIONS
from nmt.model.attention import Attention
from nmt.model.normalize import KERNEL_WIDTH, entmax15, epanechnikov, masked_softmax, sparsemax
from nmt.util.registry import PluginError

SPARSE = {"sparsemax": sparsemax, "entmax15": entmax15}


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NORMALIZATIONS, "_entries", dict(NORMALIZATIONS._entries))


def scores(*shape: int, seed: int = 0, scale: float = 3.0) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale


def bisection(z: Tensor, p_of: object, iterations: int = 200) -> Tensor:
    """The weights p(tau) summing to 1, tau found by bisection (each function is decreasing in tau)."""
    low, high = z.max(-1, keepdim=True).values - 2, z.max(-1, keepdim=True).values
    for _ in range(iterations):
        tau = (low + high) / 2
        total = p_of(z, tau).sum(-1, keepdim=True)  # type: ignore[operator]
        low, high = torch.where(total > 1, tau, low), torch.where(total > 1, high, tau)
    return p_of(z, (low + high) / 2)  # type: ignore[operator]


def test_sparsemax_and_entmax_match_their_definitions_by_bisection() -> None:
    z = scores(4, 2, 5, 9)
    want_sparse = bisection(z, lambda z, tau: (z - tau).clamp(min=0))
    want_entmax = bisection(z / 2, lambda x, tau: (x - tau).clamp(min=0) ** 2)
    assert torch.allclose(sparsemax(z, None).double(), want_sparse, atol=1e-5)
    assert torch.allclose(entmax15(z, None).double(), want_entmax, atol=1e-5)


@pytest.mark.parametrize("name", SPARSE)
def test_the_sparse_normalizations_match_the_entmax_package_in_value_and_gradient(name: str) -> None:
    entmax = pytest.importorskip("entmax")
    reference = {"sparsemax": entmax.sparsemax, "entmax15": entmax.entmax15}[name]
    z = scores(3, 2, 6, 11).float().requires_grad_(True)
    upstream = torch.randn_like(z)
    (SPARSE[name](z, None) * upstream).sum().backward()
    ours = z.grad.clone()
    z.grad = None
    (reference(z, dim=-1) * upstream).sum().backward()
    assert torch.allclose(SPARSE[name](z, None), reference(z, dim=-1), atol=1e-5)
    assert torch.allclose(ours, z.grad, atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", *SPARSE])
def test_weights_are_on_the_simplex_with_masked_keys_at_zero_and_sparse_ones_sparse(name: str) -> None:
    normalize = masked_softmax if name == "softmax" else SPARSE[name]
    z = scores(3, 2, 5, 8)
    mask = torch.tensor([[True] * 8, [True] * 5 + [False] * 3, [True] + [False] * 7])
    p = normalize(z, mask)
    assert p.dtype == torch.float32 and (p >= 0).all()
    assert torch.allclose(p.sum(-1), torch.ones(3, 2, 5), atol=1e-6)
    assert p[1, ..., 5:].abs().sum() == 0 and torch.allclose(p[2, ..., 0], torch.ones(2, 5))
    zeros = (p[0] == 0).float().mean()
    assert zeros == 0 if name == "softmax" else zeros > 0.3  # scores of spread 3: most keys cut


@pytest.mark.parametrize("name", ["softmax", *SPARSE])
def test_a_row_with_no_key_is_uniform_and_large_scores_stay_finite(name: str) -> None:
    normalize = masked_softmax if name == "softmax" else SPARSE[name]
    p = normalize(scores(2, 1, 3, 4), torch.zeros(2, 4, dtype=torch.bool))
    assert torch.allclose(p, torch.full_like(p, 0.25))
    big = normalize(scores(2, 1, 3, 4, scale=1e6), None)
    assert torch.isfinite(big).all() and torch.allclose(big.sum(-1), torch.ones(2, 1, 3))


def test_the_epanechnikov_kernel_is_lecture_003s_normalization_of_a_kernel_by_its_sum() -> None:
    z = scores(3, 2, 5, 8)
    mask = torch.tensor([[True] * 8, [True] * 5 + [False] * 3, [True] + [False] * 7])
    p = epanechnikov(z, mask)
    allowed = mask.view(3, 1, 1, 8)
    best = z.masked_fill(~allowed, float("-inf")).amax(-1, keepdim=True)
    kernel = (1 - ((best - z) / KERNEL_WIDTH) ** 2).clamp(min=0) * allowed  # by hand, in float64
    assert torch.allclose(p.double(), kernel / kernel.sum(-1, keepdim=True), atol=1e-6)
    assert torch.all(p[(best - z).expand_as(p) >= KERNEL_WIDTH] == 0) and p[1, ..., 5:].abs().sum() == 0
    z = z.float().requires_grad_(True)
    epanechnikov(z, mask).pow(2).sum().backward()
    assert torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0


def test_entmax_is_between_softmax_and_sparsemax_in_how_many_keys_it_keeps() -> None:
    z = scores(50, 1, 1, 20)
    kept = {name: (f(z, None) > 0).sum().item() for name, f in [("softmax", masked_softmax), *SPARSE.items()]}
    assert kept["sparsemax"] < kept["entmax15"] < kept["softmax"]


@pytest.mark.parametrize("name", NORMALIZATION_NAMES)
def test_nmts_own_normalizations_pass_the_checks(name: str) -> None:
    assert len(nmt.check_normalization(name)) == 6


def test_an_attention_normalizes_with_the_normalization_its_config_names() -> None:
    torch.manual_seed(0)
    att = Attention(8, 8, energy="dot", normalize="sparsemax")
    query, keys = torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    context, weights = att(query, keys, keys, None)
    assert torch.allclose(weights, sparsemax(att.energy(query, keys), None).mean(1))
    assert context.shape == (2, 3, 8) and (weights == 0).any()
    assert C.load(None, ["model.attention.normalize=entmax15"]).model.attention.normalize == "entmax15"
    transformer = C.load(None, ["model.arch=transformer", "model.transformer.normalize=sparsemax"]).model
    assert transformer.transformer.normalize == "sparsemax"
    with pytest.raises(C.ConfigError, match=r"^model\.attention\.normalize: expected one of 'softmax'"):
        C.load(None, ["model.attention.normalize=softermax"])


def halved_softmax(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    return masked_softmax(scores / 2, mask)


def no_mask(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    return torch.softmax(scores, -1)


def unnormalized(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    return masked_softmax(scores, mask) * 2


def test_a_users_normalization_registers_trains_from_a_config_and_is_checked() -> None:
    nmt.register_normalization("halved", halved_softmax)
    assert len(nmt.check_normalization("halved")) == 6
    assert C.load(None, ["model.attention.normalize=halved"]).model.attention.normalize == "halved"


@pytest.mark.parametrize(
    "normalize,words",
    [(no_mask, "a masked key gets weight"), (unnormalized, "does not sum to 1")],
)
def test_check_normalization_names_the_property_a_broken_one_fails(normalize: object, words: str) -> None:
    with pytest.raises(PluginError, match=words):
        nmt.check_normalization(normalize)  # type: ignore[arg-type]
    assert NORMALIZATIONS.name_of(normalize) is None  # no longer offered


def test_what_is_not_a_normalization_is_refused_at_registration() -> None:
    for target in (42, torch.nn.Softmax, lambda scores: scores):
        with pytest.raises(PluginError, match="normalization 'mine'"):
            nmt.register_normalization("mine", target)
    with pytest.raises(PluginError, match="nmt's own"):
        nmt.register_normalization("sparsemax", halved_softmax)
