#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sbatch templates (templates/*/run*.slurm) on the real local cluster.
#
# Static, for every template: bash -n, shellcheck -x, and the launcher block
# at the bottom is the same in all of them. Then, on the 2-node cluster
# (2 nodes x 4 CPUs, no GPUs, no gres):
#   - every template passes `sbatch --test-only` (the GPU ones with their
#     GPU lines neutralised on the command line: --gres=none or
#     --gpus-per-node=0, and --ntasks-per-node=2 to fit 4 CPUs);
#   - the CPU templates (generic/run-cpu.slurm, cpu-dryrun/run.slurm) run
#     as they are, with LAUNCH=tasks and LAUNCH=torchrun, through the
#     plugin: the job completes, distenv-check prints its line for every
#     rank, then the PyTorch program prints its line for every rank;
#   - the GPU templates run too, on CPUs, with the same overrides plus
#     DIST_CHECK=socket: their platform parts must be inert here. The OCI
#     one runs with a stand-in for the stack's rack-ordering tool that puts
#     node2 first, so rank 0 runs on node2 (arbitrary distribution);
#   - a failed preflight fails the job and the program never starts;
#   - without the plugin (sbatch --dist-env=off, DISTENV_LAUNCHER=exec) the
#     CPU templates run through distenv-exec (skipped until it is built).
# The program is the default one (scripts/torch-allreduce-check.py, found
# from the submit directory) run by Debian's /usr/bin/python3 with torch.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

src=$DISTENV_SRCDIR
build=$DISTENV_BUILD_DIR
cd "$src" || exit 1
TEMPLATES="generic/run.slurm generic/run-cpu.slurm cpu-dryrun/run.slurm parallelcluster/run.slurm cluster-toolkit/run.slurm oci-hpc/run.slurm"
CPU_TEMPLATES="generic/run-cpu.slurm cpu-dryrun/run.slurm"

# --- static --------------------------------------------------------------------
# The launcher: from its banner line to the end of the file.
launcher() { sed -n '/^# distenv launcher: the same in every template/,$p' "templates/$1"; }
ref=$(launcher generic/run.slurm)
for t in $TEMPLATES; do
	if [ ! -f "templates/$t" ]; then
		tap_fail "templates/$t exists"
		continue
	fi
	tap_check "$t: bash -n" bash -n "templates/$t"
	if command -v shellcheck >/dev/null; then
		tap_check "$t: shellcheck -x" shellcheck -x "templates/$t"
	else
		tap_skip "$t: shellcheck -x" "shellcheck not installed"
	fi
	if [ -n "$ref" ] && [ "$(launcher "$t")" = "$ref" ]; then
		tap_ok "$t: launcher block identical to generic/run.slurm's"
	else
		tap_fail "$t: launcher block identical to generic/run.slurm's" \
			"$(diff <(echo "$ref") <(launcher "$t") | head -20)"
	fi
	edits=$(grep -c 'EDIT [12]' "templates/$t")
	if [ "$edits" -ge 2 ] && grep -q '^#SBATCH --nodes=.*EDIT 2' "templates/$t" && grep -q '^PROGRAM=' "templates/$t"; then
		tap_ok "$t: the two places to edit are marked (PROGRAM, --nodes)"
	else
		tap_fail "$t: EDIT 1 (PROGRAM) and EDIT 2 (#SBATCH --nodes) marked"
	fi
done

# --- the cluster ---------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	tap_skip "templates on the local cluster" "needs root (network namespaces, Slurm daemons)"
	tap_done
	exit
