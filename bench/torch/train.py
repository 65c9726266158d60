# The PyTorch reference for frugal-train and frugal-bench-train (../shared/BENCHMARKS.md): the
# same three models, data, settings and timing. --bench prints the throughput figures as JSON;
# --epochs N trains and prints the test accuracy after each epoch; --max-steps N trains N steps
# and reports their images/s (loop_images_per_sec). --device cuda runs it all on a GPU.
import argparse
import gzip
import json
import os
import resource
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(directory, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"{stem}(.gz) not found in {directory}")


def load(directory, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(find(directory, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find(directory, f"{prefix}-labels-idx1-ubyte"))
    x = (torch.from_numpy(images.copy()).float().div_(255).sub_(MEAN).div_(STD)).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))


def conv_bn_relu(cin, cout, k=3, stride=1, padding=1, groups=1):
    return [nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


def make_model(name):
    if name == "cnn":
        return nn.Sequential(*conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2),
                             *conv_bn_relu(32, 64), *conv_bn_relu(64, 64), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(64 * 7 * 7, 128), nn.ReLU(inplace=True), nn.Linear(128, 10))
    if name == "mobilenet":
        layers = conv_bn_relu(1, 32)
        for cin, cout, s in [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2)]:
            layers += conv_bn_relu(cin, cin, 3, s, 1, groups=cin) + conv_bn_relu(cin, cout, 1, 1, 0)
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(inplace=True), nn.Linear(512, 512),
                             nn.ReLU(inplace=True), nn.Linear(512, 10))
    raise ValueError(name)


AMP_DTYPES = {"off": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def autocast(device, amp):
    """torch.autocast for --amp (a disabled one for off), the region frugal's AutocastGuard covers."""
    dtype = AMP_DTYPES[amp]
    return torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def step(model, opt, x, y, amp="off", scaler=None, count_correct=False):
    """One training step; returns the loss, and with count_correct also the number of correct
    predictions as a device tensor (frugal-train's step counts them, between forward and backward)."""
    opt.zero_grad(set_to_none=True)
    with autocast(x.device, amp):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    correct = (logits.detach().argmax(1) == y).sum() if count_correct else None
    del logits
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
    return (loss, correct) if count_correct else loss


def full_float32(device):
    """frugal computes float32 in float32 on the GPU (cuDNN's FMA math, cuBLAS's COMPUTE_32F);
    PyTorch lets cuDNN run float32 convolutions in TF32 (10-bit mantissas) by default, a faster
    and less exact arithmetic: turned off, so that both sides time the same one. Only --amp off
    is affected (autocast's float16/bfloat16 convolutions do not use TF32). --tf32 keeps
    PyTorch's out-of-the-box setting instead, for that figure beside this one."""
    if device.type != "cuda":
        return
    cudnn = torch.backends.cudnn
    if hasattr(cudnn, "conv") and hasattr(cudnn.conv, "fp32_precision"):  # PyTorch 2.9 and later
        # Conv and RNN set alike: PyTorch refuses to read cuDNN's flag where the two differ.
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        cudnn.conv.fp32_precision = "ieee"
        if hasattr(cudnn, "rnn"):
            cudnn.rnn.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        cudnn.allow_tf32 = False


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_rate(fn, images_per_call, warmup=10, timed=50, repeats=3, device=torch.device("cpu")):
    rates = []
    for _ in range(repeats):
        for _ in range(warmup):
            fn()
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(timed):
            fn()
        synchronize(device)
        rates.append(images_per_call * timed / (time.perf_counter() - t0))
    return sorted(rates)[len(rates) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--epochs", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=-1, help="train this many steps (for RSS comparisons)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", default="off", choices=sorted(AMP_DTYPES), help="autocast dtype")
    parser.add_argument("--tf32", action="store_true",
                        help="on a GPU, keep PyTorch's default TF32 float32 convolutions (out of the box)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "test")
    device = torch.device(args.device)
    if not args.tf32:
        full_float32(device)
    model = make_model(args.model).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    result = {"model": args.model, "threads": args.threads, "device": args.device, "amp": args.amp,
              "tf32": args.tf32 and device.type == "cuda"}
    # Loss scaling where float16 needs it and this PyTorch has a scaler for the device.
    scaler = None
    if args.amp == "fp16" and device.type == "cuda":
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    if args.bench:
        b = args.batch_size
        xb, yb = x_train[:b].contiguous().to(device), y_train[:b].contiguous().to(device)
        result["train_images_per_sec"] = median_rate(lambda: step(model, opt, xb, yb, args.amp, scaler), b,
                                                     device=device)
        model.eval()
        xi = x_train[:512].contiguous().to(device)

        def infer():
            with torch.no_grad(), autocast(device, args.amp):
                model(xi)

        result["inference_images_per_sec"] = median_rate(infer, 512, device=device)
        model.train()
    steps = 0
    loop_images, loop_start = 0, time.perf_counter()
    g = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs if args.max_steps < 0 else 10 ** 9):
        order = torch.randperm(len(x_train), generator=g)
        for i in range(0, len(order), args.batch_size):
            if 0 <= args.max_steps <= steps:
                break
            idx = order[i:i + args.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            if device.type == "cuda":  # staged in pinned memory, as frugal-train does
                xb = xb.pin_memory().to(device, non_blocking=True)
                yb = yb.pin_memory().to(device, non_blocking=True)
            loss, correct = step(model, opt, xb, yb, args.amp, scaler, count_correct=True)
            if device.type == "cuda":  # frugal-train reads both after every step too
                loss.item()
                correct.item()
            steps += 1
            loop_images += len(idx)
        if 0 <= args.max_steps <= steps:
            break
        model.eval()
        with torch.no_grad(), autocast(device, args.amp):
            correct = sum((model(x_test[i:i + 512].to(device)).argmax(1) == y_test[i:i + 512].to(device)).sum().item()
                          for i in range(0, len(x_test), 512))
        model.train()
        result.setdefault("test_accuracy_per_epoch", []).append(correct / len(x_test))
    synchronize(device)
    result["steps"] = steps
    if steps:
        result["loop_images_per_sec"] = loop_images / (time.perf_counter() - loop_start)
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if device.type == "cuda":  # the caching allocator's peak, as frugal's peak_allocated_bytes
        result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
