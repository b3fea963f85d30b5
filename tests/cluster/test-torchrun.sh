#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Task-side expressions are single-quoted on purpose: they expand in the task.
# shellcheck disable=SC2016
# distenv against real torchrun, rank by rank, on the two-node cluster.
#
# torchrun's variables are measured, not listed: one torchrun per node
# (static rendezvous, 2 nodes x 2 workers, the plugin off) and, for each
# worker, what its environment has that its agent's has not, or has with
# another value. So a variable a future torch adds is compared too. Then
# every rank of
#   (a) the plugin's step:   srun -N2 --ntasks-per-node=2 PROG
#   (b) distenv-exec's step: srun --dist-env=off -N2 --ntasks-per-node=2 distenv-exec PROG
# must have the worker of the same RANK's value (or its absence) of each
# of those variables and of each variable distenv set. Any difference
# outside the allowed table (allowed(), below: the differences the user
# guide tells users about, each with what must hold instead) fails, naming
# the rank, the variable and both values.
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
# On another Slurm the tasks use its root's python3-torch (always there).
if [ "$CLUSTER_SLURM" = host ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	tap_skip_all "Debian's python3-torch is not installed (scripts/setup installs it)"
fi
cluster_require --nodes 2 --cpus 4
# Files every node sees: the nodes share the host's /tmp (distenv-cluster).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cluster_torch_env
cluster_torchrun_env "$tmp"
tap_diag "torch $TORCH_VERSION; torchrun: $TORCHRUN${TORCHRUN_ENV[*]:+ with ${TORCHRUN_ENV[*]}} (fix: $TORCHRUN_FIX, see cluster_torchrun_env)"
TORCH1=0
[[ $TORCH_VERSION == 1.* ]] && TORCH1=1
PORT=29500 # torchrun's --master_port (its default)

# dump.py PREFIX: the environment this process was started with (not
# os.environ, which a sitecustomize could have changed since), NUL-separated,
# in PREFIX.env.RANK; a second process with the same RANK (or one without RANK)
# gets a file of its own, which the checks below count as an error.
cat >"$tmp/dump.py" <<'EOF'
import os, sys
with open("/proc/self/environ", "rb") as f:
    env = f.read()
path = "%s.env.%s" % (sys.argv[1], os.environ.get("RANK", "none"))
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
except FileExistsError:
    fd = os.open("%s.dup.%d" % (path, os.getpid()), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, env)
os.close(fd)
EOF
# before.py FILE CMD...: the same into FILE, then CMD in this process's
# place with exactly that environment: what the agent (torchrun) or
# distenv-exec starts with, not what a shell's child would see (bash
# lowers SHLVL and sets _ for the program it execs).
cat >"$tmp/before.py" <<'EOF'
import os, sys
with open("/proc/self/environ", "rb") as f:
    env = f.read()
with open(sys.argv[1], "wb") as f:
    f.write(env)
env = dict(os.fsdecode(kv).split("=", 1) for kv in env.split(b"\0") if b"=" in kv)
os.execvpe(sys.argv[2], sys.argv[2:], env)
EOF

# --- the runs --------------------------------------------------------------------
# run NAME CMD...: CMD on the login host, its output kept for the diagnostics.
run() {
	local name=$1
	shift
	if cx "$@" >"$tmp/$name.log" 2>&1; then
		tap_ok "$name: the step ran"
	else
		tap_fail "$name: the step ran (exit $?)" "command: $*" "$(cat "$tmp/$name.log")"
	fi
}
# torchrun: one agent per node, its environment as it starts torchrun in
# agent.NODEID (the plugin off: distenv's variables in the agent would hide
# those torchrun sets to the same value), its workers' in torchrun.env.RANK.
# MASTER_ADDR: the step's first node, as a job script would pass it.
run torchrun env "${TORCHRUN_ENV[@]}" timeout 100 srun --dist-env=off -N2 --ntasks-per-node=1 bash -c '
	master=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n 1)
	exec /usr/bin/python3 -S "$0/before.py" "$0/agent.$SLURM_NODEID" $1 --nnodes=2 --nproc_per_node=2 --node_rank="$SLURM_NODEID" \
		--master_addr="$master" --master_port="$2" "$0/dump.py" "$0/torchrun"' "$tmp" "$TORCHRUN" "$PORT"
