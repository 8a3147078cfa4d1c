"""A transformer's shape, its parameter count and the GPU time of its layers.

A model is given by its shape (:class:`ModelShape`) or by a preset name
(:data:`PRESETS`). Parameters per layer (SwiGLU MLP, grouped-query
attention, head dim = hidden / heads):

- attention: Q and O are hidden x hidden, K and V hidden x (kv_heads x head_dim);
- MLP: gate, up and down, 3 x hidden x ffn, once per expert (MoE) plus a
  hidden x experts router;
- embedding and output layer (untied): 2 x vocab x hidden.

FLOPs of one layer for one micro-batch of ``tokens`` = micro_batch x seq tokens:

- forward  = 2 x active layer params x tokens + 4 x micro_batch x seq^2 x hidden
  (the matmuls, then attention's QK^T and AV, counted without the causal mask);
- backward = 2 x forward (gradients of activations and of weights);
- the output layer adds 2 x vocab x hidden x tokens forward on the last stage.

An MoE layer's active params count ``top_k`` experts per token. A GPU of a
TP group of t does 1/t of its layer's FLOPs; its time is FLOPs /
(peak FLOP/s x efficiency).

Presets, figures from the public model cards and configs (config.json of
each repository on Hugging Face):

- ``llama3-8b``: Meta Llama 3 8B — 32 layers, hidden 4096, 32 heads, 8 KV
  heads, FFN 14336, vocabulary 128256 (8.0 B params);
- ``llama3-70b``: Meta Llama 3 70B — 80 layers, hidden 8192, 64 heads, 8 KV
  heads, FFN 28672, vocabulary 128256 (70.6 B params);
- ``mixtral-8x7b``: Mistral AI Mixtral 8x7B — 32 layers, hidden 4096, 32
  heads, 8 KV heads, FFN 14336, vocabulary 32000, 8 experts, 2 per token
  (46.7 B params, 12.9 B active per token).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer; ``experts`` 0 means dense."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    experts: int = 0
    top_k: int = 1
    bytes_per_element: int = 2

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                     "bytes_per_element", "top_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if self.experts < 0 or (self.experts and self.top_k > self.experts):
            raise ValueError(f"top_k {self.top_k} must be at most experts {self.experts}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def attention_params(self) -> int:
        return 2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * self.head_dim

    @property
    def mlp_params(self) -> int:
        """One expert's (or the dense) MLP."""
        return 3 * self.hidden * self.ffn

    @property
    def layer_params(self) -> int:
        if not self.experts:
            return self.attention_params + self.mlp_params
        return self.attention_params + self.experts * self.mlp_params + self.hidden * self.experts

    @property
    def active_layer_params(self) -> int:
        """Params one token goes through in a layer."""
        if not self.experts:
            return self.layer_params
        return self.attention_params + self.top_k * self.mlp_params + self.hidden * self.experts

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + 2 * self.vocab * self.hidden

    @property
    def active_params(self) -> int:
        return self.layers * self.active_layer_params + 2 * self.vocab * self.hidden

    def layer_fwd_flops(self, micro_batch: int, seq: int) -> float:
        tokens = micro_batch * seq
        return 2.0 * self.active_layer_params * tokens + 4.0 * micro_batch * seq * seq * self.hidden

    def output_fwd_flops(self, micro_batch: int, seq: int) -> float:
        return 2.0 * self.vocab * self.hidden * micro_batch * seq


PRESETS: dict[str, ModelShape] = {
    "llama3-8b": ModelShape(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                            vocab=128256),
    "llama3-70b": ModelShape(layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                             vocab=128256),
    "mixtral-8x7b": ModelShape(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                               vocab=32000, experts=8, top_k=2),
}


@dataclass(frozen=True)
class Gpu:
    """A GPU's compute: peak dense FLOP/s at the model's element type, and the share reached."""

    peak_flops: float
    efficiency: float = 0.5

    def __post_init__(self) -> None:
        if self.peak_flops <= 0:
            raise ValueError(f"peak_flops must be positive, not {self.peak_flops}")
        if not 0 < self.efficiency <= 1:
            raise ValueError(f"efficiency must be in (0, 1], not {self.efficiency}")

    def seconds(self, flops: float) -> float:
        return flops / (self.peak_flops * self.efficiency)
