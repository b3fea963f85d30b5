# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# cluster.sh: helpers for tests that run real srun/sbatch on the local
# multi-node cluster (scripts/distenv-cluster). Source after tap.sh:
#
#   . "$here/../lib/tap.sh"
#   . "$here/../lib/cluster.sh"
#   cluster_require            # skip all unless root; fail if it can't come up
#   tap_is "$(cx srun -N2 -n2 --ntasks-per-node=1 hostname | sort | tr '\n' ' ')" \
#          "node1 node2 " "one task per node"
#   tap_done
#
# Environment:
#   DISTENV_CLUSTER_SLURM  the Slurm the cluster runs (host, 22.05, 24.11,
#                      26.05; default host): another version comes up from
#                      its Debian root with its own build of the checkout
#   DISTENV_CLUSTER_AUTH  how the cluster authenticates: munge (default) or
#                      slurm (auth/slurm, no munged; 24.11 and 26.05 only)
#   DISTENV_BUILD_DIR  build tree holding spank/.libs/distenv.so (default:
#                      the source tree; for another Slurm, that version's
#                      build, as `distenv-cluster env --slurm V` names it)
#   DISTENV_CLUSTER    the cluster tool (default: scripts/distenv-cluster)
#   CLUSTER_TIMEOUT    seconds any cx/nx command may run (default 120; 0 =
#                      no limit), so that a hang fails a test, not the suite
#
# Test scripts should use `set -uo pipefail` but not `set -e`: a failed
# check returns non-zero.

CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DISTENV_SRCDIR=${DISTENV_SRCDIR:-$(cd "$CLUSTER_LIB_DIR/../.." && pwd)}
DISTENV_CLUSTER=${DISTENV_CLUSTER:-$DISTENV_SRCDIR/scripts/distenv-cluster}
CLUSTER_SLURM=${DISTENV_CLUSTER_SLURM:-host}
CLUSTER_AUTH=${DISTENV_CLUSTER_AUTH:-munge}
if [[ -z ${DISTENV_BUILD_DIR:-} && $CLUSTER_SLURM != host ]]; then
	DISTENV_BUILD_DIR=$("$DISTENV_CLUSTER" env --slurm "$CLUSTER_SLURM" 2>/dev/null |
		sed -n 's/^export DISTENV_BUILD_DIR=//p')
fi
DISTENV_BUILD_DIR=${DISTENV_BUILD_DIR:-$DISTENV_SRCDIR}
DISTENV_PLUGIN_SO=${DISTENV_PLUGIN_SO:-$DISTENV_BUILD_DIR/spank/.libs/distenv.so}
CLUSTER_TIMEOUT=${CLUSTER_TIMEOUT:-120}

if ! declare -F tap_ok >/dev/null; then
	# shellcheck source=tests/lib/tap.sh
	. "$CLUSTER_LIB_DIR/tap.sh"
fi

# cluster_example NAME OUTPUT: keep OUTPUT as today's text of the docs'
# example NAME (tests/docs/examples.sh compares the docs with it). Only from
# this machine's own Slurm with MUNGE, the cluster the docs show.
cluster_example() {
	[[ $CLUSTER_SLURM == host && $CLUSTER_AUTH == munge ]] || return 0
	local dir=${DISTENV_EXAMPLES_DIR:-$DISTENV_SRCDIR/tests/logs/examples}
	mkdir -p "$dir" && printf '%s\n' "$2" >"$dir/$1.txt"
}

# Forget any Slurm job context inherited from the caller (the suite may run
# inside a job on a real cluster): srun would try to join that job here.
cluster_forget_job_env() {
	local v
	for v in $(compgen -e); do
		[[ $v == SLURM_* && $v != SLURM_CONF ]] && unset "$v"
	done
	unset SLURM_CONF
	return 0
}

# cluster_up [ARGS...]: bring the cluster up (idempotent) with the build
# tree's plugin unless ARGS name --plugin or --no-plugin (on another Slurm,
# `up` takes that version's build itself, rebuilding it when stale). Its
# output goes out as TAP diagnostics.
cluster_up() {
	local out rc=0
	out=$(cluster_up_raw "$@" 2>&1) || rc=$?
	tap_diag "$out"
	return "$rc"
}

cluster_up_raw() {
	local a pl=1
	for a in "$@"; do
		[[ $a == --plugin || $a == --plugin=* || $a == --no-plugin ]] && pl=0
	done
	if ((pl)) && [[ $CLUSTER_SLURM == host ]]; then
		set -- --plugin "$DISTENV_PLUGIN_SO" "$@"
	fi
	"$DISTENV_CLUSTER" up --slurm "$CLUSTER_SLURM" --auth "$CLUSTER_AUTH" "$@"
}

