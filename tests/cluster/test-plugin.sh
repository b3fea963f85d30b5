#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Task-side expressions are single-quoted on purpose: they expand in the task.
# shellcheck disable=SC2016
# The distenv SPANK plugin on a real two-node Slurm cluster: every task's
# torchrun environment, across layouts, steps, batch jobs and options.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_require --nodes 2 --cpus 4

VARS="RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT OMP_NUM_THREADS"
VARS+=" ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCH_NCCL_ASYNC_ERROR_HANDLING"
VARS+=" TORCHELASTIC_USE_AGENT_STORE TORCHELASTIC_RUN_ID NCCL_ASYNC_ERROR_HANDLING"
# One line per task: host and the variables, sorted by RANK.
show='printf "%s" "$(hostname)"; for v in SLURM_PROCID SLURM_LOCALID '"$VARS"'; do printf " %s=%s" "$v" "${!v-unset}"; done; echo'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { # field LINE NAME
	local w
	for w in $1; do [ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }; done
	echo missing
}

# --- srun -N2 -n2 ------------------------------------------------------------
out=$(cx srun -N2 -n2 bash -c "$show" 2>&1 | grep -v '^srun: ' | sort -t= -k2 -n) || true
l0=$(grep '^node1 ' <<<"$out" || true)
l1=$(grep '^node2 ' <<<"$out" || true)
tap_is "$(field "$l0" RANK) $(field "$l1" RANK)" "0 1" "-N2 -n2: RANK 0 on node1, 1 on node2"
tap_is "$(field "$l0" LOCAL_RANK) $(field "$l1" LOCAL_RANK)" "0 0" "-N2 -n2: LOCAL_RANK 0 on both nodes"
tap_is "$(field "$l0" WORLD_SIZE) $(field "$l1" WORLD_SIZE)" "2 2" "-N2 -n2: WORLD_SIZE 2"
tap_is "$(field "$l0" LOCAL_WORLD_SIZE) $(field "$l1" LOCAL_WORLD_SIZE)" "1 1" "-N2 -n2: LOCAL_WORLD_SIZE 1"
tap_is "$(field "$l0" NODE_RANK)$(field "$l0" GROUP_RANK) $(field "$l1" NODE_RANK)$(field "$l1" GROUP_RANK)" "00 11" "-N2 -n2: NODE_RANK = GROUP_RANK = node index"
tap_is "$(field "$l0" GROUP_WORLD_SIZE)" "2" "-N2 -n2: GROUP_WORLD_SIZE 2"
tap_is "$(field "$l0" MASTER_ADDR) $(field "$l1" MASTER_ADDR)" "node1 node1" "-N2 -n2: MASTER_ADDR is task 0's host on every task"
p0=$(field "$l0" MASTER_PORT)
p1=$(field "$l1" MASTER_PORT)
if [ "$p0" = "$p1" ] && [[ "$p0" =~ ^[0-9]+$ ]] && [ "$p0" -ge 20000 ] && [ "$p0" -le 29399 ]; then
	tap_ok "-N2 -n2: one MASTER_PORT ($p0) for the step, in the default range 20000-29399"
else
	tap_fail "-N2 -n2: MASTER_PORT agreed and in range" "$out"
fi
tap_is "$(field "$l0" OMP_NUM_THREADS)" "unset" "-N2 -n2: OMP_NUM_THREADS left alone with one task per node"

