"""The attentional decoder: ``step()`` for one token, ``forward()`` for a whole target.

Two styles (``style``):

- **bahdanau** (Bahdanau et al. 2015): attend with the *previous* state s_{t-1}, feed the
  context into the recurrence and into the output layer:
      c_t = attn(s_{t-1}),  s_t = RNN([e_t; c_t], s_{t-1}),  o_t = tanh(W_o [s_t; c_t; e_t])
- **luong** (Luong et al. 2015): step the recurrence first, attend with the new state:
      h_t = RNN(e_t [; h~_{t-1}], h_{t-1}),  c_t = attn(h_t),  h~_t = tanh(W_c [c_t; h_t])
  With ``input_feeding`` the previous attentional vector h~_{t-1} (before dropout) joins
  the input, so the model knows what it attended to before.

Both: logits = W_out dropout(o_t), o_t of size H; with ``tie_embeddings`` W_out is the
target embedding matrix (Press & Wolf 2017; needs E == H).

Decoder self-attention (optional, :mod:`nmt.model.self_attention`) refines the query state
q (s_{t-1} for bahdanau, h_t for luong) over the query states so far, causally:
    r = q + alpha SA(LayerNorm(q); q_1..q_t)   (the default block: pre-norm, ReZero gate),
and r takes q's place: it queries the encoder, and in luong style it also enters the
output layer (h~_t = tanh(W_c [c_t; r_t])).  Past keys and values are cached in the
:class:`DecoderState` (``cache_self_attention = False`` re-projects the whole prefix at
every step instead; the results agree).

Speed.  Whatever does not depend on the previous step is computed once for all T:
embeddings and their share of the recurrent input, W_e e_t + b (the layer-0 input weight
is split into its embedding and context/feed columns); the attention keys (by the caller);
and, when nothing feeds back, the output layer, run once over (B*T, H) after the loop.
When no attention result is fed back (Luong without input feeding) and every input is the
reference, :meth:`forward` runs the recurrence as one nn.GRU/nn.LSTM call and attention as
one batched product over (B, T, S) (the *fast path*).  Every other loop over time (training,
scheduled sampling, search) carries a :class:`~nmt.model.state.StepState` through one step
function, ``_advance``, which :meth:`Decoder.compile_step` can hand to ``torch.compile``.

Shapes: B batch, S source length, T target length, E embedding size, H hidden size,
K context (encoder output) size, V target vocabulary, L layers, G gates x H.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.model.attention import Attention
from nmt.model.bridge import StartState
from nmt.model.cells import LayerWeights, layer_weights, stack_step
from nmt.model.combine import combine_class
from nmt.model.decoder_loop import Loop, sampled
from nmt.model.encoder import rnn_class
from nmt.model.self_attention import SelfAttentionBlock, causal_mask
from nmt.model.state import DecoderState, EncoderOutput, FinalState, SelfAttentionMemory, StepState
from nmt.util.registry import PluginError

STYLES = ("bahdanau", "luong")


class StepWeights(NamedTuple):
    """The recurrent weights as a step uses them, taken apart once per call, not once per step."""

    w_e: Tensor  # (G, E) layer-0 input weight, embedding columns
    b_e: Tensor  # (G,) layer-0 input bias b_ih, added with W_e e_t
    w_x: Tensor  # (G, K) context columns (bahdanau), (G, H) feed columns (input feeding), else (G, 0)
    layers: list[LayerWeights]  # every layer's weights, layer 0's whole input weight included


class StepOutput(NamedTuple):
    """What one step computes besides the new state: the output layer's inputs and the attention."""

    query: Tensor  # (B, H) the state the output layer reads: s_t (bahdanau), h_t or r_t (luong)
    context: Tensor  # (B, K) context vector c_t
    weights: Tensor  # (B, S) attention weights


