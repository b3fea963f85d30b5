#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-exec, the launcher for clusters without the plugin, on the real
# two-node cluster: in every layout, a step with the plugin OFF
# (--dist-env=off) running `distenv-exec dump` must show exactly what the
# plugin sets in a step of the same job running `dump`. MASTER_PORT differs
# by design between two steps (one port slot per step): it must differ by
# exactly the steps' slot distance, which holds only if both computed it
# from the same job with the same function.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

EXEC=$DISTENV_BUILD_DIR/src/distenv-exec
if [ ! -x "$EXEC" ]; then
	echo "1..1"
	echo "not ok 1 - distenv-exec built at $EXEC"
	exit 1
fi
cluster_require --nodes 2 --cpus 4

RANGE=9400         # the default port range 20000-29399
BATCH_SLOT=9395    # the batch step's slot (port.c: counts down from the top)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- helpers run by the tasks and in the allocations ----------------------------
# dump: one line per task, P=<procid> first so that lines sort by rank.
cat >"$tmp/dump" <<'EOF'
#!/bin/bash
printf 'P=%s host=%s' "${SLURM_PROCID-batch}" "$(hostname)"
for v in SLURM_STEP_ID SLURM_JOB_ID RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT OMP_NUM_THREADS DISTENV_MANAGED \
	ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCH_NCCL_ASYNC_ERROR_HANDLING; do
	printf ' %s=%s' "$v" "${!v-unset}"
done
echo
EOF
# exec: what the plugin left in the task (nothing with --dist-env=off), then
# distenv-exec.
cat >"$tmp/exec" <<EOF
#!/bin/bash
echo "pre P=\${SLURM_PROCID-batch} RANK=\${RANK-unset} LOCAL_RANK=\${LOCAL_RANK-unset} WORLD_SIZE=\${WORLD_SIZE-unset}"
exec "$EXEC" "\$@"
EOF
# pair NAME SRUN_ARGS...: the plugin's step, then distenv-exec's with the
# plugin off, in the current allocation.
cat >"$tmp/pair" <<EOF
#!/bin/bash
name=\$1
shift
srun --dist-env=auto "\$@" "$tmp/dump" >"$tmp/\$name.plugin" 2>&1
srun --dist-env=off "\$@" "$tmp/exec" "$tmp/dump" >"$tmp/\$name.exec" 2>&1
EOF
chmod +x "$tmp/dump" "$tmp/exec" "$tmp/pair"

# out NAME: what a step printed, without srun's own notes ("srun: Job 7 step
# creation temporarily disabled, retrying" while the last step lets go).
out() { grep -v '^srun: ' "$tmp/$1.out"; }

field() { # field LINE NAME
	local w
	for w in $1; do [ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }; done
	echo missing
}

# Lines of FILE from the dump, sorted by rank, without what differs between
# two steps of a job by design (step id, port).
dumped() { grep -E '^P=' "$1" | sort -t= -k2 -n; }
normalised() { dumped "$1" | sed -E 's/ SLURM_STEP_ID=[^ ]*//; s/ MASTER_PORT=[0-9]+//; s/;?MASTER_PORT=[0-9]+//'; }

