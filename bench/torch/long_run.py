"""A long PyTorch training loop for `launchwatch run`'s memory and exit-time measurement (issue 20).

A small MLP trained for --steps steps on the GPU, each step under NVTX ranges (step, forward,
backward, optimizer), so the run has many launches and many ranges (about 30 kernels a step).
At its end it writes the wall-clock instant the loop ended (time.time(), after a device sync) to
--ended, so the driver (long_run.sh) can tell how long the report took after the program's work.
"""
import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--ended", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)
    x = torch.randn(32, 64, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    nvtx = torch.cuda.nvtx
    for _ in range(args.steps):
        with nvtx.range("step"):
            with nvtx.range("forward"):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            with nvtx.range("backward"):
                optimizer.zero_grad(set_to_none=False)
                loss.backward()
            with nvtx.range("optimizer"):
                optimizer.step()
    torch.cuda.synchronize()
    with open(args.ended, "w") as ended:
        ended.write(f"{time.time()}\n")


if __name__ == "__main__":
    main()
