"""Peer for `snowsim selftest`: the same STREAM triad (a = b + 0.5*c over float4 values) in
PyTorch on the same GPU, timed with CUDA events, best of N launches.

    python3 benches/peers/torch_triad.py --elements 16777216 --iterations 50

Prints one JSON object with the best time and bytes/s, so the two can be compared as a ratio.
"""
import argparse
import json

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--elements", type=int, default=1 << 24, help="float4 values per array")
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args()

    n = args.elements * 4
    b = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(1021)
    c = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(97)
    a = torch.empty_like(b)
    torch.add(b, c, alpha=0.5, out=a)  # warm-up
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(args.iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.add(b, c, alpha=0.5, out=a)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    assert torch.equal(a, b + 0.5 * c)
    bytes_per_launch = 3 * 16 * args.elements
    print(json.dumps({
        "peer": "torch.add",
        "device": torch.cuda.get_device_name(),
        "elements": args.elements,
        "best_seconds": best,
        "best_bytes_per_second": bytes_per_launch / best,
    }))


if __name__ == "__main__":
    main()