# compare NAME NTASKS: the plugin's step and distenv-exec's agree.
compare() {
	local name=$1 n=$2 p="$tmp/$1.plugin" e="$tmp/$1.exec" np ne pre want pp pe sp se
	np=$(dumped "$p" | wc -l)
	ne=$(dumped "$e" | grep -vc ' RANK=unset')
	if [ "$np" = "$n" ] && [ "$ne" = "$n" ]; then
		tap_ok "$name: $n tasks, with the plugin and with distenv-exec"
	else
		tap_fail "$name: $n tasks, with the plugin and with distenv-exec (got $np and $ne)" \
			"plugin step:" "$(cat "$p" 2>&1)" "distenv-exec step:" "$(cat "$e" 2>&1)"
	fi
	pre=$(grep -E '^pre ' "$e" | sed -E 's/^pre P=[0-9]+ //' | sort -u)
	tap_is "$pre" "RANK=unset LOCAL_RANK=unset WORLD_SIZE=unset" "$name: --dist-env=off step: the plugin set nothing"
	if [ "$(normalised "$p")" = "$(normalised "$e")" ]; then
		tap_ok "$name: distenv-exec sets what the plugin sets, task by task"
	else
		tap_fail "$name: distenv-exec sets what the plugin sets, task by task" \
			"$(diff <(normalised "$p") <(normalised "$e"))"
	fi
	pp=$(dumped "$p" | grep -o ' MASTER_PORT=[0-9]*' | sort -u | cut -d= -f2)
	pe=$(dumped "$e" | grep -o ' MASTER_PORT=[0-9]*' | sort -u | cut -d= -f2)
	sp=$(field "$(dumped "$p" | head -1)" SLURM_STEP_ID)
	se=$(field "$(dumped "$e" | head -1)" SLURM_STEP_ID)
	want=x
	if [[ "$pp $pe $sp $se" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]; then
		want=$(((se - sp + RANGE) % RANGE))
	fi
	tap_is "$(((${pe:-0} - ${pp:-0} + RANGE) % RANGE))" "$want" \
		"$name: MASTER_PORT $pe (step $se) is the plugin's $pp (step $sp) moved by the step distance"
}

# --- one allocation, 2 nodes x 2 CPUs: plain layouts, arbitrary, options ------------
printf 'node2\nnode1\n' >"$tmp/hostfile"
cat >"$tmp/steps" <<EOF
#!/bin/bash
cd "$tmp"
./pair 2x1 -N2 -n2 --ntasks-per-node=1
./pair 2x2 -N2 -n4 --ntasks-per-node=2
# No -N with arbitrary: Slurm 24.11 and 26.05 refuse it (the host file
# names the nodes).
SLURM_HOSTFILE=$tmp/hostfile ./pair arbitrary -n2 -m arbitrary
o="srun --dist-env=off -N2 -n2 --ntasks-per-node=1"
MASTER_PORT=12345 \$o "$EXEC" printenv MASTER_PORT >userport.out 2>&1
MASTER_PORT=12345 \$o "$EXEC" --force printenv MASTER_PORT >force.out 2>&1
OMP_NUM_THREADS=3 srun --dist-env=off -N1 -n2 "$EXEC" --force printenv OMP_NUM_THREADS >omp.out 2>&1
MASTER_PORT=12345 srun --dist-env=off -N1 -n1 "$EXEC" --verbose true >verbose.out 2>&1
DISTENV_PORT_MIN=30000 DISTENV_PORT_MAX=30009 \$o "$EXEC" printenv MASTER_PORT >range.out 2>&1
DISTENV_CHECK_OPTS=--timeout=30 \$o "$EXEC" --check bash -c 'echo "program ran on rank \$RANK"' >check.out 2>&1
echo "rc=\$?" >>check.out
MASTER_ADDR=127.0.0.1 DISTENV_CHECK_OPTS=--timeout=30 \$o "$EXEC" --check bash -c 'echo "program ran on rank \$RANK"' >checkfail.out 2>&1
echo "rc=\$?" >>checkfail.out
DISTENV_CHECK=/nonexistent/distenv-check \$o "$EXEC" --check true >checkmissing.out 2>&1
echo "rc=\$?" >>checkmissing.out
DISTENV_CHECK_OPTS="\$(printf -- '-q %.0s' {1..38})" \$o "$EXEC" --check bash -c 'echo "program ran"' >checkopts.out 2>&1
echo "rc=\$?" >>checkopts.out
DISTENV_PORT_MIN=80 \$o "$EXEC" true >badport.out 2>&1
echo "rc=\$?" >>badport.out
\$o bash -c 'SLURM_PROCID=x exec "$EXEC" true' >badprocid.out 2>&1
echo "rc=\$?" >>badprocid.out
SLURM_HOSTFILE=$tmp/hostfile srun --dist-env=off -n2 -m arbitrary bash -c 'SLURM_HOSTFILE=/nonexistent/hostfile exec "$EXEC" true' >nohostfile.out 2>&1
echo "rc=\$?" >>nohostfile.out
\$o "$EXEC" /nonexistent/program >noprog.out 2>&1
echo "rc=\$?" >>noprog.out
EOF
chmod +x "$tmp/steps"
out=$(CLUSTER_TIMEOUT=300 cx salloc -N2 --ntasks-per-node=2 "$tmp/steps" 2>&1) && rc=0 || rc=$?
tap_is "$rc" 0 "allocation for the plain layouts ran its steps" || tap_diag "$out"

compare 2x1 2
tap_is "$(dumped "$tmp/2x1.exec" | awk '{print $2, $5, $6, $12}' | tr '\n' '|')" \
	"host=node1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=node1|host=node2 RANK=1 LOCAL_RANK=0 MASTER_ADDR=node1|" \
	"2x1: distenv-exec: ranks 0 and 1 on node1 and node2, LOCAL_RANK 0, MASTER_ADDR node1"
compare 2x2 4
tap_is "$(dumped "$tmp/2x2.exec" | awk '{print $2, $5, $6, $8, $14}' | tr '\n' '|')" \
	"host=node1 RANK=0 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1|host=node1 RANK=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1|host=node2 RANK=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1|host=node2 RANK=3 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1|" \
	"2x2: distenv-exec: RANK/LOCAL_RANK split across nodes, LOCAL_WORLD_SIZE 2, OMP_NUM_THREADS=1"
tap_is "$(dumped "$tmp/2x2.exec" | awk '{print $5, $16, $17, $18, $19, $20, $21}' | sort -u | tr '\n' '|')" \
	"RANK=0 ROLE_RANK=0 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1|RANK=1 ROLE_RANK=1 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1|RANK=2 ROLE_RANK=2 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1|RANK=3 ROLE_RANK=3 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1|" \
	"2x2: distenv-exec: torchrun's ROLE_*, TORCHELASTIC_RESTART_COUNT/MAX_RESTARTS and TORCH_NCCL_ASYNC_ERROR_HANDLING on every task"
compare arbitrary 2
tap_is "$(dumped "$tmp/arbitrary.exec" | awk '{print $2, $5, $12}' | tr '\n' '|')" \
	"host=node2 RANK=0 MASTER_ADDR=node2|host=node1 RANK=1 MASTER_ADDR=node2|" \
	"arbitrary (hostfile node2,node1): distenv-exec: task 0 on node2, MASTER_ADDR node2 from SLURM_HOSTFILE"

tap_is "$(out userport | sort -u)" "12345" "user's MASTER_PORT kept"
got=$(out force | sort -u)
if [[ $got =~ ^2[0-9]{4}$ ]]; then
	tap_ok "--force overrides the user's MASTER_PORT (got $got)"
else
	tap_fail "--force overrides the user's MASTER_PORT" "$got"
fi
tap_is "$(out omp | sort -u)" "3" "user's OMP_NUM_THREADS kept, even with --force (as the plugin)"
tap_like "$(out verbose)" "distenv-exec: RANK=0 \(set\)" "--verbose reports what was set"
tap_like "$(out verbose)" "distenv-exec: MASTER_PORT=12345 \(kept user's, distenv: 2[0-9]{4}\)" "--verbose reports what was kept"
tap_like "$(out range | sort -u | tr '\n' ' ')" "^3000[0-9] $" "DISTENV_PORT_MIN/MAX=30000/30009 respected"

out=$(out check)
if [[ $out == *"distenv-check: PASS: 2 ranks on 2 nodes"* ]] && [[ $out == *"rc=0"* ]] &&
	[ "$(grep -c '^program ran on rank [01]$' <<<"$out")" = 2 ]; then
	tap_ok "--check: distenv-check passes with the computed environment, then the program runs on both ranks"
else
	tap_fail "--check: distenv-check passes, then the program runs" "$out"
fi
out=$(out checkfail)
if [[ $out == *"master-loopback"* ]] && [[ $out == *"distenv-exec: --check failed (distenv-check exit "*"): the program was not started"* ]] &&
	[[ $out != *"program ran"* ]] && [[ $out != *"rc=0"* ]]; then
	tap_ok "--check failing (user's MASTER_ADDR=127.0.0.1 on 2 nodes): diagnosis shown, program not started"
else
	tap_fail "--check failing: diagnosis shown, program not started" "$out"
fi
tap_like "$(out checkmissing)" "distenv-exec: --check: cannot run /nonexistent/distenv-check: No such file or directory.*rc=1" \
	"--check with DISTENV_CHECK missing: a clear error, exit 1"
out=$(out checkopts)
tap_like "$out" "distenv-exec: --check: DISTENV_CHECK_OPTS has more than 37 words: expected at most 37 options.*rc=1" \
	"--check with too many DISTENV_CHECK_OPTS words: refused by name, not cut off"
if [[ $out != *"program ran"* ]]; then tap_ok "--check with bad DISTENV_CHECK_OPTS: the program is not started"
else tap_fail "--check with bad DISTENV_CHECK_OPTS: the program is not started" "$out"; fi

# --- bad values fail clearly ------------------------------------------------------------
tap_like "$(out badport)" "distenv-exec: DISTENV_PORT_MIN \"80\": expected a whole number in 1024..65535.*rc=2" \
	"DISTENV_PORT_MIN=80: named with its value, exit 2 (a bad setting, as its option twin)"
tap_like "$(out badprocid)" "distenv-exec: SLURM_PROCID \"x\": expected a whole number in 0..4294967295.*rc=1" \
	"SLURM_PROCID=x: named with its value, exit 1"
tap_like "$(out nohostfile)" "distenv-exec: SLURM_HOSTFILE=/nonexistent/hostfile: cannot read it: No such file or directory.*rc=1" \
	"arbitrary distribution, unreadable SLURM_HOSTFILE: named, exit 1"
tap_like "$(out noprog)" "distenv-exec: cannot run /nonexistent/program: No such file or directory.*rc=127" \
	"missing PROGRAM: the reason, exit 127"

# --- heterogeneous step -----------------------------------------------------------------
out=$(cx salloc -N1 -n1 -w node2 : -N1 -n2 -w node1 "$tmp/pair" het --het-group=0,1 2>&1) && rc=0 || rc=$?
tap_is "$rc" 0 "het allocation (node2 x1 : node1 x2) ran its steps" || tap_diag "$out"
compare het 3
out=$(cx srun --dist-env=off -N1 -n1 -w node2 : -N1 -n2 -w node1 "$EXEC" "$tmp/dump" 2>&1)
tap_is "$(dumped <(echo "$out") | awk '{print $2, $5, $6, $7, $8, $9, $12}' | tr '\n' '|')" \
	"host=node2 RANK=0 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=1 NODE_RANK=0 MASTER_ADDR=node2|host=node1 RANK=1 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2 NODE_RANK=1 MASTER_ADDR=node2|host=node1 RANK=2 LOCAL_RANK=1 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2 NODE_RANK=1 MASTER_ADDR=node2|" \
	"srun -N1 -n1 -w node2 : -N1 -n2 -w node1 distenv-exec: rank 0 on node2, LOCAL_WORLD_SIZE 1 there and 2 on node1, MASTER_ADDR node2"

# --- sbatch with the plugin off: the batch step and a step on a subset ----------------
cat >"$tmp/job-off.sh" <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 -o $tmp/job-off.out
"$tmp/exec" "$tmp/dump" >"$tmp/batch.exec" 2>&1
"$tmp/pair" subset -N1 -n1 -w node2
EOF
jobid=$(cx sbatch --parsable --dist-env=off "$tmp/job-off.sh" 2>&1) || true
if [[ $jobid =~ ^[0-9]+$ ]] && cluster_wait_job "$jobid" 60; then
	tap_ok "sbatch --dist-env=off job completed"
else
	tap_fail "sbatch --dist-env=off job completed" "$jobid" "$(cat "$tmp/job-off.out" 2>/dev/null)"
fi
compare subset 1
tap_is "$(dumped "$tmp/subset.exec" | awk '{print $2, $5, $7, $12}')" "host=node2 RANK=0 WORLD_SIZE=1 MASTER_ADDR=node2" \
	"step on a subset (node2 of node[1-2]): distenv-exec: MASTER_ADDR node2 from the step's nodes"
line=$(dumped "$tmp/batch.exec")
tap_is "$(awk '{print $2, $5, $12}' <<<"$line") $(grep -c '^pre .*RANK=unset' "$tmp/batch.exec")" "host=node1 RANK=unset MASTER_ADDR=node1 1" \
	"batch step, plugin off: distenv-exec sets MASTER_ADDR (this host), no RANK"
pb=$(field "$line" MASTER_PORT)
pp=$(field "$(dumped "$tmp/subset.plugin")" MASTER_PORT)
sp=$(field "$(dumped "$tmp/subset.plugin")" SLURM_STEP_ID)
want=x
[[ "$pb $pp $sp" =~ ^[0-9]+\ [0-9]+\ [0-9]+$ ]] && want=$(((BATCH_SLOT - sp + RANGE) % RANGE))
tap_is "$(((${pb:-0} - ${pp:-0} + RANGE) % RANGE))" "$want" \
	"batch step: distenv-exec's MASTER_PORT $pb is the plugin's batch slot of this job (plugin's step $sp: $pp)"

# --- sbatch with the plugin on: the batch step's own values, recomputed ------------------
cat >"$tmp/job-on.sh" <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 -o $tmp/job-on.out
"$tmp/dump" >"$tmp/batchon.plugin"
env -u MASTER_ADDR -u MASTER_PORT -u DISTENV_MANAGED "$tmp/exec" "$tmp/dump" >"$tmp/batchon.exec" 2>&1
srun -N2 -n2 "$EXEC" "$tmp/dump" >"$tmp/inner.exec" 2>&1
EOF
jobid=$(cx sbatch --parsable "$tmp/job-on.sh" 2>&1) || true
if [[ $jobid =~ ^[0-9]+$ ]] && cluster_wait_job "$jobid" 60; then
	tap_ok "sbatch job with the plugin on completed"
else
	tap_fail "sbatch job with the plugin on completed" "$jobid" "$(cat "$tmp/job-on.out" 2>/dev/null)"
fi
p=$(dumped "$tmp/batchon.plugin")
e=$(dumped "$tmp/batchon.exec")
if [ -n "$p" ] && [ "$p" = "$e" ] && [[ $p == *" MASTER_ADDR=node1 MASTER_PORT=2"* ]]; then
	tap_ok "batch step: distenv-exec recomputes exactly the plugin's MASTER_ADDR/MASTER_PORT"
else
	tap_fail "batch step: distenv-exec recomputes exactly the plugin's values" "plugin: $p" "exec:   $e"
fi
bport=$(field "$p" MASTER_PORT)
got=$(dumped "$tmp/inner.exec" | awk '{print $5, $12}' | tr '\n' '|')
iport=$(dumped "$tmp/inner.exec" | grep -o ' MASTER_PORT=[0-9]*' | sort -u | cut -d= -f2)
if [ "$got" = "RANK=0 MASTER_ADDR=node1|RANK=1 MASTER_ADDR=node1|" ] && [[ $iport =~ ^[0-9]+$ ]] && [ "$iport" != "$bport" ]; then
	tap_ok "srun distenv-exec under the plugin, in a job script: the step's own values (port $iport, not the batch step's $bport)"
else
	tap_fail "srun distenv-exec under the plugin, in a job script: the step's own values" "$(cat "$tmp/inner.exec")"
fi

# --- --run-id, and the notes beside the variables ------------------------------
# shellcheck disable=SC2016 # expands in the task
out=$(cx srun -N2 -n2 --dist-env=off "$EXEC" --run-id bash -c 'echo "$SLURM_JOB_ID=${TORCHELASTIC_RUN_ID-unset}"' 2>&1 | sort -u)
if [[ $out =~ ^([0-9]+)=([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
	tap_ok "--run-id: TORCHELASTIC_RUN_ID is the job id on every task"
else
	tap_fail "--run-id: TORCHELASTIC_RUN_ID is the job id" "$out"
fi
# shellcheck disable=SC2016 # expands in the task
out=$(cx srun -N2 -n2 --dist-env=off "$EXEC" bash -c 'echo "${TORCHELASTIC_RUN_ID-unset}"' 2>&1 | sort -u)
tap_is "$out" "unset" "without --run-id: no TORCHELASTIC_RUN_ID"
out=$(cx srun -N2 -n4 --ntasks-per-node=2 -m cyclic --dist-env=off "$EXEC" --verbose true 2>&1)
tap_like "$out" "distenv-exec: note: ranks on this node are (0,2|1,3), not one contiguous block as under torchrun \(SLURM_DISTRIBUTION=cyclic" \
	"-m cyclic: --verbose notes the ranks that are not one block (from SLURM_GTIDS)"
tap_like "$out" "distenv-exec: note: MASTER_PORT [0-9]+: from the job and step ids in 20000-29399" \
	"--verbose says where MASTER_PORT came from"
out=$(cx srun -N2 -n4 --ntasks-per-node=2 -m block --dist-env=off "$EXEC" --verbose true 2>&1)
if [[ $out == *"distenv-exec: RANK="* && $out != *contiguous* ]]; then
	tap_ok "-m block: no rank-order note"
else
	tap_fail "-m block: no rank-order note" "$out"
fi

tap_check "cluster healthy at the end: all nodes idle, none drained" cluster_healthy
tap_done