fi
# On another Slurm the tasks use its root's python3-torch (checked there).
if [ "$CLUSTER_SLURM" = host ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	tap_skip "templates on the local cluster" "Debian's python3-torch is not installed (scripts/setup installs it)"
	tap_done
	exit
fi
cluster_require --nodes 2 --cpus 4
tmp=$(mktemp -d)
cleanup() {
	nx node2 nft delete table inet distenv_tpl >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# Debian's torch builds need help to run torchrun (cluster_torchrun_env
# says which and why); the fix is said as a diagnostic.
cluster_torch_env
cluster_torchrun_env "$tmp"
case $TORCHRUN_FIX in
shim) tap_diag "torch $TORCH_VERSION: its torchrun fails under this Python (Std.from_str(\"0\") is None): LAUNCH=torchrun uses TORCHRUN=\"$TORCHRUN\"" ;;
sitecustomize) tap_diag "torch $TORCH_VERSION: built without libuv: LAUNCH=torchrun runs with ${TORCHRUN_ENV[*]} (TCPStore without libuv in torchrun and its workers)" ;;
*) tap_diag "torch $TORCH_VERSION: LAUNCH=torchrun runs its own torchrun as it is" ;;
esac

# GPU lines made to fit a CPU-only cluster, from the command line.
gpu_overrides() { # TEMPLATE -> sbatch options
	local f=templates/$1
	grep -q '^#SBATCH --gres=gpu' "$f" && printf '%s\n' --gres=none
	grep -q '^#SBATCH --gpus-per-node=' "$f" && printf '%s\n' --gpus-per-node=0
	grep -q '^#SBATCH --ntasks-per-node=8' "$f" && printf '%s\n' --ntasks-per-node=2
	return 0
}

for t in $TEMPLATES; do
	mapfile -t ov < <(gpu_overrides "$t")
	out=$(cx sbatch --test-only "${ov[@]}" "templates/$t" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -eq 0 ] && [[ $out == *"to start at"* ]]; then
		tap_ok "$t: sbatch --test-only ${ov[*]}"
	else
		tap_fail "$t: sbatch --test-only ${ov[*]} (rc=$rc)" "$out"
	fi
done

