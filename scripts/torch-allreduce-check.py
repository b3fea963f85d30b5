#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The acceptance check people run by hand, in PyTorch: join the world through
env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE as distenv sets them, with
no torchrun), all_reduce rank+1, and print one checklist line per rank.
Exit 0 only if the sum is N(N+1)/2."""
import datetime
import os
import socket
import sys

import torch
import torch.distributed as dist


def main() -> int:
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE",
                           "LOCAL_RANK", "LOCAL_WORLD_SIZE") if v not in os.environ]
    if missing:
        print(f"torch-allreduce-check: not set: {' '.join(missing)} "
              "(is the distenv plugin loaded?)", file=sys.stderr)
        return 2
    timeout = float(os.environ.get("DISTENV_TIMEOUT", "60"))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend, init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    device = torch.device(f"cuda:{local}") if backend == "nccl" else torch.device("cpu")
    t = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t)
    got, want = int(t.item()), world * (world + 1) // 2
    verdict = "OK" if got == want else "WRONG"
    # One write per line: with PYTHONUNBUFFERED print() writes the text and
    # the newline separately, and lines of several ranks interleave.
    sys.stdout.write(f"[rank {rank}/{world}] node={socket.gethostname()} "
                     f"local_rank={local}/{local_world} device={device} backend={backend} "
                     f"allreduce={got} (expected {want}) {verdict}\n")
    sys.stdout.flush()
    dist.destroy_process_group()
    return 0 if got == want else 1


if __name__ == "__main__":
    sys.exit(main())
