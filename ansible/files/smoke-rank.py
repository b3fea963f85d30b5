#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs in every rank of the smoke job after distenv-check passed: prints
the torchrun environment distenv set, and fails if any of it is missing or
inconsistent with Slurm's own variables."""
import os
import socket
import sys

env = os.environ
names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"]
missing = [n for n in names if n not in env]
if missing:
    sys.exit(f"smoke-rank: {socket.gethostname()}: not set: {' '.join(missing)}")
bad = []
if env["RANK"] != env.get("SLURM_PROCID"):
    bad.append(f"RANK={env['RANK']} but SLURM_PROCID={env.get('SLURM_PROCID')}")
if env["LOCAL_RANK"] != env.get("SLURM_LOCALID"):
    bad.append(f"LOCAL_RANK={env['LOCAL_RANK']} but SLURM_LOCALID={env.get('SLURM_LOCALID')}")
print(f"smoke-rank: rank={env['RANK']}/{env['WORLD_SIZE']} node={socket.gethostname()} "
      f"local_rank={env['LOCAL_RANK']}/{env['LOCAL_WORLD_SIZE']} node_rank={env['NODE_RANK']} "
      f"master={env['MASTER_ADDR']}:{env['MASTER_PORT']} {'OK' if not bad else 'BAD: ' + '; '.join(bad)}",
      flush=True)
sys.exit(1 if bad else 0)