# cluster_lock: there is one local cluster per machine: one test file uses
# it at a time, from here until this shell exits. Every file that brings
# the cluster up or down takes it first.
cluster_lock() {
	exec {CLUSTER_LOCK_FD}>"${DISTENV_CLUSTER_TESTLOCK:-/run/distenv-cluster.testlock}"
	flock "$CLUSTER_LOCK_FD"
}

# cluster_release_of VERSION / cluster_slurm_of RELEASE: the Debian release
# whose root carries that Slurm, and back (empty: none).
# shellcheck source=scripts/releases.sh
. "$DISTENV_SRCDIR/scripts/releases.sh"
cluster_release_of() { release_of "$1" || true; }
cluster_slurm_of() { slurm_of "$1" || true; }

# cluster_scratch NAME: a scratch dir in $tmp (/tmp/distenv-test-NAME.*,
# mode 0755: the tasks read it), removed at exit, and the cluster brought
# down then if this shell took the lock (cluster_lock).
cluster_scratch() {
	tmp=$(mktemp -d "/tmp/distenv-test-$1.XXXXXX")
	chmod 0755 "$tmp"
	trap cluster_scratch_cleanup EXIT
	trap 'exit 1' INT TERM HUP
}
cluster_scratch_cleanup() {
	[[ -n ${CLUSTER_LOCK_FD:-} ]] && "$DISTENV_CLUSTER" down >/dev/null 2>&1
	rm -rf -- "$tmp"
}

# cluster_need_check: CHECK, the build's distenv-check; skips the whole
# file when it is not built.
cluster_need_check() {
	CHECK=$DISTENV_BUILD_DIR/src/distenv-check
	[[ -x $CHECK ]] || tap_skip_all "distenv-check not built at $CHECK"
}

# cluster_require [UP ARGS...]: not root -> skip the whole file; root but the
# cluster cannot come up -> one failed test with the reason, and exit.
cluster_require() {
	local out rc=0
	cluster_forget_job_env
	if [[ $(id -u) -ne 0 ]]; then
		tap_skip_all "needs root (network namespaces, Slurm daemons)"
	fi
	cluster_lock
	out=$(cluster_up_raw "$@" 2>&1) || rc=$?
	if ((rc)); then
		tap_fail "local cluster comes up ($DISTENV_CLUSTER up $*)" \
			"exit status $rc" "$out"
		tap_done
		exit 1
	fi
	tap_diag "$out"
}

cluster_down() {
	"$DISTENV_CLUSTER" down
}

# alive_pids PID...: those still alive (not zombies).
alive_pids() {
	local p st
	for p in "$@"; do
		st=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$p/stat" 2>/dev/null) || continue
		[[ $st == Z || -z $st ]] || echo "$p"
	done
}

# cx CMD...: run CMD on the login host against the cluster.
cx() {
	timeout -k 5 "$CLUSTER_TIMEOUT" "$DISTENV_CLUSTER" exec -- "$@"
}

# nx NODE CMD...: run CMD inside NODE's namespaces (net, UTS, mount).
nx() {
	local node=$1
	shift
	timeout -k 5 "$CLUSTER_TIMEOUT" "$DISTENV_CLUSTER" node-exec "$node" -- "$@"
}

# cluster_healthy: every node idle, none drained or down. Waits up to 10 s
# for nodes still completing a job; otherwise prints sinfo as diagnostics.
cluster_healthy() {
	local out deadline=$((SECONDS + 10))
	while :; do
		out=$(cx sinfo -h -N -o '%N %t' 2>&1) || out="sinfo failed: $out"
		if [[ -n $out ]] && ! grep -qv ' idle$' <<<"$out"; then
			return 0
		fi
		((SECONDS < deadline)) || break
		sleep 0.1
	done
	tap_diag "nodes not all idle:" "$(cx sinfo -N -l 2>&1)"
	return 1
}

# cluster_plugstack ARGS...: new plugin arguments for the next steps.
cluster_plugstack() {
	local out rc=0
	out=$("$DISTENV_CLUSTER" plugstack "$@" 2>&1) || rc=$?
	tap_diag "$out"
	return "$rc"
}

# cluster_wait_job JOBID [SECONDS]: wait until the job has left the queue;
# 0 if it completed with exit code 0 (from scontrol's record), else 1.
cluster_wait_job() {
	local id=$1 limit=${2:-60} deadline state
	deadline=$((SECONDS + limit))
	while [[ -n $(cx squeue -h -j "$id" -o %i 2>/dev/null) ]]; do
		if ((SECONDS >= deadline)); then
			tap_diag "job $id still queued/running after ${limit}s" "$(cx squeue 2>&1)"
			return 1
		fi
		sleep 0.1
	done
	state=$(cx scontrol -o show job "$id" 2>/dev/null | grep -oE '(JobState|ExitCode)=[^ ]*' | tr '\n' ' ' || true)
	[[ $state == "JobState=COMPLETED ExitCode=0:0 " ]] && return 0
	tap_diag "job $id: ${state:-no record}"
	return 1
}

