"""Fake (meta) kernels of the optimal-transport core operators (csrc/ops/transport.cpp),
for torch.compile and torch.export: shapes and dtypes only (symbolic shapes welcome). The
public ``torchpair::emd`` is CompositeImplicitAutograd and decomposes into ``_emd``.
"""
from __future__ import annotations

import torch

from ._meta import register_fake  # with the one-device check


@register_fake("torchpair::_emd")
def _emd_fake(a, b, M, max_iter, mass_tol, warn=True):
    torch._check(M.dim() == 3 and a.dim() == 2 and b.dim() == 2, lambda: "torchpair._emd: expects a [B, n], b [B, m], M [B, n, m]")
    B, n, m = M.shape
    return (
        M.new_empty((B, n, m)),
        M.new_empty((B,)),
        M.new_empty((B, n)),
        M.new_empty((B, m)),
        M.new_empty((B,), dtype=torch.int64),
    )


@register_fake("torchpair::_emd_backward")
def _emd_backward_fake(grad, plan, u, v, output_mask):
    def out(flag, t):
        return t.new_empty(t.shape) if flag else plan.new_empty((0,))

    return out(output_mask[0], u), out(output_mask[1], v), out(output_mask[2], plan)
