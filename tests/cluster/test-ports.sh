#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Task-side expressions are single-quoted on purpose: they expand in the task.
# shellcheck disable=SC2016
# MASTER_PORT under concurrency, and the rank-order note, on a real
# two-node cluster: 16 concurrent steps of one job and 4 concurrent jobs
# sharing both nodes, each an `srun --dist-check`, all PASS on distinct
# ports; then the same cluster with Slurm's reserved ports (up --resv-ports),
# where MASTER_PORT is each step's first reserved port. Last, -m cyclic:
# the note on the PASS line, in --json-summary and in the verbose output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_require --nodes 2 --cpus 4
cluster_need_check
tmp=$(mktemp -d /tmp/distenv-test-ports.XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
RESV=12000-12999
OPTS="--timeout=60"

# One line per task of the step: "port STEP RANK MASTER_PORT RESV".
report='echo "port $SLURM_JOB_ID.$SLURM_STEP_ID $RANK $MASTER_PORT ${SLURM_STEP_RESV_PORTS-none}"'

# ports_check NAME N OUT: N steps, each with 2 ranks agreeing on one
# MASTER_PORT and one PASS line; the N ports distinct. Prints the ports.
ports_check() {
	local name=$1 n=$2 out=$3 steps ports passes bad=""
	passes=$(grep -c 'distenv-check: PASS: 2 ranks on 2 nodes' <<<"$out" || true)
	steps=$(grep '^port ' <<<"$out" | awk '{print $2}' | sort -u | wc -l)
	ports=$(grep '^port ' <<<"$out" | awk '{print $2, $4}' | sort -u)
	# Each step one port, all steps different ports.
	[ "$(wc -l <<<"$ports")" -eq "$steps" ] || bad+=" a step's ranks disagree on MASTER_PORT;"
	[ "$(awk '{print $2}' <<<"$ports" | sort -u | wc -l)" -eq "$steps" ] || bad+=" two steps share a port;"
	[ "$steps" -eq "$n" ] || bad+=" $steps steps reported, want $n;"
	[ "$passes" -eq "$n" ] || bad+=" $passes PASS lines, want $n;"
	if [ -z "$bad" ]; then
		tap_ok "$name: $n concurrent --dist-check steps PASS on $n distinct ports ($(awk '{print $2}' <<<"$ports" | sort -n | tr '\n' ' '))"
	else
		tap_fail "$name:$bad" "$out"
	fi
	PORTS=$(awk '{print $2}' <<<"$ports")
}

# many_steps: 16 steps of one job at once on both nodes (--overlap: they
# share the job's CPUs), each waiting for the others before its check.
many_steps() {
	cat >"$tmp/steps.sh" <<JOB
#!/bin/bash
for i in \$(seq 16); do
	srun --overlap -N2 -n2 --ntasks-per-node=1 --dist-check=socket bash -c '$report' >"$tmp/step.\$i" 2>&1 &
done
wait
JOB
	rm -f "$tmp"/step.*
	local id
	id=$(cx env DISTENV_CHECK_OPTS="$OPTS" sbatch --parsable -N2 --ntasks-per-node=1 -o "$tmp/steps.out" "$tmp/steps.sh" 2>&1)
	if ! [[ $id =~ ^[0-9]+$ ]] || ! cluster_wait_job "$id" 180; then
		tap_diag "steps job: $id" "$(cat "$tmp/steps.out" 2>/dev/null)"
	fi
	cat "$tmp"/step.* 2>/dev/null
}

# many_jobs: 4 jobs sharing both nodes (one CPU of each), each waiting until
# all 4 run before its one --dist-check step.
many_jobs() {
	cat >"$tmp/job.sh" <<JOB
#!/bin/bash
touch "$tmp/running.\$SLURM_JOB_ID"
for _ in \$(seq 600); do
	[ "\$(ls "$tmp"/running.* | wc -l)" -ge 4 ] && break
	sleep 0.1
done
echo "together: \$(ls "$tmp"/running.* | wc -l)"
srun -N2 -n2 --dist-check=socket bash -c '$report'
JOB
	rm -f "$tmp"/running.* "$tmp"/job.*.out
	local ids=() id i
	for i in 1 2 3 4; do
		id=$(cx env DISTENV_CHECK_OPTS="$OPTS" sbatch --parsable -N2 --ntasks-per-node=1 -o "$tmp/job.$i.out" "$tmp/job.sh" 2>&1)
		if [[ $id =~ ^[0-9]+$ ]]; then ids+=("$id"); else tap_diag "sbatch: $id"; fi
	done
	for id in "${ids[@]}"; do cluster_wait_job "$id" 180 || true; done
	cat "$tmp"/job.*.out 2>/dev/null
}

# --- the hash (no reserved ports) ----------------------------------------------
out=$(many_steps)
ports_check "one job, 16 steps" 16 "$out"
bad=$(awk '$1 < 20000 || $1 > 29399 {print}' <<<"$PORTS")
tap_is "$bad" "" "one job, 16 steps: every port in the default range 20000-29399 (not torchrun's 29400/29500)"
out=$(many_jobs)
ports_check "4 jobs on the same 2 nodes" 4 "$out"
tap_is "$(grep -c '^together: 4' <<<"$out")" 4 "4 jobs: all four ran at once"

# --- Slurm's reserved ports ------------------------------------------------------
if ! cluster_up --nodes 2 --cpus 4 --resv-ports "$RESV"; then
	tap_fail "local cluster comes up with --resv-ports $RESV"
	tap_done
	exit 1
fi
tap_like "$(cx scontrol show config 2>&1)" "MpiParams +=.*ports=$RESV" "up --resv-ports $RESV: slurmctld runs with MpiParams=ports=$RESV"
out=$(cx srun -N2 -n4 --dist-env=verbose bash -c "$report" 2>&1)
cluster_example ports-resv "$out"
lines=$(grep '^port ' <<<"$out")
first=$(awk 'NR == 1 {split($5, a, /[-,]/); print a[1]}' <<<"$lines")
if [ "$(wc -l <<<"$lines")" -eq 4 ] && [[ $first =~ ^[0-9]+$ ]] && ((first >= 12000 && first <= 12999)) &&
	[ "$(awk -v p="$first" '$4 == p {n++} END {print n + 0}' <<<"$lines")" -eq 4 ]; then
	tap_ok "--resv-ports $RESV: MASTER_PORT is the step's first reserved port ($first) on all 4 ranks"
else
	tap_fail "--resv-ports $RESV: MASTER_PORT = first of SLURM_STEP_RESV_PORTS" "$out"
fi
tap_like "$out" "distenv: note: MASTER_PORT $first: the step's first reserved port \(SLURM_STEP_RESV_PORTS=$first" \
	"--dist-env=verbose says the port is Slurm's reservation"
out=$(cx srun -N2 -n2 --dist-port=23456 printenv MASTER_PORT 2>&1 | sort -u)
tap_is "$out" 23456 "--dist-port still wins over the reserved ports"
out=$(many_steps)
ports_check "reserved ports, one job, 16 steps" 16 "$out"
out=$(many_jobs)
ports_check "reserved ports, 4 jobs on the same 2 nodes" 4 "$out"
bad=$(grep '^port ' <<<"$out" | awk '{split($5, a, /[-,]/); if ($4 != a[1]) print}')
tap_is "$bad" "" "reserved ports, 4 jobs: each MASTER_PORT its step's first reserved port"

# --- rank order ------------------------------------------------------------------
cluster_up --nodes 2 --cpus 4 || tap_fail "local cluster comes back without reserved ports"
out=$(cx env DISTENV_CHECK_OPTS="$OPTS --json-summary=$tmp/cyclic.json" srun -N2 -n4 --ntasks-per-node=2 -m cyclic --dist-check=socket --dist-env=verbose true 2>&1)
cluster_example ports-cyclic "$out"
tap_like "$out" "distenv-check: PASS: 4 ranks .*; note: ranks are not one contiguous block per node as under torchrun \(node1 has ranks 0, 2\).*srun -m block" \
	"-m cyclic: the PASS line notes ranks that are not one block per node, and the fix"
tap_like "$out" "distenv: note: ranks on this node are (0,2|1,3), not one contiguous block" \
	"-m cyclic: --dist-env=verbose notes it at task start"
json=$(cat "$tmp/cyclic.json" 2>/dev/null)
if /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["ok"] and d["ranks_contiguous"] is False and "not one contiguous block" in d["notes"][0]))' "$tmp/cyclic.json" 2>/dev/null; then
	tap_ok "-m cyclic: --json-summary has ranks_contiguous false and the note, ok true"