# cluster_torch_env: sets TORCH_ENV to what the tasks' PyTorch needs beyond
# distenv's variables for init_method="env://" (cluster up). Debian's
# python3-torch 2.x (trixie, sid) is built without libuv while torch >= 2.4
# asks TCPStore for it by default, so env:// fails ("use_libuv was requested
# but PyTorch was built without libuv support") unless USE_LIBUV=0: a fact
# of that build, said as a diagnostic, not hidden.
# Also sets TORCH_VERSION (the tasks' torch.__version__).
# shellcheck disable=SC2034 # TORCH_ENV, TORCH_VERSION are read by the test files
cluster_torch_env() {
	local out
	TORCH_ENV=()
	out=$(cx /usr/bin/python3 -c '
import torch, torch.distributed as d
print(torch.__version__)
try:
    d.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True)
except TypeError:
    print("no use_libuv argument")  # torch < 2.2: no libuv at all
except RuntimeError as e:
    if "libuv" not in str(e): raise
    print("built without libuv")
' 2>/dev/null)
	TORCH_VERSION=$(head -n 1 <<<"$out")
	if [[ $(tail -n 1 <<<"$out") == "built without libuv" ]]; then
		TORCH_ENV=(USE_LIBUV=0)
		tap_diag "the tasks' torch is built without libuv: its env:// needs USE_LIBUV=0 (set for the torch runs)"
	fi
}

# cluster_torchrun_env DIR: what it takes to run the tasks' torchrun on
# this cluster (cluster up; call cluster_torch_env first). Debian's torch
# builds need help to run torchrun, each for its own reason; what follows
# fixes only those, and the caller says so (TORCHRUN_FIX):
#  - 1.13 under Python 3.11 (bookworm): torchrun dies at start (Std.from_str
#    returns None: 3.11 no longer iterates IntFlag's 0 member): a torchrun
#    shim (DIR/torchrun.py). TORCHRUN_FIX=shim.
#  - 2.6 (trixie) and 2.14 (sid) are built without libuv, and torchrun's
#    stores (the agent's static rendezvous, the workers' clients of it) are
#    made with TCPStore's default use_libuv=True, which USE_LIBUV=0 does not
#    reach: a sitecustomize on PYTHONPATH (DIR/torchfix) makes that default
#    False in the agent and in every worker. (PyPI's wheels have libuv.)
#    TORCHRUN_FIX=sitecustomize.
# Asked of the Python the tasks run (the root's, on another Slurm). Sets
# TORCHRUN, the command (words split on spaces; exported only when it is
# the shim, so that the templates' own default is what runs otherwise),
# TORCHRUN_ENV, VAR=VALUE words to run it with, and TORCHRUN_FIX (shim,
# sitecustomize or none).
# shellcheck disable=SC2034 # TORCHRUN_ENV, TORCHRUN_FIX are read by the test files
cluster_torchrun_env() {
	local dir=$1
	TORCHRUN="/usr/bin/python3 -m torch.distributed.run"
	TORCHRUN_ENV=()
	TORCHRUN_FIX=none
	if ! cx /usr/bin/python3 -c 'import sys; from torch.distributed.elastic.multiprocessing import Std; sys.exit(Std.from_str("0") is None)' >/dev/null 2>&1; then
		cat >"$dir/torchrun.py" <<'SHIM'
import runpy
from torch.distributed.elastic.multiprocessing import api
def from_str(cls, vm):
    if ":" in vm:
        return {int(k): api.Std(int(v)) for k, v in (m.split(":") for m in vm.split(","))}
    return api.Std(int(vm))
api.Std.from_str = classmethod(from_str)
runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
SHIM
		export TORCHRUN="/usr/bin/python3 $dir/torchrun.py"
		TORCHRUN_FIX=shim
	elif [ ${#TORCH_ENV[@]} -gt 0 ]; then
		mkdir -p "$dir/torchfix"
		cat >"$dir/torchfix/sitecustomize.py" <<'FIX'
import importlib
import torch.distributed as dist
# The module, not the function torch.distributed re-exports under its name.
rdzv = importlib.import_module("torch.distributed.rendezvous")
st = importlib.import_module("torch.distributed.elastic.rendezvous.static_tcp_rendezvous")
_store = dist.TCPStore
def _no_libuv(*args, **kwargs):
    kwargs.setdefault("use_libuv", False)
    return _store(*args, **kwargs)
rdzv.TCPStore = st.TCPStore = _no_libuv
FIX
		TORCHRUN_ENV=(PYTHONPATH="$dir/torchfix")
		TORCHRUN_FIX=sitecustomize
	fi
}