# ranks_ok OUT BACKEND N [SUM]: "[rank i/N] ... backend=BACKEND ... OK" once
# for every rank 0..N-1 (and allreduce=SUM when given). Not anchored to
# line starts: processes sharing one stdout (torchrun's workers, unbuffered
# Python) can write one line's text and its newline apart.
ranks_ok() {
	local re="\[rank [0-9]+/$3\] node=[^ ]+ local_rank=[0-9]+/[0-9]+ device=[^ ]+ backend=$2 allreduce=${4:-[0-9.e+-]+} \(expected ${4:-[0-9.e+-]+}\) OK" got
	got=$(grep -oE "$re" <<<"$1" | grep -oE '^\[rank [0-9]+' | grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
	[ "$got" = "$(seq -s ' ' 0 $(($3 - 1))) " ]
}

# submit NAME TEMPLATE [SBATCH OPTIONS...]: run a template (environment
# from the caller, e.g. `LAUNCH=torchrun submit ...`); its output in OUT,
# 0 when the job completed with exit code 0.
OUT=""
submit() {
	local name=$1 t=$2 id
	shift 2
	rm -f "$tmp/$name.out"
	local extra=("${TORCH_ENV[@]}")
	[ "${LAUNCH:-tasks}" = torchrun ] && extra+=("${TORCHRUN_ENV[@]}")
	# Submitted from a scratch folder, as a user would from theirs: what a
	# template writes beside the job (oci-hpc's rack order) stays out of
	# the checkout, whose files other lanes read meanwhile (build-deb's key).
	mkdir -p "$tmp/submit"
	id=$(cd "$tmp/submit" && cx env "${extra[@]}" PYTHON=/usr/bin/python3 \
		PROGRAM="${PROGRAM:-$src/scripts/torch-allreduce-check.py}" DISTENV_CHECK_OPTS="${DISTENV_CHECK_OPTS:---timeout=60}" \
		sbatch --parsable -o "$tmp/$name.out" "$@" "$src/templates/$t" 2>&1)
	if ! [[ $id =~ ^[0-9]+$ ]]; then
		OUT="sbatch: $id"
		return 1
	fi
	local start=$SECONDS rc=0
	cluster_wait_job "$id" 150 || rc=$?
	tap_diag "job $id ($name): $((SECONDS - start)) s"
	OUT=$(cat "$tmp/$name.out" 2>&1)
	return "$rc"
}

# run_case DESC LAUNCHER CHECK_N PROG_N NAME TEMPLATE [SBATCH OPTIONS...]
run_case() {
	local desc=$1 by=$2 cn=$3 pn=$4 name=$5 rc=0
	shift 5
	submit "$name" "$@" || rc=$?
	if [ "$rc" -eq 0 ] && [[ $OUT == *"environment by $by"* ]] && ranks_ok "$OUT" socket "$cn" \
		&& ranks_ok "$OUT" gloo "$pn" $((pn * (pn + 1) / 2)) && [[ $OUT == *"run.slurm: done"* ]]; then
		tap_ok "$desc: $cn preflight lines, then $pn program lines"
	else
		tap_fail "$desc (job ok: $((rc == 0)), want $cn distenv-check lines and $pn program lines, environment by $by)" "$OUT"
	fi
}

# --- CPU templates as they are, through the plugin --------------------------------
LAUNCH=tasks run_case "generic/run-cpu.slurm LAUNCH=tasks (2 nodes x 2 tasks)" plugin 4 4 cpu-tasks generic/run-cpu.slurm
LAUNCH=torchrun run_case "generic/run-cpu.slurm LAUNCH=torchrun (2 torchruns x 2 workers)" plugin 2 4 cpu-torchrun generic/run-cpu.slurm
LAUNCH=tasks run_case "cpu-dryrun/run.slurm LAUNCH=tasks (2 nodes x 1 task)" plugin 2 2 dry-tasks cpu-dryrun/run.slurm
LAUNCH=torchrun run_case "cpu-dryrun/run.slurm LAUNCH=torchrun (2 torchruns x 2 workers)" plugin 2 4 dry-torchrun cpu-dryrun/run.slurm
# The rank layout the program saw: RANK and LOCAL_RANK split across nodes.
got=$(grep -oE '\[rank [0-9]+/4\] node=node[12] local_rank=[0-9]/2 device=cpu backend=gloo' "$tmp/cpu-torchrun.out" 2>/dev/null | sed 's/ device=.*//' | sort | tr '\n' ';')
tap_is "$got" "[rank 0/4] node=node1 local_rank=0/2;[rank 1/4] node=node1 local_rank=1/2;[rank 2/4] node=node2 local_rank=0/2;[rank 3/4] node=node2 local_rank=1/2;" \
	"LAUNCH=torchrun: ranks 0-1 on node1, 2-3 on node2, local ranks 0-1 on each"

# --- GPU templates on CPUs: platform parts inert -----------------------------------
for t in generic/run.slurm parallelcluster/run.slurm cluster-toolkit/run.slurm; do
	mapfile -t ov < <(gpu_overrides "$t")
	DIST_CHECK=socket LAUNCH=tasks run_case "$t on CPUs (${ov[*]}, DIST_CHECK=socket)" plugin 4 4 "gpu-${t%%/*}" "$t" "${ov[@]}"
done
DIST_CHECK=socket LAUNCH=torchrun run_case "cluster-toolkit/run.slurm LAUNCH=torchrun on CPUs" plugin 2 4 gcp-torchrun \
	cluster-toolkit/run.slurm --gpus-per-node=0 --ntasks-per-node=2

# OCI: a stand-in for node_ordering_by_rack.py that puts the nodes in
# reverse order, so task 0 runs on node2 while the node list says node[1-2].
cat >"$tmp/order.py" <<'PY'
import sys
hosts = [h.strip() for h in open(sys.argv[sys.argv.index("--input_file") + 1]) if h.strip()]
open("ordered_hostfile_system_name", "w").write("\n".join(reversed(hosts)) + "\n")
PY
for launch in tasks torchrun; do
	cn=4
	[ "$launch" = torchrun ] && cn=2
	OCI_NODE_ORDER=$tmp/order.py DIST_CHECK=socket LAUNCH=$launch run_case \
		"oci-hpc/run.slurm LAUNCH=$launch on CPUs, rack order node2 first (arbitrary distribution)" \
		plugin "$cn" 4 "oci-$launch" oci-hpc/run.slurm --gres=none --ntasks-per-node=2
	if [[ $OUT == *"rack order: node2 node1"* ]] && grep -qE '\[rank 0/4\] node=node2 [^[]*backend=gloo' <<<"$OUT" \
		&& grep -qE "\[rank 0/$cn\] node=node2 [^[]*backend=socket" <<<"$OUT"; then
		tap_ok "oci-hpc/run.slurm LAUNCH=$launch: rank 0 of the preflight and of the program on node2"
	else
		tap_fail "oci-hpc/run.slurm LAUNCH=$launch: rank 0 on node2" "$OUT"
	fi
done

# --- failures ----------------------------------------------------------------------
# node2 drops inbound data connections: the preflight names it, the job
# fails, the program never starts.
nx node2 nft add table inet distenv_tpl
nx node2 nft add chain inet distenv_tpl input '{ type filter hook input priority 0; }'
nx node2 nft add rule inet distenv_tpl input ct state new tcp dport 32768-60999 drop
DISTENV_CHECK_OPTS=--timeout=5 submit fw cpu-dryrun/run.slurm && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ $OUT == *"peer-timeout"* ]] && ! grep -q 'backend=gloo' <<<"$OUT" && [[ $OUT != *"run.slurm: done"* ]]; then
	tap_ok "a blocked data port: the job fails with peer-timeout and the program never starts"
