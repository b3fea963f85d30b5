#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""torch_allreduce: the PyTorch gloo peer of `distenv-check --bench`, for
bench/allreduce. Same options, same timing and the same table.

Run once per rank with RANK WORLD_SIZE MASTER_ADDR MASTER_PORT set
(init_method="env://"), with Debian's python3-torch:

  RANK=0 ... /usr/bin/python3 bench/torch_allreduce.py --sizes=8:64M --iters=20 --warmup=5
  RANK=0 ... /usr/bin/python3 bench/torch_allreduce.py --plan=8:1M:1000:100,2M:64M:10:2

Sizes double from MIN to MAX bytes. Every iteration refills the float32
tensor (untimed) with distenv-check's input, element i of rank r holding
(i % 13 + 1) * (r + 1), then times one dist.all_reduce (SUM, in place)
with time.perf_counter; time(us) is rank 0's mean over the timed
iterations. #wrong counts the elements, over all ranks, that differ from
the exact sum after the last iteration. --plan gives one group per comma,
MIN:MAX:ITERS:WARMUP, so one process start covers a whole sweep.
"""
import argparse
import os
import re
import sys
import time

PERIOD = 13


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KkMmGg]?)", text)
    if not m:
        raise ValueError(f"bad size {text!r}")
    shift = {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
    return int(m.group(1)) << shift


def parse_range(text):
    lo, sep, hi = text.partition(":")
    if not sep:
        raise ValueError(f"bad range {text!r} (want MIN:MAX)")
    lo, hi = parse_size(lo), parse_size(hi)
    if lo > hi:
        raise ValueError(f"bad range {text!r} (MIN > MAX)")
    return lo, hi


def parse_plan(text):
    groups = []
    for part in text.split(","):
        fields = part.split(":")
        if len(fields) != 4:
            raise ValueError(f"bad plan group {part!r} (want MIN:MAX:ITERS:WARMUP)")
        lo, hi = parse_range(f"{fields[0]}:{fields[1]}")
        iters, warmup = int(fields[2]), int(fields[3])
        if iters < 1 or warmup < 0:
            raise ValueError(f"bad plan group {part!r}")
        groups.append((lo, hi, iters, warmup))
    return groups


def sizes(lo, hi, esz):
    b = lo
    while b <= hi:
        yield b
        b = b * 2 if b else esz


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8:64M", help="MIN:MAX bytes, K/M/G suffixes")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per size")
    ap.add_argument("--warmup", type=int, default=5, help="untimed iterations per size")
    ap.add_argument("--plan", help="MIN:MAX:ITERS:WARMUP[,...] (overrides the three above)")
    ap.add_argument("--dtype", default="float32", choices=["float32"])
    args = ap.parse_args()
    try:
        if args.plan:
            groups = parse_plan(args.plan)
        else:
            lo, hi = parse_range(args.sizes)
            if args.iters < 1 or args.warmup < 0:
                raise ValueError("--iters must be >= 1 and --warmup >= 0")
            groups = [(lo, hi, args.iters, args.warmup)]
    except ValueError as e:
        print(f"torch_allreduce: {e}", file=sys.stderr)
        return 2
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        print(f"torch_allreduce: set {' '.join(missing)}", file=sys.stderr)
        return 2

    import torch
    import torch.distributed as dist

    # Two ranks share the box's cores: keep torch's own pools to one thread
    # each (the timed all_reduce runs on gloo's threads either way).
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    esz = 4
    maxb = max(hi for _, hi, _, _ in groups)
    n = maxb // esz
    base = (torch.arange(n, dtype=torch.int64) % PERIOD + 1).to(torch.float32)
    src = base * float(rank + 1)
    want = base * float(world * (world + 1) // 2)
    buf = torch.empty(n, dtype=torch.float32)
    printed = False
    for lo, hi, iters, warmup in groups:
        for b in sizes(lo, hi, esz):
            count = b // esz
            t = buf[:count]
            s = src[:count]
            total = 0.0
            for i in range(warmup + iters):
                t.copy_(s)
                t0 = time.perf_counter()
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
                dt = time.perf_counter() - t0
                if i >= warmup:
                    total += dt
            wrong = torch.tensor([int((t != want[:count]).sum())], dtype=torch.int64)
            dist.all_reduce(wrong)
            if rank == 0:
                if not printed:
                    printed = True
                    print(f"# torch_allreduce: {world} ranks, torch {torch.__version__} gloo, "
                          f"float32, dist.all_reduce in place")
                    print("%12s %12s %8s %6s %12s %12s %12s %8s" % (
                        "size", "count", "type", "redop", "time(us)", "algbw(GB/s)",
                        "busbw(GB/s)", "#wrong"))
                us = total / iters * 1e6
                algbw = count * esz / us / 1e3 if us > 0 else 0.0
                busbw = algbw * 2.0 * (world - 1) / world
                print("%12d %12d %8s %6s %12.1f %12.3f %12.3f %8d" % (
                    count * esz, count, "float32", "sum", us, algbw, busbw, int(wrong[0])),
                    flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
