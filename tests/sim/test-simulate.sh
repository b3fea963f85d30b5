#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Task-side expressions are single-quoted on purpose: they expand in the
# simulated processes.
# shellcheck disable=SC2016
# scripts/distenv-simulate: N pseudo-nodes on this machine with the
# environment of a real N-node job; the device-by-RANK bug fails as on a
# cluster; distenv-check and PyTorch gloo work under it. No root, no GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

root=$(cd "$here/../.." && pwd)
build=${DISTENV_BUILD_DIR:-$root}
sim=$root/scripts/distenv-simulate
devcheck=$root/scripts/simulate-device-check.py
check=${DISTENV_CHECK:-$build/src/distenv-check}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Pretend there is no GPU and no Slurm job, whatever this machine has: the
# GPU path is tested with a fake nvidia-smi below.
mkdir -p "$tmp/nogpu"
unset CUDA_VISIBLE_DEVICES OMP_NUM_THREADS
for v in $(compgen -e); do [[ $v == SLURM_* ]] && unset "$v"; done
nogpu_path="$tmp/nogpu:$(tr ':' '\n' <<<"$PATH" | while read -r d; do [ -x "$d/nvidia-smi" ] || printf '%s:' "$d"; done)"
nogpu_path=${nogpu_path%:}

# simulate ARGS...: run the simulator (bounded), stdout+stderr in $out,
# exit status in $rc.
simulate() {
	out=$(PATH=$nogpu_path timeout -k 5 180 "$sim" "$@" 2>&1) && rc=0 || rc=$?
}

VARS="RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT OMP_NUM_THREADS CUDA_VISIBLE_DEVICES DISTENV_VISIBLE_DEVICES DISTENV_SIMULATED_GPUS SLURM_JOB_ID"
show='for v in '"$VARS"'; do printf "%s=%s " "$v" "${!v-unset}"; done; echo'

field() { # field LINE NAME
	local w
	for w in $1; do [ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }; done
	echo missing
}

# The environment of N pseudo-nodes x 1 process.
check_world() { # N
	local n=$1 lines ranks="" want="" bad="" line pfx r i port
	simulate --nodes "$n" -- bash -c "$show"
	tap_is "$rc" 0 "$n nodes: the simulator exits 0"
	lines=$(grep '^\[node' <<<"$out")
	for ((i = 0; i < n; i++)); do want+="$i "; done
	ranks=$(grep -o ' RANK=[0-9]*' <<<"$lines" | cut -d= -f2 | sort -n | tr '\n' ' ')
	tap_is "$ranks" "$want" "$n nodes: RANK 0..$((n - 1)), each once"
	port=$(field "$(head -1 <<<"$lines")" MASTER_PORT)
	while read -r line; do
		[ -n "$line" ] || continue
		pfx=${line%%] *}
		r=$(field "$line" RANK)
		[ "$pfx" = "[node$r/rank$r" ] || bad+="prefix $pfx for RANK $r; "
		[ "$(field "$line" LOCAL_RANK)" = 0 ] || bad+="LOCAL_RANK on rank $r; "
		[ "$(field "$line" LOCAL_WORLD_SIZE)" = 1 ] || bad+="LOCAL_WORLD_SIZE on rank $r; "
		[ "$(field "$line" WORLD_SIZE)" = "$n" ] || bad+="WORLD_SIZE on rank $r; "
		[ "$(field "$line" NODE_RANK)$(field "$line" GROUP_RANK)" = "$r$r" ] || bad+="NODE_RANK/GROUP_RANK on rank $r; "
		[ "$(field "$line" GROUP_WORLD_SIZE)" = "$n" ] || bad+="GROUP_WORLD_SIZE on rank $r; "
		[ "$(field "$line" MASTER_ADDR)" = 127.0.0.1 ] || bad+="MASTER_ADDR on rank $r; "
		[ "$(field "$line" MASTER_PORT)" = "$port" ] || bad+="MASTER_PORT differs on rank $r; "
		[ "$(field "$line" CUDA_VISIBLE_DEVICES)" = "" ] || bad+="CUDA_VISIBLE_DEVICES not empty on rank $r; "
		[ "$(field "$line" DISTENV_VISIBLE_DEVICES)" = "$r" ] || bad+="DISTENV_VISIBLE_DEVICES on rank $r; "
		[ "$(field "$line" DISTENV_SIMULATED_GPUS)" = 1 ] || bad+="DISTENV_SIMULATED_GPUS on rank $r; "
		[ "$(field "$line" OMP_NUM_THREADS)" = unset ] || bad+="OMP_NUM_THREADS set on rank $r; "
		[ "$(field "$line" SLURM_JOB_ID)" = unset ] || bad+="SLURM_JOB_ID leaked to rank $r; "
	done <<<"$lines"
	[[ $port =~ ^[0-9]+$ ]] && ((port >= 1024)) || bad+="MASTER_PORT '$port'; "
	[ "$(wc -l <<<"$lines")" = "$n" ] || bad+="$(wc -l <<<"$lines") lines; "
	if [ -z "$bad" ]; then
		tap_ok "$n nodes: prefix [nodeI/rankI], LOCAL_RANK 0, sizes $n/1, NODE_RANK=GROUP_RANK=I, MASTER_ADDR 127.0.0.1, one MASTER_PORT ($port), no GPU visible, 1 simulated each"
	else
		tap_fail "$n nodes: the environment of a $n-node job" "$bad" "$out"
	fi
}

