#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# PyTorch compatibility: Debian's python3-torch joins the world with
# init_method="env://" under a plain srun (no torchrun) on the real
# two-node cluster, using only what the distenv plugin set.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

# On another Slurm the tasks use its root's python3-torch (always there).
if [ "$CLUSTER_SLURM" = host ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	tap_skip_all "Debian's python3-torch is not installed (scripts/setup installs it)"
fi
cluster_require --nodes 2 --cpus 4
cluster_torch_env
tap_diag "torch $TORCH_VERSION"
check="$here/../../scripts/torch-allreduce-check.py"

run_check() { # N_NODES TASKS_PER_NODE
	local n=$1 per=$2 world=$(($1 * $2)) out rc lines want
	want=$((world * (world + 1) / 2))
	out=$(cx env "${TORCH_ENV[@]}" DISTENV_TIMEOUT=60 timeout 120 srun -N"$n" --ntasks-per-node="$per" \
		/usr/bin/python3 "$check" 2>&1) && rc=0 || rc=$?
	cluster_example "torch-${n}x$per" "$out"
	lines=$(grep -c "allreduce=$want (expected $want) OK" <<<"$out" || true)
	if [ "$rc" -eq 0 ] && [ "$lines" -eq "$world" ]; then
		tap_ok "torch gloo env:// all_reduce on $n nodes x $per: $world ranks print $want"
	else
		tap_fail "torch gloo env:// all_reduce on $n nodes x $per (rc=$rc, $lines/$world OK lines)" "$out"
	fi
	# Each node's ranks report their own host and local ranks 0..per-1.
	for node in node1 node2; do
		got=$(grep "node=$node " <<<"$out" | grep -o 'local_rank=[0-9]*/[0-9]*' | sort | tr '\n' ' ')
		want_lr=""
		for ((i = 0; i < per; i++)); do want_lr+="local_rank=$i/$per "; done
		tap_is "$got" "$want_lr" "$n x $per: $node's ranks have local ranks 0..$((per - 1))"
	done
}

run_check 2 1
run_check 2 2
tap_done
