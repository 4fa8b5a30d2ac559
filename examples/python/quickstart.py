"""A first look at torchpair: dense distances, a lazy kernel product that never builds
N x M, gradients through it, and the seed's compiled Query."""
import time

import torch

import torchpair as tp

torch.manual_seed(0)
X, Y = torch.randn(2000, 16), torch.randn(3000, 16)

D = tp.pairwise(X, Y, "euclidean")
print("dense euclidean", tuple(D.shape), "max |D - torch.cdist| =", (D - torch.cdist(X, Y)).abs().max().item())

n = 100_000
Xl, Yl, V = torch.randn(n, 3), torch.randn(n, 3), torch.randn(n, 1)
t = time.perf_counter()
out = tp.lazy(Xl, Yl, "rbf", gamma=0.5) @ V
print(f"lazy rbf matmul {n}x{n}: {time.perf_counter() - t:.2f}s "
      f"(a dense float32 matrix would need {n * n * 4 / 2**30:.0f} GiB)")

Xg = X[:500].clone().requires_grad_(True)
loss = (tp.lazy(Xg, Y, "rbf") @ torch.ones(3000, 1)).sum()
loss.backward()
print("gradient through the lazy product:", tuple(Xg.grad.shape))


class Query(torch.nn.Module):
    def forward(self, X, Y, V):
        K = tp.lazy(X, Y, metric="rbf", gamma=0.2)
        return K.matmul(V)


query = torch.compile(Query(), fullgraph=True)
print("compiled Query:", tuple(query(X, Y, torch.randn(3000, 4)).shape))