check_world 2
export SLURM_JOB_ID=77 # must not reach the pseudo-nodes
check_world 4
unset SLURM_JOB_ID

# --- 2 nodes x 2 processes ---------------------------------------------------------
simulate --nodes 2 --gpus-per-node 2 -- bash -c "$show"
got=$(grep '^\[node' <<<"$out" | while read -r line; do
	printf '%s:%s/%s:%s:%s:%s ' "${line%%] *}]" "$(field "$line" LOCAL_RANK)" "$(field "$line" LOCAL_WORLD_SIZE)" \
		"$(field "$line" WORLD_SIZE)" "$(field "$line" DISTENV_VISIBLE_DEVICES)" "$(field "$line" OMP_NUM_THREADS)"
done | tr ' ' '\n' | sort | tr '\n' ' ')
tap_is "$got" "[node0/rank0]:0/2:4:0,1:1 [node0/rank1]:1/2:4:0,1:1 [node1/rank2]:0/2:4:2,3:1 [node1/rank3]:1/2:4:2,3:1 " \
	"2 nodes x 2: LOCAL_RANK 0..1 per node, LOCAL_WORLD_SIZE 2, WORLD_SIZE 4, each node its two devices, OMP_NUM_THREADS=1"

# --- distenv-check reads the simulated environment --------------------------------
# (authenticated by the secret the simulator exports for the launch)
if [ -x "$check" ]; then
	simulate --nodes 1 --gpus-per-node 2 --timeout 60 -- "$check" --timeout=20
	if [ "$rc" -eq 0 ] && [[ $out == *"distenv-check: PASS: 2 ranks"*"(authentication: shared secret)"* ]] &&
		[ "$(grep -c 'allreduce=3 (expected 3) OK' <<<"$out")" = 2 ]; then
		tap_ok "distenv-check under the simulator: PASS on 1 pseudo-node x 2"
	else
		tap_fail "distenv-check under the simulator: PASS on 1 pseudo-node x 2 (rc=$rc)" "$out"
	fi
	# Across pseudo-nodes MASTER_ADDR is 127.0.0.1 on a "2-node" job, which
	# distenv-check refuses for real nodes (master-loopback) unless it knows
	# the nodes are simulated (DISTENV_SIMULATED): a known gap, skipped by
	# name; any other failure fails.
	simulate --nodes 2 --timeout 60 -- "$check" --timeout=20
	if [ "$rc" -eq 0 ] && [[ $out == *"distenv-check: PASS: 2 ranks"* ]] &&
		[ "$(grep -c 'allreduce=3 (expected 3) OK' <<<"$out")" = 2 ]; then
		tap_ok "distenv-check under the simulator: PASS on 2 pseudo-nodes"
	elif [ "$rc" -ne 0 ] && [[ $out == *"FAIL master-loopback: MASTER_ADDR=127.0.0.1 is 127.0.0.1 (loopback) but the job spans 2 nodes"* ]]; then
		tap_skip "distenv-check under the simulator on 2 pseudo-nodes" \
			"distenv-check refuses loopback MASTER_ADDR on a 2-node job: it must skip its loopback checks when DISTENV_SIMULATED is set"
	else
		tap_fail "distenv-check under the simulator: PASS on 2 pseudo-nodes (rc=$rc)" "$out"
	fi
else
	tap_fail "distenv-check built at $check"
	tap_fail "distenv-check built at $check"
fi

# --- PyTorch gloo through env:// ----------------------------------------------------
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	simulate --nodes 2 --timeout 120 -- env DISTENV_TIMEOUT=60 /usr/bin/python3 "$root/scripts/torch-allreduce-check.py"
	if [ "$rc" -eq 0 ] && [ "$(grep -c 'backend=gloo allreduce=3 (expected 3) OK' <<<"$out")" = 2 ] &&
		grep -q '^\[node1/rank1\] \[rank 1/2\]' <<<"$out"; then
		tap_ok "torch gloo all_reduce under the simulator on 2 pseudo-nodes: both print 3"
	else
		tap_fail "torch gloo all_reduce under the simulator on 2 pseudo-nodes (rc=$rc)" "$out"
	fi