else
	tap_fail "a blocked data port: job fails with peer-timeout, no program output" "$OUT"
fi
tap_like "$OUT" "run.slurm: the preflight cannot tell which of node\[1-2\] is at fault: sbatch --exclude=node\[1-2\] leaves them all out
run.slurm: failed \(exit [0-9]+\)" "a blocked data port: the template ends with the resubmit hint, then the failure"
nx node2 nft delete table inet distenv_tpl
PROGRAM=/nonexistent/train.py submit noprog cpu-dryrun/run.slurm && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ $OUT == *"PROGRAM=/nonexistent/train.py: no such file"* ]]; then
	tap_ok "a missing PROGRAM: the job fails at once, naming it"
else
	tap_fail "a missing PROGRAM fails the job with a message" "$OUT"
fi
DISTENV_LAUNCHER=exec DISTENV_EXEC=/nonexistent/distenv-exec submit noexec cpu-dryrun/run.slurm --dist-env=off && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ $OUT == *"/nonexistent/distenv-exec not found"* ]]; then
	tap_ok "DISTENV_LAUNCHER=exec without distenv-exec: the job fails at once, naming it"
else
	tap_fail "DISTENV_LAUNCHER=exec without distenv-exec fails the job with a message" "$OUT"
fi
# DISTENV_LAUNCHER unset (auto) where the job's srun has no plugin: the
# job's PATH starts with an srun that runs the real one on a copy of
# slurm.conf with an empty plugstack (a SLURM_CONF in the job's
# environment would not do: slurmstepd sets its own). sbatch itself reads
# the cluster's. The message says auto chose exec, and why.
conf=$(cx scontrol show config 2>/dev/null | sed -n 's/^SLURM_CONF *= *//p')
if [ -n "$conf" ] && cx cat "$conf" >"$tmp/noplug.conf" 2>/dev/null && [ -s "$tmp/noplug.conf" ]; then
	: >"$tmp/plugstack-none.conf"
	sed -i '/^[[:space:]]*[Pp]lug[Ss]tack[Cc]onfig/d' "$tmp/noplug.conf"
	echo "PlugStackConfig=$tmp/plugstack-none.conf" >>"$tmp/noplug.conf"
	mkdir -p "$tmp/noplug-bin"
	printf '#!/bin/sh\nSLURM_CONF=%s exec /usr/bin/srun "$@"\n' "$tmp/noplug.conf" >"$tmp/noplug-bin/srun"
	chmod 0755 "$tmp/noplug-bin/srun"
	if [[ $(cx "$tmp/noplug-bin/srun" --help 2>&1) == *--dist-env* ]]; then
		tap_fail "the plugin-less srun of this test has no --dist-env" "$(cx "$tmp/noplug-bin/srun" --help 2>&1 | grep -- --dist)"
	fi
	DISTENV_EXEC=/nonexistent/distenv-exec submit autoexec cpu-dryrun/run.slurm \
		--export=ALL,PATH="$tmp/noplug-bin:/usr/bin:/bin" && rc=0 || rc=$?
	if [ "$rc" -ne 0 ] && [[ $OUT == *"run.slurm: error: DISTENV_LAUNCHER=auto chose exec (this srun has no --dist-env: the distenv plugin is not loaded): /nonexistent/distenv-exec not found on PATH"* ]]; then
		tap_ok "DISTENV_LAUNCHER unset, srun without the plugin, no distenv-exec: says auto chose exec and why"
	else
		tap_fail "DISTENV_LAUNCHER unset, srun without the plugin: the message says auto chose exec and why" "$OUT"
	fi
