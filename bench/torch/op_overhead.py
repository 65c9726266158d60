# The PyTorch side of frugal-bench-op-overhead: the same 1-element adds, timed the same way
# (median over batches of adds), printed as the same JSON keys.
import argparse
import json
import time

import torch


def per_op_ns(samples, batch, op):
    for _ in range(samples // 10):
        for _ in range(batch):
            op()
    times = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            op()
        times.append((time.perf_counter_ns() - t0) / batch)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(2)
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1)
    pa, pb = torch.ones(1), torch.ones(1)
    result = {"add_autograd_ns": per_op_ns(args.samples, args.batch, lambda: torch.add(a, b))}
    with torch.no_grad():
        result["add_no_grad_guard_ns"] = per_op_ns(args.samples, args.batch, lambda: torch.add(a, b))
    result["add_plain_ns"] = per_op_ns(args.samples, args.batch, lambda: torch.add(pa, pb))

    def add_backward():
        torch.add(a, b).sum().backward()

    result["add_sum_backward_ns"] = per_op_ns(args.samples // 4, args.batch, add_backward)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