else
	tap_skip "torch gloo all_reduce under the simulator" "Debian's python3-torch is not installed"
fi

# --- the device-by-RANK bug fails as on a cluster; LOCAL_RANK works ---------------
# A failing rank stops the others at once; slow_fail lets them finish first,
# so that what the good ranks print can be checked too.
slow_fail='"$@"; rc=$?; if [ "$rc" -ne 0 ]; then sleep 4; fi; exit "$rc"'
simulate --nodes 2 --timeout 120 -- bash -c "$slow_fail" - /usr/bin/python3 "$devcheck" --device-by rank
tap_like "$out" $'\\[node1/rank1\\] RuntimeError: CUDA error: invalid device ordinal' \
	"device by RANK: rank 1 fails with CUDA's 'invalid device ordinal'"
tap_like "$out" $'\\[node0/rank0\\] \\[rank 0/2\\] node=node0 local_rank=0 device=cuda:0 \\(by rank\\) -> simulated GPU 0 of 1 on this node[^\n]* OK' \
	"device by RANK: rank 0 (cuda:0) still works, as on a cluster"
if [ "$rc" -ne 0 ] && [[ $out == *"distenv-simulate: failed: node1/rank1 (exit status 1)"* ]]; then
	tap_ok "device by RANK: the simulator exits non-zero ($rc) naming node1/rank1"
else
	tap_fail "device by RANK: the simulator exits non-zero naming node1/rank1 (rc=$rc)" "$out"
fi
simulate --nodes 2 --gpus-per-node 2 --timeout 120 -- bash -c "$slow_fail" - /usr/bin/python3 "$devcheck" --device-by rank
if [ "$rc" -ne 0 ] && [[ $out == *"[node1/rank2] RuntimeError: CUDA error: invalid device ordinal"* ]] &&
	[[ $out == *"[node0/rank1] [rank 1/4] node=node0 local_rank=1 device=cuda:1"*" OK"* ]]; then
	tap_ok "device by RANK, 2 per node: node0's ranks work, node1's fail (cuda:2 of 2)"
else
	tap_fail "device by RANK, 2 per node: node0's ranks work, node1's fail (rc=$rc)" "$out"
fi
simulate --nodes 2 --timeout 120 -- /usr/bin/python3 "$devcheck" --device-by local_rank
if [ "$rc" -eq 0 ] && [ "$(grep -c 'device=cuda:0 (by local_rank) -> simulated GPU [01] of 1 on this node.* OK' <<<"$out")" = 2 ] &&
	[[ $out != *"invalid device ordinal"* ]]; then
	tap_ok "device by LOCAL_RANK: every pseudo-node uses its cuda:0, exit 0"
else
	tap_fail "device by LOCAL_RANK: every pseudo-node uses its cuda:0 (rc=$rc)" "$out"
fi
out=$(env -u DISTENV_VISIBLE_DEVICES RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES="" \
	/usr/bin/python3 "$devcheck" --device-by rank 2>&1) && rc=0 || rc=$?
tap_like "$rc $out" "^0 .*nothing to check" "device check outside the simulator without a GPU: nothing to check, exit 0"

# --- one failure stops the others; timeout -------------------------------------------
start=$SECONDS
simulate --nodes 3 -- bash -c 'if [ "$RANK" = 1 ]; then sleep 1; echo "rank 1 gives up"; exit 3; fi; echo "pid $$"; exec sleep 120'
took=$((SECONDS - start))
pids=$(grep -o 'pid [0-9]*' <<<"$out" | cut -d' ' -f2 | tr '\n' ' ')
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left+="$p "; done
if [ "$rc" = 1 ] && [[ $out == *"distenv-simulate: failed: node1/rank1 (exit status 3)"* ]] &&
	[[ $out == *"[node1/rank1] rank 1 gives up"* ]] && [ "$took" -lt 60 ] &&
	[ "$(wc -w <<<"$pids")" = 2 ] && [ -z "$left" ]; then
	tap_ok "a failed rank stops the others (${took}s), exit 1 naming node1/rank1"
else
	tap_fail "a failed rank stops the others (rc=$rc, ${took}s, still running: ${left:-none})" "$out"
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
fi
start=$SECONDS
simulate --nodes 2 --timeout 2 -- sleep 120
took=$((SECONDS - start))
if [ "$rc" = 124 ] && [[ $out == *"timed out after 2s"* ]] && [ "$took" -lt 30 ]; then
	tap_ok "--timeout 2: everything stopped, exit 124 (${took}s)"
