#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Pick this process's GPU the way training code does, and use it.

    distenv-simulate --nodes 2 -- /usr/bin/python3 scripts/simulate-device-check.py --device-by rank

--device-by local_rank (right) uses cuda:LOCAL_RANK; --device-by rank (the
classic bug) uses cuda:RANK. On one box with one GPU per process the two
agree; on a cluster each node sees only its own GPU(s), numbered from 0, so
cuda:RANK is beyond them on every node but the first: "CUDA error: invalid
device ordinal".

Where the device table comes from:
- CUDA visible (torch with CUDA): the real one. Under distenv-simulate each
  pseudo-node's CUDA_VISIBLE_DEVICES lists only its own GPU(s), so the real
  CUDA raises the real error.
- CPU path (no GPU, or distenv-simulate --cpu, which exports
  DISTENV_SIMULATED_GPUS): emulated from DISTENV_VISIBLE_DEVICES, the GPU(s)
  this pseudo-node would own (e.g. "2,3" for node 1 with two per node): it
  has len(list) devices, cuda:0..len-1, and an index beyond them raises the
  RuntimeError CUDA gives, with CUDA's text.
- Neither: there is no device table to check; says so and exits 0.

Exit status 0 when the chosen device exists (and a tensor was made on it
where torch is present), 1 on the device error, 2 on a usage error.
"""
import argparse
import os
import socket
import sys

try:
    import torch
except ImportError:  # the emulation needs no torch
    torch = None

# What torch raises for cuda:N with N >= the visible device count.
CUDA_ORDINAL_ERROR = (
    "CUDA error: invalid device ordinal\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.")


def env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None or not value.isdigit():
        print(f"simulate-device-check: {name}={value!r}: expected a number "
              "(run it under distenv-simulate, srun with distenv, or torchrun)",
              file=sys.stderr)
        sys.exit(2)
    return int(value)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device-by", choices=("rank", "local_rank"), default="local_rank",
                        help="which variable picks cuda:N (default local_rank)")
    args = parser.parse_args()

    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    local = env_int("LOCAL_RANK")
    index = rank if args.device_by == "rank" else local
    node = os.environ.get("DISTENV_SIMULATED_NODE")
    node = f"node{node}" if node is not None else socket.gethostname()
    where = (f"[rank {rank}/{world}] node={node} "
             f"local_rank={local} device=cuda:{index} (by {args.device_by})")

    if torch is not None and torch.cuda.is_available():
        # The real device table: let CUDA itself refuse.
        torch.cuda.set_device(index)
        t = torch.ones(1, device=f"cuda:{index}")
        print(f"{where} -> {torch.cuda.get_device_name(index)} "
              f"of {torch.cuda.device_count()} visible, tensor sum {int(t.sum().item())} OK",
              flush=True)
        return 0

    visible = os.environ.get("DISTENV_VISIBLE_DEVICES")
    if visible is None:
        print(f"{where}: no GPU and no simulated device table "
              "(not under distenv-simulate): nothing to check", flush=True)
        return 0
    table = [d for d in visible.split(",") if d != ""]
    if index >= len(table):
        # What torch.cuda.set_device(index) raises on a node that sees
        # len(table) GPUs.
        raise RuntimeError(CUDA_ORDINAL_ERROR)
    if torch is not None:
        t = torch.ones(1)  # the work itself runs on the CPU here
        done = f"tensor sum {int(t.sum().item())} on cpu"
    else:
        done = "no torch"
    print(f"{where} -> simulated GPU {table[index]} of {len(table)} on this node "
          f"({done}) OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
