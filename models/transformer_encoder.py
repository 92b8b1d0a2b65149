"""A 2-layer pre-norm transformer encoder (explicit q/k/v attention, LayerNorm, GELU FFN) with seeded random weights."""

import math

import numpy as np
import torch
from torch import nn

SEQ, D_MODEL, HEADS, FFN = 32, 64, 4, 128


class EncoderLayer(nn.Module):
    """Pre-norm: x + Attn(LN(x)), then x + FFN(LN(x)); attention as explicit batched matmuls."""

    def __init__(self, d_model, heads, ffn):
        super().__init__()
        self.heads = heads
        self.head_dim = d_model // heads
        self.norm1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(ffn, d_model)

    def _split(self, t):
        # (batch, seq, d_model) -> (batch * heads, seq, head_dim)
        b, s, _ = t.shape
        return t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2).reshape(b * self.heads, s, self.head_dim)

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        scores = torch.matmul(q, k.transpose(1, 2)) * (1.0 / math.sqrt(self.head_dim))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        ctx = ctx.reshape(b, self.heads, s, self.head_dim).transpose(1, 2).reshape(b, s, d)
        return self.out(ctx)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class TransformerEncoder(nn.Module):
    def __init__(self, layers=2, seq=SEQ, d_model=D_MODEL, heads=HEADS, ffn=FFN):
        super().__init__()
        self.pos = nn.Parameter(0.02 * torch.randn(1, seq, d_model))
        self.layers = nn.ModuleList([EncoderLayer(d_model, heads, ffn) for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        x = x + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def make_model():
    """The encoder and one 1x32x64 (batch, seq, d_model) float32 input."""
    torch.manual_seed(0)
    model = TransformerEncoder().eval()
    x = np.random.default_rng(0).standard_normal((1, SEQ, D_MODEL)).astype(np.float32)
    return model, (torch.from_numpy(x),)