# (a) the plugin; (b) distenv-exec, each task's environment before it in
# NAME.pre.PROCID (also the plugin-off baseline for (a)). RUNID=1: the same with
# TORCHELASTIC_RUN_ID asked for.
plugin_run() { # NAME [SRUN OPTIONS...]
	local name=$1
	shift
	run "$name" timeout 100 srun "$@" -N2 --ntasks-per-node=2 /usr/bin/python3 "$tmp/dump.py" "$tmp/$name"
}
exec_run() { # NAME [DISTENV-EXEC OPTIONS...]
	local name=$1
	shift
	run "$name" timeout 100 srun --dist-env=off -N2 --ntasks-per-node=2 bash -c '
		name=$1
		shift
		exec /usr/bin/python3 -S "$0/before.py" "$0/$name.pre.$SLURM_PROCID" "$@" /usr/bin/python3 "$0/dump.py" "$0/$name"' "$tmp" "$name" "$EXEC" "$@"
}
plugin_run plugin
exec_run exec

# --- reading the dumps -------------------------------------------------------------
# load ARRAY FILE: FILE's NAME=VALUE records (NUL-separated) into ARRAY.
load() {
	local -n into=$1
	local kv
	into=()
	[ -f "$2" ] || return 1
	while IFS= read -r -d '' kv; do
		# shellcheck disable=SC2034 # into is a name reference
		into[${kv%%=*}]=${kv#*=}
	done <"$2"
}
# changed NEW OLD MODE: the names NEW sets that OLD has not (MODE names:
# another step, whose Slurm values differ anyway), or has with another value
# too (MODE values: the same process before and after). Nothing is left out
# as per-process noise: the dumps are the exact environments (no shell in
# between); the one per-worker value torchrun sets, TORCHELASTIC_ERROR_FILE,
# is in the allowed table.
changed() {
	local -n new=$1 old=$2
	local k
	for k in "${!new[@]}"; do
		if [ -z "${old[$k]+set}" ] || { [ "$3" = values ] && [ "${old[$k]}" != "${new[$k]}" ]; }; then
			echo "$k"
		fi
	done
}
# files NAME: the ranks dumped as NAME.env.*, in order ("0 1 2 3 " wanted).
files() {
	local f out=()
	for f in "$tmp/$1.env".*; do
		[ -e "$f" ] && out+=("${f#"$tmp/$1.env".}")
	done
	printf '%s\n' "${out[@]}" | sort -n | tr '\n' ' '
}

# shellcheck disable=SC2034 # read by name (val, changed)
declare -A T A D B
ABSENT="(absent)"
val() { # val ARRAY NAME: its value, or $ABSENT
	local -n arr=$1
	if [ -n "${arr[$2]+set}" ]; then echo "${arr[$2]}"; else echo "$ABSENT"; fi
}
valid_port() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 65535)); }

