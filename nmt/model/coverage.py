"""Coverage attention: the additive energy told how much each source word has been attended so far.

Tu et al. (2016) keep a coverage vector C_t, the sum of the weights every earlier step gave each
source position, and add it inside the additive energy; See et al. (2017) write the same energy as

    e_{t,i} = v^T tanh(W s_{t-1} + U h_i + b + w_c c_{t,i}),   c_{t,i} = sum_{t' < t} alpha_{t',i},

with one learned vector w_c (Tu et al.'s "linguistic" coverage without fertility).  A position
attended a lot already can so be scored down, against repeated and dropped words.  The coverage
vector is the energy's *state*: zero before the first step, plus the step's weights after each
(:meth:`CoverageEnergy.next_state`); nmt carries it in the decoder state, so beam search reorders
it with the hypotheses.  See et al.'s coverage loss, sum_i min(alpha_{t,i}, c_{t,i}) per target
token, is a training option (``train.coverage_loss``, :func:`nmt.training.loss.coverage_penalty`).

Shapes: B batch, h heads, T queries (1 per step), S keys, D size per head, A = h D.
"""

from __future__ import annotations

from torch import Tensor, nn

from nmt.model.energies import AdditiveEnergy, ScoreContext, additive_energy, register_attention, split_heads


@register_attention("coverage")
class CoverageEnergy(AdditiveEnergy):
    """v^T tanh(q + k + w_c c): Bahdanau's energy with the coverage c of each key (Tu et al. 2016)."""

    reads_context = stateful = True

    def __init__(self, query_size: int, key_size: int, heads: int = 1) -> None:
        super().__init__(query_size, key_size, heads)
        self.coverage = nn.Linear(1, query_size, bias=False)  # w_c, (A, 1)

    def forward(self, q: Tensor, k: Tensor, context: ScoreContext) -> Tensor:  # type: ignore[override]
        assert context.state is not None  # the attention gives a stateful energy its state
        covered = split_heads(self.coverage(context.state.unsqueeze(-1).to(k.dtype)), self.heads)  # (B, h, S, D)
        v = self.v if self.heads == 1 else self.v.view(self.heads, -1)
        return additive_energy(q, k + covered, v.to(q.dtype))

    def init_state(self, mask: Tensor) -> Tensor:
        """c_1 = 0: nothing attended before the first step; (B, S)."""
        return mask.new_zeros(mask.shape, dtype=self.v.dtype)

    def next_state(self, state: Tensor, weights: Tensor, context: ScoreContext) -> Tensor:
        """c_{t+1} = c_t + alpha_t (padded keys have weight 0, so their coverage stays 0)."""
        return state + weights.to(state.dtype)
