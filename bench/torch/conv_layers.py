# The PyTorch side of frugal-bench-conv: the same layers (bench/conv_shapes.h), the same
# timing (median of repeats after two warm-ups), the same JSON keys.
import argparse
import json
import time

import torch
import torch.nn.functional as F

# name, in, out, size, kernel, stride, padding, groups, input needs grad
SHAPES = {
    "cnn": [
        ("conv1 1->32 3x3 @28", 1, 32, 28, 3, 1, 1, 1, False),
        ("conv2 32->32 3x3 @28", 32, 32, 28, 3, 1, 1, 1, True),
        ("conv3 32->64 3x3 @14", 32, 64, 14, 3, 1, 1, 1, True),
        ("conv4 64->64 3x3 @14", 64, 64, 14, 3, 1, 1, 1, True),
    ],
    "mobilenet": [
        ("stem 1->32 3x3 @28", 1, 32, 28, 3, 1, 1, 1, False),
        ("dw1 32 3x3 s1 @28", 32, 32, 28, 3, 1, 1, 32, True),
        ("pw1 32->64 1x1 @28", 32, 64, 28, 1, 1, 0, 1, True),
        ("dw2 64 3x3 s2 @28", 64, 64, 28, 3, 2, 1, 64, True),
        ("pw2 64->128 1x1 @14", 64, 128, 14, 1, 1, 0, 1, True),
        ("dw3 128 3x3 s1 @14", 128, 128, 14, 3, 1, 1, 128, True),
        ("pw3 128->128 1x1 @14", 128, 128, 14, 1, 1, 0, 1, True),
        ("dw4 128 3x3 s2 @14", 128, 128, 14, 3, 2, 1, 128, True),
        ("pw4 128->256 1x1 @7", 128, 256, 7, 1, 1, 0, 1, True),
    ],
}


def median_ns(reps, fn):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    dtype = getattr(torch, args.dtype)
    rows = []
    for name, cin, cout, size, k, s, p, groups, needs_grad in SHAPES[args.model]:
        x = torch.randn(args.batch, cin, size, size).to(dtype).requires_grad_(needs_grad)
        w = (torch.randn(cout, cin // groups, k, k) * 0.1).to(dtype).requires_grad_()
        with torch.no_grad():
            g = torch.randn_like(F.conv2d(x, w, stride=s, padding=p, groups=groups))

        def forward():
            with torch.no_grad():
                F.conv2d(x, w, stride=s, padding=p, groups=groups)

        def forward_backward():
            F.conv2d(x, w, stride=s, padding=p, groups=groups).backward(g)

        rows.append({"layer": name, "forward_ms": median_ns(args.reps, forward) / 1e6,
                     "forward_backward_ms": median_ns(args.reps, forward_backward) / 1e6})
    print(json.dumps({"model": args.model, "dtype": args.dtype, "batch": args.batch, "layers": rows,
                      "total_forward_ms": sum(r["forward_ms"] for r in rows),
                      "total_forward_backward_ms": sum(r["forward_backward_ms"] for r in rows)}))


if __name__ == "__main__":
    main()