# allowed VAR TV DV: the differences users are told about (docs/user-guide.md,
# "The environment, next to torchrun's"), the one place they are listed. For
# each, what must hold instead of equality (T: the torchrun worker, D: the
# distenv task of the same rank; RUNID=1 when distenv was asked for
# TORCHELASTIC_RUN_ID); WHY, the reason, for the diagnostics. 0: holds; 1:
# it does not (WANT says what was wanted); 2: not in the table (the values
# must be equal).
allowed() {
	local v=$1 t=$2 d=$3
	case $v in
	MASTER_PORT)
		WHY="torchrun: the --master_port given; distenv: its own port per job and step"
		WANT="torchrun $PORT, distenv a valid port (one per step: checked apart)"
		[ "$t" = "$PORT" ] && valid_port "$d" ;;
	NODE_RANK)
		WHY="not set by torchrun; distenv sets it for Lightning and accelerate, = GROUP_RANK"
		WANT="torchrun $ABSENT, distenv torchrun's GROUP_RANK ($(val T GROUP_RANK))"
		[ "$t" = "$ABSENT" ] && [ "$d" = "$(val T GROUP_RANK)" ] ;;
	TORCHELASTIC_RUN_ID)
		WHY="torchrun: --rdzv_id (none); distenv: only on request (the job id)"
		if ((RUNID)); then
			WANT="distenv the job id ($(val D SLURM_JOB_ID))"
			[ "$d" = "$(val D SLURM_JOB_ID)" ]
		else
			WANT="distenv $ABSENT (not asked for)"
			[ "$d" = "$ABSENT" ]
		fi ;;
	TORCHELASTIC_USE_AGENT_STORE)
		WHY="no agent hosts a store under distenv: set, every rank would wait for one"
		WANT="distenv $ABSENT"
		[ "$d" = "$ABSENT" ] ;;
	TORCHELASTIC_ERROR_FILE)
		WHY="a per-worker file that only torchrun's agent collects"
		WANT="distenv $ABSENT"
		[ "$d" = "$ABSENT" ] ;;
	NCCL_ASYNC_ERROR_HANDLING)
		WHY="torch 1.13's name, set by its torchrun; distenv sets 2.x's TORCH_NCCL_ASYNC_ERROR_HANDLING"
		((TORCH1)) || return 2
		WANT="torch 1.13: torchrun 1, distenv $ABSENT and TORCH_NCCL_ASYNC_ERROR_HANDLING=1"
		[ "$t" = 1 ] && [ "$d" = "$ABSENT" ] && [ "$(val D TORCH_NCCL_ASYNC_ERROR_HANDLING)" = 1 ] ;;
	TORCH_NCCL_ASYNC_ERROR_HANDLING)
		if ((TORCH1)); then
			WHY="torch 1.13's torchrun sets NCCL_ASYNC_ERROR_HANDLING instead"
			WANT="torch 1.13: torchrun $ABSENT (NCCL_ASYNC_ERROR_HANDLING=1), distenv 1"
			[ "$t" = "$ABSENT" ] && [ "$(val T NCCL_ASYNC_ERROR_HANDLING)" = 1 ] && [ "$d" = 1 ]
		else
			WHY="the same on both sides: 1"
			WANT="torch 2.x: 1 on both sides"
			[ "$t" = 1 ] && [ "$d" = 1 ]
		fi ;;
	TORCHELASTIC_SIGNALS_TO_HANDLE)
		WHY="torch 2.14's torchrun sets it (--signals-to-handle); distenv sets its value, which older torch neither sets nor reads"
		WANT="distenv SIGTERM,SIGINT,SIGHUP,SIGQUIT; torchrun the same or $ABSENT"
		[ "$d" = SIGTERM,SIGINT,SIGHUP,SIGQUIT ] && { [ "$t" = "$d" ] || [ "$t" = "$ABSENT" ]; } ;;
	DISTENV_*)
		WHY="distenv's own internal variables (distenv.8), nothing of torchrun's"
		WANT="torchrun $ABSENT"
		[ "$t" = "$ABSENT" ] ;;
	*) return 2 ;;
	esac
}