# --- srun -N2 -n4 --ntasks-per-node=2 ------------------------------------------
out=$(cx srun -N2 -n4 --ntasks-per-node=2 bash -c "$show" 2>&1 | grep -v '^srun: ' | sort -t= -k2 -n) || true
ranks="" mapping=ok torchrun=ok
while read -r line; do
	[ -n "$line" ] || continue
	ranks+="$(field "$line" RANK)@${line%% *}/$(field "$line" LOCAL_RANK) "
	[ "$(field "$line" RANK)" = "$(field "$line" SLURM_PROCID)" ] || mapping=bad
	[ "$(field "$line" LOCAL_RANK)" = "$(field "$line" SLURM_LOCALID)" ] || mapping=bad
	[ "$(field "$line" LOCAL_WORLD_SIZE)" = 2 ] || mapping=bad
	[ "$(field "$line" WORLD_SIZE)" = 4 ] || mapping=bad
	[ "$(field "$line" OMP_NUM_THREADS)" = 1 ] || mapping=bad
	[ "$(field "$line" MASTER_ADDR)" = node1 ] || mapping=bad
	# The rest of torchrun's worker environment (one role, no agent).
	[ "$(field "$line" ROLE_RANK)/$(field "$line" ROLE_WORLD_SIZE)/$(field "$line" ROLE_NAME)" = \
		"$(field "$line" RANK)/4/default" ] || torchrun=bad
	[ "$(field "$line" TORCHELASTIC_RESTART_COUNT)/$(field "$line" TORCHELASTIC_MAX_RESTARTS)" = 0/0 ] || torchrun=bad
	[ "$(field "$line" TORCH_NCCL_ASYNC_ERROR_HANDLING)" = 1 ] || torchrun=bad
	[ "$(field "$line" TORCHELASTIC_USE_AGENT_STORE)/$(field "$line" TORCHELASTIC_RUN_ID)/$(field "$line" NCCL_ASYNC_ERROR_HANDLING)" = \
		unset/unset/unset ] || torchrun=bad
done <<<"$out"
tap_is "$ranks" "0@node1/0 1@node1/1 2@node2/0 3@node2/1 " "-N2 -n4 --ntasks-per-node=2: RANK/LOCAL_RANK split across nodes"
tap_is "$mapping" ok "-N2 -n4: RANK=SLURM_PROCID, LOCAL_RANK=SLURM_LOCALID, sizes 4/2, OMP_NUM_THREADS=1, MASTER_ADDR node1"
if [[ $torchrun == ok && -n $out ]]; then
	tap_ok "-N2 -n4: ROLE_RANK=RANK, ROLE_WORLD_SIZE=4, ROLE_NAME=default, TORCHELASTIC_RESTART_COUNT/MAX_RESTARTS 0/0, TORCH_NCCL_ASYNC_ERROR_HANDLING=1; no agent store, run id or deprecated NCCL name"
else
	tap_fail "-N2 -n4: torchrun's role, restart and NCCL error-handling variables" "$out"
fi

