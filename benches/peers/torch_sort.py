"""Peer for `snowsim sort bench`: the same key-value sort in PyTorch on the same GPU, timed with
CUDA events, best of N runs after a warm-up.

    python3 benches/peers/torch_sort.py --min-log2 16 --max-log2 26 --iterations 10

For each size 2^k it sorts 2^k random 32-bit keys with 32-bit values, as `snowsim sort bench`
does (u32 keys, u32 values = indices), in two ways:

  - `sort_gather`: `torch.sort(keys)` returning the sorted keys and the permutation, then
    `values[indices]` (the usual way to sort pairs in PyTorch: what a user would reach for);
  - `sort_only`: `torch.sort(keys)` alone (keys and int64 indices, no gather).

PyTorch has no unsigned 32-bit sort on CUDA, so keys are int32 drawn uniformly from the whole
range: the same bits, the same radix-sort work. Each run sorts a fresh copy of the unsorted keys
(the copy is outside the timed region). Prints one JSON object per size and operation on stdout
(or CSV rows with --csv), with the best and median times and keys per second.
"""
import argparse
import csv
import json
import statistics
import sys

import torch


def time_op(fn, prepare, iterations, warmup):
    times = []
    for run in range(warmup + iterations):
        prepare()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if run >= warmup:
            times.append(start.elapsed_time(end) / 1e3)
    return min(times), statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min-log2", type=int, default=16)
    parser.add_argument("--max-log2", type=int, default=26)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--descending", action="store_true")
    parser.add_argument("--stable", action="store_true", help="torch.sort(stable=True)")
    parser.add_argument("--csv", action="store_true", help="CSV rows instead of JSON lines")
    args = parser.parse_args()

    device = torch.device("cuda")
    torch.manual_seed(args.seed)
    fields = [
        "peer", "operation", "device", "torch_version", "log2_len", "len", "key_type",
        "descending", "stable", "iterations", "warmup", "best_s", "median_s", "keys_per_s",
    ]
    writer = csv.DictWriter(sys.stdout, fieldnames=fields) if args.csv else None
    if writer:
        writer.writeheader()

    for log2 in range(args.min_log2, args.max_log2 + 1):
        n = 1 << log2
        source = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, device=device)
        values = torch.arange(n, dtype=torch.int32, device=device)
        keys = torch.empty_like(source)
        out = {}

        def prepare():
            keys.copy_(source)

        def sort_gather():
            sorted_keys, indices = torch.sort(keys, descending=args.descending, stable=args.stable)
            out["keys"], out["values"] = sorted_keys, values[indices]

        def sort_only():
            torch.sort(keys, descending=args.descending, stable=args.stable)

        for name, fn in (("sort_only", sort_only), ("sort_gather", sort_gather)):
            best, median = time_op(fn, prepare, args.iterations, args.warmup)
            row = {
                "peer": "torch.sort",
                "operation": name,
                "device": torch.cuda.get_device_name(),
                "torch_version": torch.__version__,
                "log2_len": log2,
                "len": n,
                "key_type": "int32",
                "descending": args.descending,
                "stable": args.stable,
                "iterations": args.iterations,
                "warmup": args.warmup,
                "best_s": best,
                "median_s": median,
                "keys_per_s": n / best,
            }
            if writer:
                writer.writerow(row)
            else:
                print(json.dumps(row), flush=True)

        # The last sort_gather must have sorted the same pairs: each key with its own value.
        sorted_keys, gathered = out["keys"], out["values"]
        assert torch.equal(source[gathered.long()], sorted_keys)
        step = sorted_keys[1:] <= sorted_keys[:-1] if args.descending else sorted_keys[:-1] <= sorted_keys[1:]
        assert bool(step.all())
        del source, values, keys, out, sorted_keys, gathered, step
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
