"""The CPU dropout of the Transformer: the distribution, scaling, gradient and reproducibility of nn.Dropout."""

import pytest
import torch

from nmt.model.dropout import Dropout, dropout


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drops_a_fraction_p_and_scales_the_rest_to_keep_the_mean(p: float) -> None:
    torch.manual_seed(0)
    x = torch.rand(1000, 1000) + 0.5  # no zeros of its own
    out = dropout(x, p, training=True)
    dropped = out == 0
    assert abs(dropped.double().mean().item() - p) < 0.003  # 1e6 draws: sd about 0.0005
    torch.testing.assert_close(out[~dropped], x[~dropped] / (1 - p))
    ones = dropout(torch.ones(1000, 1000), p, training=True)
    assert abs(ones.double().mean().item() - 1.0) < 0.01  # E[out] = x


def test_gradient_flows_through_the_kept_elements_only() -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    out = dropout(x, 0.4, training=True)
    out.sum().backward()
    assert x.grad is not None
    kept = out != 0
    torch.testing.assert_close(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.6))
    assert (x.grad[~kept] == 0).all()


def test_evaluation_and_p_zero_are_the_identity_and_p_one_zeroes_all() -> None:
    x = torch.randn(5, 7)
    module = Dropout(0.3).eval()
    assert module(x) is x and dropout(x, 0.0, training=True) is x
    assert (dropout(x, 1.0, training=True) == 0).all()


def test_a_seeded_draw_repeats_and_the_next_differs() -> None:
    x = torch.ones(200, 50)
    torch.manual_seed(7)
    first, second = dropout(x, 0.3, True), dropout(x, 0.3, True)
    torch.manual_seed(7)
    assert torch.equal(dropout(x, 0.3, True), first)
    assert not torch.equal(first, second)


def test_draws_from_the_global_generator_so_checkpointed_rng_state_resumes_it() -> None:
    x = torch.ones(100, 10)
    torch.manual_seed(3)
    dropout(x, 0.2, True)
    state = torch.get_rng_state()
    after = dropout(x, 0.2, True)
    torch.set_rng_state(state)
    assert torch.equal(dropout(x, 0.2, True), after)


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_a_probability_outside_0_1_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(p)
    with pytest.raises(ValueError, match="dropout probability"):
        dropout(torch.ones(3), p, training=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_other_dtypes_and_a_transposed_input_keep_their_dtype_shape_and_scaling(dtype: torch.dtype) -> None:
    torch.manual_seed(2)
    x = (torch.rand(300, 200) + 0.5).to(dtype).t()  # (200, 300), not contiguous
    out = dropout(x, 0.25, training=True)
    assert out.dtype == dtype and out.shape == x.shape
    kept = out != 0
    assert abs((~kept).double().mean().item() - 0.25) < 0.01
    torch.testing.assert_close(out[kept], (x[kept].double() / 0.75).to(dtype))