# compare LAUNCHER NAME BASE MODE: every rank of NAME (NAME.env.RANK) against
# torchrun's worker of that RANK; distenv's variables: what NAME.RANK has
# that BASE.PROCID has not (MODE names: another step, plugin off) or has
# with another value (MODE values: the same process before distenv-exec).
compare() {
	local who=$1 name=$2 base=$3 mode=$4 r v t d rc bad=() seen=() ports=() vars
	local -A why=() names=()
	tap_is "$(files "$name")" "0 1 2 3 " "$who: one task for each RANK 0-3"
	for r in 0 1 2 3; do
		load T "$tmp/torchrun.env.$r" || { bad+=("rank $r: no torchrun worker"); continue; }
		load A "$tmp/agent.$(val T SLURM_NODEID)" || { bad+=("rank $r: no agent dump for node $(val T SLURM_NODEID)"); continue; }
		load D "$tmp/$name.env.$r" || { bad+=("rank $r: no $who task"); continue; }
		load B "$tmp/$base.$(val D SLURM_PROCID)" || { bad+=("rank $r: no baseline $base.$(val D SLURM_PROCID)"); continue; }
		vars=$({ changed T A values; changed D B "$mode"; } | sort -u)
		for v in $vars; do
			names[$v]=1
			t=$(val T "$v")
			d=$(val D "$v")
			allowed "$v" "$t" "$d"
			rc=$?
			if ((rc == 2)) && [ "$t" != "$d" ]; then
				bad+=("rank $r: $v: torchrun '$t', $who '$d' (not an allowed difference)")
			elif ((rc == 1)); then
				bad+=("rank $r: $v: torchrun '$t', $who '$d': want $WANT ($WHY)")
			elif ((rc == 0)) && [ "$t" != "$d" ]; then
				why[$v]="$WHY"
			fi
		done
		ports+=("$(val D MASTER_PORT)")
	done
	for v in "${!why[@]}"; do seen+=("$v: ${why[$v]}"); done
	if [ ${#bad[@]} -eq 0 ]; then
		tap_ok "$who: every rank's torchrun and distenv variables equal or allowed (${#names[@]} variables)"
	else
		tap_fail "$who: every rank's torchrun and distenv variables equal or allowed" "${bad[@]}"
	fi
	tap_diag "compared: $(printf '%s\n' "${!names[@]}" | sort | tr '\n' ' ')"
	((${#seen[@]})) && tap_diag "allowed differences seen:" "$(printf '%s\n' "${seen[@]}" | sort)"
	v=$(printf '%s\n' "${ports[@]}" | sort -u)
	if [ ${#ports[@]} -eq 4 ] && [[ $v =~ ^[0-9]+$ ]] && valid_port "$v"; then
		tap_ok "$who: one MASTER_PORT for every rank ($v)"
	else
		tap_fail "$who: one valid MASTER_PORT for every rank" "got: ${ports[*]}"
	fi
}

# --- torchrun's variables -------------------------------------------------------------
tap_is "$(files torchrun)" "0 1 2 3 " "torchrun: one worker for each RANK 0-3"
ports=() set0=""
for r in 0 1 2 3; do
	{ load T "$tmp/torchrun.env.$r" && load A "$tmp/agent.$(val T SLURM_NODEID)"; } || continue
	ports+=("$(val T MASTER_PORT)")
	if ((r == 0)); then
		for v in $(changed T A values | sort); do set0+="$v=$(val T "$v")"$'\n'; done
	fi
done
tap_diag "torchrun $TORCH_VERSION: what it gave rank 0 (its environment less its agent's):" "$set0"
tap_is "$(printf '%s\n' "${ports[@]}" | sort -u | tr '\n' ' ')" "$PORT " "torchrun: every rank's MASTER_PORT is --master_port"
tap_is "$(grep -x 'RANK=0' <<<"$set0")" "RANK=0" "torchrun: rank 0's variables measured (RANK=0 among them)" ||
	tap_diag "$(cat "$tmp/torchrun.log")"

RUNID=0
compare plugin plugin exec.pre names
compare distenv-exec exec exec.pre values

# --- TORCHELASTIC_RUN_ID on request ---------------------------------------------------
RUNID=1
if [[ $(cx srun --help 2>&1) == *--dist-run-id* ]]; then
	plugin_run plugin-runid --dist-run-id
	compare "plugin --dist-run-id" plugin-runid exec.pre names
else
	tap_skip "plugin --dist-run-id: TORCHELASTIC_RUN_ID=\$SLURM_JOB_ID" "srun --help lists no --dist-run-id (not in this build)"
fi
if [[ $(cx "$EXEC" --help 2>&1) == *--run-id* ]]; then
	exec_run exec-runid --run-id
	compare "distenv-exec --run-id" exec-runid exec-runid.pre values
else
	tap_skip "distenv-exec --run-id: TORCHELASTIC_RUN_ID=\$SLURM_JOB_ID" "distenv-exec --help lists no --run-id (not in this build)"
fi

tap_check "cluster healthy at the end: all nodes idle, none drained" cluster_healthy
tap_done