class Decoder(nn.Module):
    """RNN decoder over target ids, attending over an :class:`EncoderOutput`."""

    def __init__(
        self,
        vocab_size: int,
        emb_size: int,
        hidden_size: int,
        attention: Attention,
        *,
        enc_state_size: int,
        enc_directions: int = 1,
        num_layers: int = 1,
        cell: str = "gru",
        style: str = "bahdanau",
        input_feeding: bool = True,
        init_state: str = "bridge",
        dropout: float = 0.0,
        emb_dropout: float = 0.0,
        tie_embeddings: bool = False,
        pad_id: int = 0,
        self_attention: Optional[SelfAttentionBlock] = None,
        combine: str = "tanh",
    ) -> None:
        super().__init__()
        if style not in STYLES:
            raise ValueError(f"unknown decoder style {style!r}; valid options: {', '.join(STYLES)}")
        if attention.query_size != hidden_size:
            raise ValueError(f"attention query size {attention.query_size} != decoder hidden size {hidden_size}")
        if tie_embeddings and emb_size != hidden_size:
            raise ValueError(f"tie_embeddings needs emb_size == hidden_size (got {emb_size} and {hidden_size})")
        K = attention.context_size
        self.style = style
        self.input_feeding = style == "luong" and input_feeding
        self.emb_size = emb_size
        self.hidden_size = hidden_size
        self.lstm = cell == "lstm"
        self.dropout_p = dropout
        # Layer-0 input: [e_t; c_t] (bahdanau), [e_t; h~_{t-1}] (luong, input feeding) or e_t.
        extra = K if style == "bahdanau" else (hidden_size if self.input_feeding else 0)
        self.embedding = nn.Embedding(vocab_size, emb_size, padding_idx=pad_id)
        self.emb_dropout = nn.Dropout(emb_dropout)
        self.rnn = rnn_class(cell)(
            emb_size + extra, hidden_size, num_layers, batch_first=True, dropout=dropout if num_layers > 1 else 0.0
        )
        self.attention = attention
        if self_attention is not None and self_attention.attention.query_size != hidden_size:
            raise ValueError(
                f"decoder self-attention size {self_attention.attention.query_size} "
                f"!= decoder hidden size {hidden_size}"
            )
        self.self_attention = self_attention
        self.cache_self_attention = True  # False: re-project the whole prefix each step (slow; for tests)
        self.start = StartState(init_state, enc_state_size, enc_directions, hidden_size, num_layers, self.lstm)
        # The combine step over [s_t; c_t; e_t] (bahdanau) or [c_t; h_t] (luong): tanh(W x + b) by default.
        self.readout = combine_class(combine)(hidden_size + K + (emb_size if style == "bahdanau" else 0), hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_size, vocab_size)
        if tie_embeddings:
            self.output.weight = self.embedding.weight

    # ------------------------------------------------------------ pieces

    @property
    def can_run_fast(self) -> bool:
        """Whether nothing computed by attention feeds back into the recurrence (nor into its own state)."""
        return self.style == "luong" and not self.input_feeding and not self.attention.stateful

    def init_state(self, final: FinalState, mask: Tensor) -> DecoderState:
        """The start state from the encoder final state (see :mod:`nmt.model.bridge`) and the source mask (B, S)."""
        hidden, cell = self.start(final)
        feed = hidden.new_zeros(hidden.shape[1:]) if self.input_feeding else None  # h~_0 = 0
        past = None
        if self.self_attention is not None:
            past = self.self_attention.empty_memory(hidden[-1], self.cache_self_attention)
        return DecoderState(hidden=hidden, cell=cell, feed=feed, past=past, attention=self.attention.init_state(mask))

    def _split_weights(self) -> StepWeights:
        """Layer-0 input weight split into embedding columns W_e (with b_ih) and the rest W_x."""
        layers = layer_weights(self.rnn)
        w_ih0 = layers[0].w_ih
        return StepWeights(w_ih0[:, : self.emb_size], layers[0].b_ih, w_ih0[:, self.emb_size :], layers)

    def _read(self, s: Tensor, context: Tensor, emb: Optional[Tensor]) -> Tensor:
        """The combine step: o = combine([s; c; e]) (bahdanau) or h~ = combine([c; h]) (luong, ``emb``
        unused); with the default ``tanh``, tanh(W_o [s; c; e]) and tanh(W_c [c; h]).  (..., H)."""
        if self.style != "bahdanau":
            return self.readout(torch.cat((context, s), dim=-1))
        if emb is None:
            raise ValueError("the bahdanau readout reads the embedding e_t too")
        return self.readout(torch.cat((s, context, emb), dim=-1))

    def _refine(
        self,
        query: Tensor,
        past: Optional[SelfAttentionMemory],
    ) -> tuple[Tensor, Optional[SelfAttentionMemory]]:
        """The query state (B, H) after decoder self-attention over the past ones (identity without)."""
        if self.self_attention is None or past is None:
            return query, past
        return self.self_attention.step(query, past)

    def _advance(
        self,
        x_gates: Tensor,
        state: StepState,
        enc: EncoderOutput,
        w: StepWeights,
    ) -> tuple[StepState, StepOutput]:
        """The one decoder step, given the embedding's input contribution x_gates = W_e e_t + b (B, G).

        Every loop over time (step-by-step training, greedy and beam search; not the fast path) runs through here, and
        :meth:`compile_step` compiles exactly this.  Under input feeding the new state's
        ``feed`` is h~_t, computed here because the next step needs it.
        """
        hs, cs, feed, past, attn = state
        if self.style == "bahdanau":
            query, past = self._refine(hs[-1], past)  # from s_{t-1}
            context, weights = self.attention(query, enc.keys, enc.values, enc.mask, state=attn)
            attn = self.attention.next_state(attn, weights, enc.keys, enc.mask)
            x_gates = torch.addmm(x_gates, context, w.w_x.t())  # + W_c c_t
            hs, cs = stack_step(x_gates, hs, cs, w.layers, self.dropout_p, self.training)
            return StepState(hs, cs, None, past, attn), StepOutput(hs[-1], context, weights)
        if feed is not None:
            x_gates = torch.addmm(x_gates, feed, w.w_x.t())  # + W_f h~_{t-1}
        hs, cs = stack_step(x_gates, hs, cs, w.layers, self.dropout_p, self.training)
        query, past = self._refine(hs[-1], past)  # from h_t
        context, weights = self.attention(query, enc.keys, enc.values, enc.mask, state=attn)
        attn = self.attention.next_state(attn, weights, enc.keys, enc.mask)
        feed = self._read(query, context, None) if self.input_feeding else None  # h~_t
        return StepState(hs, cs, feed, past, attn), StepOutput(query, context, weights)

    def _token_step(
        self, tokens: Tensor, state: StepState, enc: EncoderOutput, w: StepWeights
    ) -> tuple[Tensor, StepState, Tensor]:
        """Tokens (B,) -> logits (B, V), the new state, attention weights (B, S)."""
        emb = self.emb_dropout(self.embedding(tokens))  # (B, E)
        state, out = self._advance(F.linear(emb, w.w_e, w.b_e), state, enc, w)
        # input feeding: h~_t came with the state
        read = state.feed if state.feed is not None else self._read(out.query, out.context, emb)  # (B, H)
        return self.output(self.dropout(read)), state, out.weights

    # ------------------------------------------------------------ public

    def compile_step(self, mode: str) -> None:
        """Run every decoder step (training loops, greedy and beam search) through ``torch.compile``.

        A step is 30-odd small kernels forward and as many backward, so on a GPU the step path
        is bound by kernel launches: compiling fuses them, and ``mode="reduce-overhead"``
        replays the fused step as a CUDA graph.  Shapes vary with the batch; torch.compile
        recompiles once with symbolic sizes when they first change.  Eager stays the default
        and the reference (tests check both give the same loss); ``mode="off"`` keeps it.
        """
        if mode == "off":
            return
        self._advance = torch.compile(self._advance, mode=mode)  # type: ignore[method-assign]

    def step(self, prev: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, DecoderState, Tensor]:
        """Previous tokens (B,) -> logits (B, V), the new state, attention weights (B, S)."""
        logits, new, weights = self._token_step(prev, state.unstacked(), enc, self._split_weights())
        return logits, new.stacked(), weights

    def forward(
        self,
        tgt_in: Tensor,
        state: DecoderState,
        enc: EncoderOutput,
        teacher_forcing: float = 1.0,
        fast: Optional[bool] = None,
        loop: Optional[Loop] = None,
    ) -> tuple[Tensor, Tensor]:
        """Decode a whole target ``tgt_in`` (B, T) = [BOS, y_1, ...] -> logits (B, T, V), weights (B, T, S).

        At each step t > 0 each sentence reads the reference tgt_in[:, t] with probability
        ``teacher_forcing``, else the argmax of its own previous logits (nmt's ``sampled`` loop;
        at p = 1 without coins).  ``loop``: a registered decoder loop run instead, at any p.
        ``fast``: None picks the fast path whenever it applies; True demands it (ValueError if
        it does not apply); False forces the step-by-step path.
        """
        applicable = teacher_forcing >= 1.0 and self.can_run_fast and loop is None
        if fast and not applicable:
            raise ValueError(
                "the fast decoder path needs teacher_forcing == 1, luong style without input feeding and no decoder "
                f"loop of the user's (got teacher_forcing={teacher_forcing}, style={self.style}, "
                f"input_feeding={self.input_feeding}, loop={loop is not None})"
            )
        if applicable and fast is not False:
            return self._forward_fast(tgt_in, state, enc)
        if loop is not None:
            return self._forward_loop(tgt_in, state, enc, teacher_forcing, loop)
        if teacher_forcing >= 1.0:
            return self._forward_forced(tgt_in, state, enc)
        return self._forward_loop(tgt_in, state, enc, teacher_forcing, sampled)

    def _forward_fast(self, tgt_in: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, Tensor]:
        emb = self.emb_dropout(self.embedding(tgt_in))  # (B, T, E)
        hx = (state.hidden, state.cell) if self.lstm else state.hidden
        states, _ = self.rnn(emb, hx)  # (B, T, H): the whole target in one call
        if self.self_attention is not None:  # all T positions at once, each seeing only its past
            states = self.self_attention(states, causal_mask(states.size(1), states.size(0), states.device))
        context, weights = self.attention(states, enc.keys, enc.values, enc.mask)  # (B, T, K), (B, T, S)
        return self.output(self.dropout(self._read(states, context, emb))), weights

    def _forward_forced(self, tgt_in: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, Tensor]:
        w = self._split_weights()
        emb = self.emb_dropout(self.embedding(tgt_in))  # (B, T, E)
        x_all = F.linear(emb.transpose(0, 1), w.w_e, w.b_e)  # (T, B, G): W_e e_t + b for every t at once
        step = state.unstacked()
        outs: list[StepOutput] = []
        feeds: list[Tensor] = []
        # unbind, not x_all[t]: the backward of T slices would build T full-size zero gradients.
        for x_t in x_all.unbind(0):
            step, out = self._advance(x_t, step, enc, w)
            outs.append(out)
            if step.feed is not None:  # input feeding: h~_t, the output layer's input, came with the state
                feeds.append(step.feed)
        attn = torch.stack([out.weights for out in outs], dim=1)  # (B, T, S)
        if self.input_feeding:
            read = torch.stack(feeds, dim=1)  # (B, T, H)
        else:  # the output layer once for all T
            read = self._read(
                torch.stack([out.query for out in outs], dim=1), torch.stack([out.context for out in outs], dim=1), emb
            )  # (B, T, H)
        return self.output(self.dropout(read)), attn

    def _forward_loop(
        self, tgt_in: Tensor, state: DecoderState, enc: EncoderOutput, teacher_forcing: float, loop: Loop
    ) -> tuple[Tensor, Tensor]:
        """Run ``loop`` (see :mod:`nmt.model.decoder_loop`) over ``tgt_in`` with a step that records
        each position's attention weights: logits (B, T, V) and weights (B, T, S)."""
        w = self._split_weights()
        weights: list[Tensor] = []

        def step(tokens: Tensor, state: StepState) -> tuple[Tensor, StepState]:
            logits, state, attn = self._token_step(tokens, state, enc, w)
            weights.append(attn)
            return logits, state

        logits = loop(step, tgt_in, state.unstacked(), teacher_forcing)
        B, T = tgt_in.shape
        shape = (B, T, self.output.out_features)
        if not isinstance(logits, Tensor) or tuple(logits.shape) != shape or len(weights) != T:
            got = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
            raise PluginError(
                f"train.decoder_loop: expected logits {shape} from {T} steps for targets {tuple(tgt_in.shape)}, "
                f"got {got} from {len(weights)} steps"
            )
        return logits, torch.stack(weights, dim=1)