else
	tap_skip "DISTENV_LAUNCHER unset, srun without the plugin" "scontrol show config names no readable SLURM_CONF"
fi

# --- without the plugin: distenv-exec ------------------------------------------------
if [ -x "$build/src/distenv-exec" ]; then
	for t in $CPU_TEMPLATES; do
		per=2
		[ "$t" = cpu-dryrun/run.slurm ] && per=1
		DISTENV_EXEC=$build/src/distenv-exec DISTENV_LAUNCHER=exec LAUNCH=tasks run_case \
			"$t LAUNCH=tasks, plugin off (--dist-env=off), distenv-exec" exec $((2 * per)) $((2 * per)) \
			"exec-tasks-${t%%/*}" "$t" --dist-env=off
		DISTENV_EXEC=$build/src/distenv-exec DISTENV_LAUNCHER=exec LAUNCH=torchrun run_case \
			"$t LAUNCH=torchrun, plugin off (--dist-env=off), distenv-exec" exec 2 4 \
			"exec-torchrun-${t%%/*}" "$t" --dist-env=off
	done
	# Arbitrary distribution without the plugin: distenv-exec reads SLURM_HOSTFILE.
	OCI_NODE_ORDER=$tmp/order.py DISTENV_EXEC=$build/src/distenv-exec DISTENV_LAUNCHER=exec DIST_CHECK=socket LAUNCH=tasks run_case \
		"oci-hpc/run.slurm, rack order node2 first, plugin off, distenv-exec" exec 4 4 exec-oci \
		oci-hpc/run.slurm --gres=none --ntasks-per-node=2 --dist-env=off
	if grep -qE '\[rank 0/4\] node=node2 [^[]*backend=gloo' <<<"$OUT" && grep -qE '\[rank 0/4\] node=node2 [^[]*backend=socket' <<<"$OUT"; then
		tap_ok "oci-hpc/run.slurm through distenv-exec: rank 0 of the preflight and of the program on node2"
	else
		tap_fail "oci-hpc/run.slurm through distenv-exec: rank 0 on node2" "$OUT"
	fi
else
	for t in $CPU_TEMPLATES; do
		for launch in tasks torchrun; do
			tap_skip "$t LAUNCH=$launch without the plugin, through distenv-exec" \
				"$build/src/distenv-exec is not built yet"
		done
	done
	tap_skip "oci-hpc/run.slurm (arbitrary distribution) through distenv-exec" "$build/src/distenv-exec is not built yet"
	tap_skip "oci-hpc/run.slurm through distenv-exec: rank 0 on node2" "$build/src/distenv-exec is not built yet"
fi

if cluster_healthy; then tap_ok "cluster healthy after the template jobs"; else tap_fail "cluster healthy after the template jobs"; fi
tap_done
