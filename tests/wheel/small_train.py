"""A small training loop on the GPU with no mention of launchwatch, for scripts/device_wheel.sh:
`launchwatch run -- python3 small_train.py` from the installed wheel must report its kernels with
device times, by module. At the end it prints which CUPTI and CUDA runtime libraries the process
mapped (from /proc/self/maps), so the run shows where CUPTI came from."""

import sys

import torch
from torch import nn


def mapped(name):
    """The files of the process's mappings whose name contains `name`."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if name in line.split()[-1]})


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1, stride=2), nn.BatchNorm2d(64), nn.ReLU(),
        )
        self.head = nn.Linear(64 * 16 * 16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


# What PyTorch mapped by itself, before CUDA starts (and with it launchwatch's injection).
CUPTI_AT_IMPORT = mapped("libcupti")


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if not torch.cuda.is_available():
        sys.exit("small_train: no CUDA device")
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = SmallNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.cuda.synchronize()
    print(f"trained {steps} steps with torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print("cupti at import:", " ".join(CUPTI_AT_IMPORT) or "none")
    for path in mapped("libcupti"):
        print("cupti", path)
    for path in mapped("libcudart"):
        print("cudart", path)


if __name__ == "__main__":
    main()
