"""Two training steps with a gradient penalty on CUDA, for `launchwatch run`: the penalty's
gradient is taken with create_graph=True, so the step's backward runs nodes the forward made and
nodes made on CUDA's autograd thread during that first backward (a double backward's)."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 16, device="cuda", requires_grad=True)
for _ in range(2):
    optimizer.zero_grad()
    out = model(x)
    (grad,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    penalty = (grad.norm(2, dim=1) - 1).pow(2).mean()
    (out.mean() + penalty).backward()
    optimizer.step()
torch.cuda.synchronize()
print("trained")
