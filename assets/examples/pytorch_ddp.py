"""Data-parallel training with PyTorch DistributedDataParallel, ready for `gpudeck run`.

    gpudeck run --gpus 0,1 --launcher torchrun -- python assets/examples/pytorch_ddp.py
    gpudeck run --gpus 0,1 --launcher per-gpu  -- python assets/examples/pytorch_ddp.py
    gpudeck run --gpus 0 -- python assets/examples/pytorch_ddp.py          # one GPU, no DDP

Both launchers set RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. With torchrun
every process sees all the run's GPUs and takes the one at LOCAL_RANK; with per-gpu each process
sees only its own GPU (CUDA_VISIBLE_DEVICES), which is device 0.

The data is synthetic (a regression of a fixed random linear map plus noise), so the script needs
no download and the loss visibly falls. Rank 0 prints `epoch=.. step=.. loss=..` lines, which the
Runs tab draws as a curve. Ctrl-C (what `gpudeck stop` sends first) saves a checkpoint and exits.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256, help="per process")
    p.add_argument("--samples", type=int, default=200_000)
    p.add_argument("--width", type=int, default=2048, help="hidden layer width")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--checkpoint", default="checkpoint.pt")
    return p.parse_args()


def setup():
    """Joins the process group when launched with several processes; returns (rank, world, device)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device is visible: check `gpudeck doctor` and CUDA_VISIBLE_DEVICES")
    # per-gpu: one visible device; torchrun: all the run's devices, one per local rank.
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl", rank=rank, world_size=world)
    return rank, world, device


def data(samples, features=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=g)
    w = torch.randn(features, 1, generator=g) / features**0.5
    y = x @ w + 0.01 * torch.randn(samples, 1, generator=g)
    return TensorDataset(x, y)


def main():
    args = parse_args()
    rank, world, device = setup()
    dataset = data(args.samples)
    sampler = DistributedSampler(dataset) if world > 1 else None
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        shuffle=sampler is None, num_workers=2, pin_memory=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, args.width), torch.nn.GELU(),
        torch.nn.Linear(args.width, args.width), torch.nn.GELU(),
        torch.nn.Linear(args.width, 1),
    ).to(device)
    if world > 1:
        model = DistributedDataParallel(model, device_ids=[device.index])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    steps = len(loader)
    if rank == 0:
        print(f"world_size={world} device={torch.cuda.get_device_name(device)} steps_per_epoch={steps}", flush=True)
    epoch = 0
    try:
        for epoch in range(args.epochs):
            if sampler is not None:
                sampler.set_epoch(epoch)
            started = time.time()
            for step, (x, y) in enumerate(loader, start=1):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if rank == 0 and (step % 20 == 0 or step == steps):
                    print(f"epoch={epoch + 1}/{args.epochs} step={step}/{steps} loss={loss.item():.5f} "
                          f"samples_per_sec={step * args.batch_size * world / (time.time() - started):.0f}",
                          flush=True)
    except KeyboardInterrupt:
        if rank == 0:
            print(f"interrupted in epoch {epoch + 1}: saving {args.checkpoint}", flush=True)
    if rank == 0:
        state = model.module.state_dict() if world > 1 else model.state_dict()
        torch.save({"epoch": epoch + 1, "model": state}, args.checkpoint)
        print(f"saved {args.checkpoint}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