else
	tap_fail "-m cyclic: --json-summary ranks_contiguous/notes" "$json"
fi
out=$(cx env DISTENV_CHECK_OPTS="$OPTS --json-summary=$tmp/block.json" srun -N2 -n4 --ntasks-per-node=2 -m block --dist-check=socket --dist-env=verbose true 2>&1)
if [[ $out == *"distenv-check: PASS: 4 ranks"* && $out != *"contiguous"* ]] &&
	/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["ranks_contiguous"] is True and d["notes"] == []))' "$tmp/block.json" 2>/dev/null; then
	tap_ok "-m block: PASS without a note, ranks_contiguous true"
else
	tap_fail "-m block: no rank-order note" "$out" "$(cat "$tmp/block.json" 2>/dev/null)"
fi
# --- a port inside a node's ephemeral ports ---------------------------------------
# Every node is its own network namespace, with its own
# net.ipv4.ip_local_port_range: widen node1's over the whole default range.
eph=$(nx node1 cat /proc/sys/net/ipv4/ip_local_port_range 2>&1 | tr -s '\t ' ' ')
if nx node1 sysctl -q -w net.ipv4.ip_local_port_range="20000 60999" >/dev/null 2>&1; then
	out=$(cx env DISTENV_CHECK_OPTS="$OPTS" srun -N2 -n2 --dist-check=socket --dist-env=verbose true 2>&1)
	nx node1 sysctl -q -w net.ipv4.ip_local_port_range="$eph" >/dev/null 2>&1 ||
		tap_diag "could not restore node1's ip_local_port_range ($eph)"
	tap_like "$out" "distenv: note: the MASTER_PORT range 20000-29399 overlaps this node's ephemeral ports 20000-60999" \
		"node1's ephemeral ports over the range: --dist-env=verbose says so"
	tap_like "$out" "distenv-check: PASS: 2 ranks .*; note: MASTER_PORT [0-9]+ is inside node1's ephemeral ports 20000-60999" \
		"node1's ephemeral ports over MASTER_PORT: distenv-check's PASS line says so"
	tap_is "$(grep -c "overlaps this node's ephemeral ports" <<<"$out")" 1 \
		"only node1's task reports it (node2 keeps its own range)"
else
	tap_fail "set node1's net.ipv4.ip_local_port_range (was: $eph)"
fi
tap_check "cluster healthy at the end: all nodes idle, none drained" cluster_healthy
tap_done