else
	tap_fail "--timeout 2: everything stopped, exit 124 (rc=$rc, ${took}s)" "$out"
fi

# --- GPUs: a fake nvidia-smi ---------------------------------------------------------
fake_smi() { # N: an nvidia-smi -L listing N GPUs
	mkdir -p "$tmp/gpu$1"
	{
		echo '#!/bin/sh'
		echo '[ "$1" = -L ] || exit 1'
		for ((i = 0; i < $1; i++)); do
			echo "echo 'GPU $i: NVIDIA Fake (UUID: GPU-fake-$i)'"
		done
	} >"$tmp/gpu$1/nvidia-smi"
	chmod +x "$tmp/gpu$1/nvidia-smi"
}
fake_smi 1
fake_smi 4
out=$(PATH=$tmp/gpu1:$nogpu_path timeout 60 "$sim" --nodes 2 -- true 2>&1) && rc=0 || rc=$?
tap_like "$rc $out" "^2 .*2 nodes x 1 GPU\(s\) need 2 GPUs; this machine has 1 \(nvidia-smi -L\).*--cpu" \
	"1 GPU for 2 nodes: refused (exit 2), saying why and offering --cpu"
out=$(PATH=$tmp/gpu1:$nogpu_path timeout 60 "$sim" --nodes 2 --cpu -- bash -c "$show" 2>&1) && rc=0 || rc=$?
tap_is "$rc $(grep -c 'CUDA_VISIBLE_DEVICES= DISTENV_VISIBLE_DEVICES=[01] DISTENV_SIMULATED_GPUS=1 ' <<<"$out")" "0 2" \
	"--cpu with a GPU present: CPU path, no GPU visible"
out=$(PATH=$tmp/gpu4:$nogpu_path timeout 60 "$sim" --nodes 2 --gpus-per-node 2 -- bash -c "$show" 2>&1) && rc=0 || rc=$?
got=$(grep -o '^\[node[0-9]/rank[0-9]\]\|CUDA_VISIBLE_DEVICES=[^ ]*\|DISTENV_SIMULATED_GPUS=[^ ]*' <<<"$out" | paste -d' ' - - - | sort | tr '\n' '|')
tap_is "$rc $got" "0 [node0/rank0] CUDA_VISIBLE_DEVICES=GPU-fake-0,GPU-fake-1 DISTENV_SIMULATED_GPUS=unset|[node0/rank1] CUDA_VISIBLE_DEVICES=GPU-fake-0,GPU-fake-1 DISTENV_SIMULATED_GPUS=unset|[node1/rank2] CUDA_VISIBLE_DEVICES=GPU-fake-2,GPU-fake-3 DISTENV_SIMULATED_GPUS=unset|[node1/rank3] CUDA_VISIBLE_DEVICES=GPU-fake-2,GPU-fake-3 DISTENV_SIMULATED_GPUS=unset|" \
	"4 GPUs, 2 nodes x 2: each pseudo-node sees only its own two (by UUID)"
out=$(CUDA_VISIBLE_DEVICES=5,7 PATH=$tmp/gpu4:$nogpu_path timeout 60 "$sim" --nodes 2 -- printenv CUDA_VISIBLE_DEVICES 2>&1) && rc=0 || rc=$?
tap_is "$rc $(grep '^\[' <<<"$out" | sort | tr '\n' '|')" "0 [node0/rank0] 5|[node1/rank1] 7|" \
	"CUDA_VISIBLE_DEVICES=5,7 already set: the pool is those two"

# --- usage -----------------------------------------------------------------------
simulate -- true
tap_like "$rc $out" "^2 .*--nodes N is required" "no --nodes: usage error (exit 2)"
simulate --nodes 0 -- true
tap_like "$rc $out" "^2 .*--nodes=0: expected 1..256" "--nodes 0 refused"
simulate --nodes 2 --port 80 -- true
tap_like "$rc $out" "^2 .*--port=80: expected 1024..65535" "--port 80 refused"
simulate --nodes 2 -- /nonexistent/program
tap_like "$rc $out" "^127 .*cannot run /nonexistent/program" "missing PROGRAM: exit 127, named"
simulate --nodes 2 --port 23456 -- printenv MASTER_PORT
tap_is "$rc $(grep -c '^\[node[01]/rank[01]\] 23456$' <<<"$out")" "0 2" "--port 23456 gives MASTER_PORT=23456"
simulate --help
tap_like "$rc $out" "^0 .*invalid device ordinal.*DISTENV_VISIBLE_DEVICES" "--help documents the device emulation"
tap_done
