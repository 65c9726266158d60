# The PyTorch side of bench/loader.sh: torch.utils.data.DataLoader over a PIL Dataset of the
# same PNG tree frugal-loader-bench reads (torchvision's ImageFolder layout and transforms:
# RandomCrop(28, padding=2), RandomHorizontalFlip, ToTensor, Normalize), timed per epoch, with
# the peak RSS of the process and its worker processes (VmHWM, summed) after each epoch. --json.
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def vm_hwm_bytes(pid="self"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss_bytes(loader):
    """Peak RSS of this process plus each live worker process's (workers are processes)."""
    total = vm_hwm_bytes()
    iterator = getattr(loader, "_iterator", None)
    for w in getattr(iterator, "_workers", []) or []:
        try:
            total += vm_hwm_bytes(w.pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True, help="ImageFolder root (root/<class>/*.png)")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--crop", type=int, default=28)
    p.add_argument("--pad", type=int, default=2)
    p.add_argument("--mean", type=float, default=0.2860)
    p.add_argument("--std", type=float, default=0.3530)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the loader's work is per sample; as frugal, no intra-op threads
    tf = transforms.Compose([
        transforms.RandomCrop(args.crop, padding=args.pad),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((args.mean,), (args.std,)),
    ])
    # Grayscale as frugal's --channels 1: PIL's "L" mode.
    dataset = datasets.ImageFolder(args.data, transform=tf, loader=lambda path: _open_gray(path))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    rates, peaks = [], []
    checksum = 0.0
    for epoch in range(args.epochs):
        images = 0
        t0 = time.perf_counter()
        for data, target in loader:
            images += data.shape[0]
            checksum += float(data[0, 0, 0, 0])
        seconds = time.perf_counter() - t0
        rates.append(images / seconds)
        peaks.append(peak_rss_bytes(loader))
        print(f"epoch {epoch + 1}: {images} images in {seconds:.3f} s, {rates[-1]:.0f} images/s, "
              f"peak RSS {peaks[-1] / 2**20:.1f} MiB", flush=True)
    median = sorted(rates)[len(rates) // 2]
    print(f"median {median:.0f} images/s; checksum {checksum:g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"data": args.data, "workers": args.workers, "batch_size": args.batch_size,
                       "epochs": args.epochs, "images_per_sec": median, "per_epoch_images_per_sec": rates,
                       "peak_rss_bytes": peaks[-1], "torch": torch.__version__}, f)


def _open_gray(path):
    from PIL import Image
    with open(path, "rb") as f:
        return Image.open(f).convert("L")


if __name__ == "__main__":
    main()