# --- a user-set MASTER_PORT is kept; force=1 overrides it ----------------------
out=$(cx env MASTER_PORT=12345 srun -N2 -n2 printenv MASTER_PORT 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "12345" "user's MASTER_PORT kept"
out=$(cx env OMP_NUM_THREADS=3 srun -N1 -n2 printenv OMP_NUM_THREADS 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "3" "user's OMP_NUM_THREADS kept"
out=$(cx env TORCH_NCCL_ASYNC_ERROR_HANDLING=0 srun -N1 -n2 printenv TORCH_NCCL_ASYNC_ERROR_HANDLING 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "0" "user's TORCH_NCCL_ASYNC_ERROR_HANDLING kept"
cluster_plugstack force=1
out=$(cx env MASTER_PORT=12345 srun -N2 -n2 printenv MASTER_PORT 2>&1 | grep -v '^srun: ' | sort -u)
if [[ "$out" =~ ^[0-9]+$ ]] && [ "$out" != 12345 ]; then
	tap_ok "force=1 overrides the user's MASTER_PORT (got $out)"
else
	tap_fail "force=1 overrides the user's MASTER_PORT" "$out"
fi
cluster_plugstack

# --- --dist-env=off, --dist-port, verbose --------------------------------------
out=$(cx srun -N2 -n2 --dist-env=off bash -c 'echo "${RANK-unset} ${MASTER_ADDR-unset}"' 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "unset unset" "--dist-env=off: nothing set"
out=$(cx srun -N2 -n2 --dist-port=23456 printenv MASTER_PORT 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "23456" "--dist-port=23456 sets MASTER_PORT"
out=$(cx srun -N2 -n2 --dist-port=80 true 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"--dist-port=80: out of range (expected 1024..65535)"* ]]; then
	tap_ok "--dist-port=80 refused by srun with a clear error"
else
	tap_fail "--dist-port=80 refused by srun with a clear error (rc=$rc)" "$out"
fi
out=$(cx srun -N1 -n1 --dist-env=verbose true 2>&1)
cluster_example plugin-verbose "$out"
tap_like "$out" "distenv: RANK=0 \(set\)" "--dist-env=verbose reports what was set"
out=$(cx env MASTER_PORT=12345 srun -N1 -n1 --dist-env=verbose true 2>&1)
cluster_example plugin-verbose-kept "$out"
tap_like "$out" "distenv: MASTER_PORT=12345 \(kept user's, distenv: [0-9]+\)" "--dist-env=verbose reports what was kept"
tap_like "$out" "distenv: note: MASTER_PORT [0-9]+: from the job and step ids in 20000-29399; no ports reserved by Slurm" \
	"--dist-env=verbose says where MASTER_PORT came from"
out=$(cx env MASTER_PORT=12345 srun -N1 -n1 --slurmd-debug=verbose true 2>&1)
tap_like "$out" "MASTER_PORT=12345 kept" "slurmd verbose log says what was kept"

# --- TORCHELASTIC_RUN_ID only on request ---------------------------------------
out=$(cx srun -N2 -n2 --dist-run-id bash -c 'echo "$SLURM_JOB_ID=${TORCHELASTIC_RUN_ID-unset}"' 2>&1 | grep -v '^srun: ' | sort -u)
if [[ $out =~ ^([0-9]+)=([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
	tap_ok "--dist-run-id: TORCHELASTIC_RUN_ID is the job id on every task"
else
	tap_fail "--dist-run-id: TORCHELASTIC_RUN_ID is the job id" "$out"
fi
cluster_plugstack run_id=1
out=$(cx srun -N2 -n2 bash -c 'echo "$SLURM_JOB_ID=${TORCHELASTIC_RUN_ID-unset}"' 2>&1 | grep -v '^srun: ' | sort -u)
if [[ $out =~ ^([0-9]+)=([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
	tap_ok "plugstack run_id=1: TORCHELASTIC_RUN_ID for every job"
else
	tap_fail "plugstack run_id=1: TORCHELASTIC_RUN_ID for every job" "$out"
fi
cluster_plugstack

# --- a port range into the kernel's ephemeral ports is reported -----------------
cluster_plugstack port_min=30000 port_max=40000
out=$(cx srun -N1 -n1 --dist-env=verbose true 2>&1)
tap_like "$out" "distenv: note: the MASTER_PORT range 30000-40000 overlaps this node's ephemeral ports [0-9]+-[0-9]+ \(net.ipv4.ip_local_port_range\)" \
	"port_min..port_max into the ephemeral ports: --dist-env=verbose says so"
cluster_plugstack

# --- the load line: which Slurm the plugin was built against, quiet by default -
ver=$(cx srun --version 2>&1 | awk '{print $NF}')
out=$(cx srun -v -N1 -n1 true 2>&1)
tap_like "$out" "distenv: [^ ]+ loaded, built against Slurm ${ver%.*}\.[0-9]+" \
	"srun -v: the plugin logs the Slurm it was built against (${ver%.*}.x, as this srun $ver)"
# (slurmstepd logs it from its init, before --slurmd-debug reaches the
# user's stderr: it is in slurmd's log file at SlurmdDebug=verbose.)
out=$(cx srun -N1 -n1 true 2>&1)
if [[ $out != *"built against Slurm"* ]]; then tap_ok "without -v the load line is not shown"
else tap_fail "without -v the load line is not shown" "$out"; fi

# --- a bad option value reaching slurmstepd fails the tasks, not the node ------
out=$(cx env _SLURM_SPANK_OPTION_distenv_dist_port=99999 srun -N2 -n2 true 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"--dist-port=99999: out of range"* ]]; then
	tap_ok "bad --dist-port in slurmstepd: tasks fail naming the value"
else
	tap_fail "bad --dist-port in slurmstepd: tasks fail naming the value (rc=$rc)" "$out"
fi
tap_check "no node drained or down after a failed step" cluster_healthy

# --- arbitrary distribution: task 0 on node2 -----------------------------------
# No -N: Slurm 24.11 and 26.05 refuse --nodes with --distribution=arbitrary
# (the host file says which nodes).
printf 'node2\nnode1\n' >"$tmp/hostfile"
out=$(cx env SLURM_HOSTFILE="$tmp/hostfile" srun -n2 -m arbitrary bash -c "$show" 2>&1 | grep -v '^srun: ' | sort -t= -k2 -n) || true
l0=$(grep 'RANK=0 ' <<<"$out" || true)
tap_is "${l0%% *} $(field "$l0" SLURM_PROCID)" "node2 0" "arbitrary: task 0 runs on node2"
tap_is "$(field "$(grep '^node1 ' <<<"$out")" MASTER_ADDR) $(field "$l0" MASTER_ADDR)" "node2 node2" "arbitrary: MASTER_ADDR is node2 on every task"
tap_is "$(field "$l0" NODE_RANK) $(field "$(grep '^node1 ' <<<"$out")" NODE_RANK)" "0 1" "arbitrary: task 0's node is NODE_RANK 0 (torchrun's store host), node1 is 1"

# --- heterogeneous step: rank 0 is component 0's first task --------------------
out=$(cx srun -N1 -n1 -w node2 : -N1 -n2 -w node1 bash -c "$show" 2>&1 | grep '^node' | sort -t= -k2 -n) || true
l0=$(grep 'SLURM_PROCID=0 ' <<<"$out" || true)
tap_is "${l0%% *} $(field "$l0" RANK)" "node2 0" "het: rank 0 on node2 (component 0)"
tap_is "$(awk '{print $1}' <<<"$out" | tr '\n' ' ')" "node2 node1 node1 " "het: three ranks, in order"
tap_is "$(grep -o 'MASTER_ADDR=[^ ]*' <<<"$out" | sort -u)" "MASTER_ADDR=node2" "het: MASTER_ADDR node2 on all ranks"
tap_is "$(grep -o ' WORLD_SIZE=[^ ]*' <<<"$out" | sort -u)" " WORLD_SIZE=3" "het: WORLD_SIZE spans both components"
tap_is "$(grep '^node1 ' <<<"$out" | grep -o 'LOCAL_WORLD_SIZE=[^ ]*' | sort -u)" "LOCAL_WORLD_SIZE=2" "het: LOCAL_WORLD_SIZE 2 on node1"

# --- sbatch: batch step, inner steps, subset step, concurrent steps -----------
cat >"$tmp/job.sh" <<JOB
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 -o $tmp/job.out
echo "batch host=\$(hostname) RANK=\${RANK-unset} MASTER_ADDR=\${MASTER_ADDR-unset} MASTER_PORT=\${MASTER_PORT-unset}"
srun -N2 -n2 bash -c 'echo "step0 rank=\$RANK addr=\$MASTER_ADDR port=\$MASTER_PORT"'
srun -N1 -n1 -w node2 bash -c 'echo "subset rank=\$RANK world=\$WORLD_SIZE addr=\$MASTER_ADDR"'
srun -N1 -n1 -w node1 --exact bash -c 'echo "concA port=\$MASTER_PORT"; sleep 2' &
srun -N1 -n1 -w node2 --exact bash -c 'echo "concB port=\$MASTER_PORT"; sleep 2' &
wait
export MASTER_PORT=15555
srun -N2 -n2 bash -c 'echo "userport port=\$MASTER_PORT"'
JOB
jobid=$(cx sbatch --parsable "$tmp/job.sh" 2>&1) || true
if [[ "$jobid" =~ ^[0-9]+$ ]] && cluster_wait_job "$jobid" 60; then
	tap_ok "sbatch two-node job completed"
else
	tap_fail "sbatch two-node job completed" "$jobid" "$(cat "$tmp/job.out" 2>/dev/null)"
fi
out=$(cat "$tmp/job.out" 2>/dev/null || true)
bport=$(grep -o '^batch .*MASTER_PORT=[0-9]*' <<<"$out" | grep -o '[0-9]*$' || true)
tap_like "$out" "batch host=node1 RANK=unset MASTER_ADDR=node1 MASTER_PORT=[0-9]+" "batch step: MASTER_ADDR/PORT set, no RANK"
tap_is "$(grep '^step0' <<<"$out" | sort | sed 's/port=.*//' | tr '\n' '|')" "step0 rank=0 addr=node1 |step0 rank=1 addr=node1 |" "inner srun step: ranks set, MASTER_ADDR node1"
sport=$(grep '^step0' <<<"$out" | grep -o 'port=[0-9]*' | sort -u || true)
if [ "$(wc -l <<<"$sport")" = 1 ] && [ -n "$bport" ] && [ "$sport" != "port=$bport" ]; then
	tap_ok "inner step replaced the port inherited from the batch step ($bport -> ${sport#port=})"
else
	tap_fail "inner step replaced the port inherited from the batch step" "$out"
fi
tap_like "$out" "subset rank=0 world=1 addr=node2" "step on a subset of the allocation: MASTER_ADDR from the step's nodes"
pa=$(grep -o 'concA port=[0-9]*' <<<"$out" | grep -o '[0-9]*$' || true)
pb=$(grep -o 'concB port=[0-9]*' <<<"$out" | grep -o '[0-9]*$' || true)
if [ -n "$pa" ] && [ -n "$pb" ] && [ "$pa" != "$pb" ]; then
	tap_ok "two concurrent steps of one job get different ports ($pa, $pb)"
else
	tap_fail "two concurrent steps of one job get different ports" "$out"
fi
tap_is "$(grep '^userport' <<<"$out" | sort -u)" "userport port=15555" "MASTER_PORT exported in the batch script is kept by its steps"

# --- a malformed plugstack argument: a clear error, nothing broken ------------
cluster_plugstack port_min=abc
out=$(cx srun -N2 -n2 true 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *'plugstack.conf argument port_min="abc": expected an integer in 1024..65535'* ]]; then
	tap_ok "malformed plugstack argument: srun refuses, naming the argument"
else
	tap_fail "malformed plugstack argument: srun refuses, naming the argument (rc=$rc)" "$out"
fi
out=$(cx sbatch --wrap true 2>&1) && rc=0 || rc=$?
tap_like "$out" 'port_min="abc"' "malformed plugstack argument: sbatch refuses, naming it"
cluster_plugstack bogus=1
out=$(cx srun -N1 -n1 true 2>&1) && rc=0 || rc=$?
tap_like "$out" 'argument "bogus=1": unknown key' "unknown plugstack argument named"
cluster_plugstack default=off
out=$(cx srun -N2 -n2 bash -c 'echo ${RANK-unset}' 2>&1 | grep -v '^srun: ' | sort -u)
tap_is "$out" "unset" "default=off: nothing set"
out=$(cx srun -N2 -n2 --dist-env=auto bash -c 'echo ${RANK-unset}' 2>&1 | grep -v '^srun: ' | sort -u | tr '\n' ' ')
tap_is "$out" "0 1 " "default=off, --dist-env=auto: per-job opt-in"
cluster_plugstack port_min=30000 port_max=30009
out=$(cx srun -N2 -n2 printenv MASTER_PORT 2>&1 | grep -v '^srun: ' | sort -u)
if [[ "$out" =~ ^3000[0-9]$ ]]; then tap_ok "port_min/port_max respected ($out)"
else tap_fail "port_min/port_max respected" "$out"; fi
cluster_plugstack
tap_check "cluster healthy at the end: all nodes idle, none drained" cluster_healthy
tap_done
