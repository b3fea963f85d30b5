#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-exec's command line, without a cluster: usage errors exit 2 and
# name the option and the form expected, before anything else runs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

EXEC=${DISTENV_BUILD_DIR:-.}/src/distenv-exec
if [ ! -x "$EXEC" ]; then
	echo "1..1"
	echo "not ok 1 - distenv-exec built at $EXEC"
	exit 1
fi

# run ARGS...: "rc=N" then distenv-exec's stderr, outside any job.
run() {
	local err rc=0
	err=$(env -u SLURM_JOB_ID "$EXEC" "$@" 2>&1 >/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$err"
}

for b in socket nccl auto off; do
	out=$(run --check "$b" true)
	tap_like "$out" "^rc=2
distenv-exec: option '--check' takes its value with '=': --check=$b " \
		"--check $b (space form): usage error, exit 2, names --check=$b"
done
tap_like "$(run --check socket true)" "Try 'distenv-exec --help'" "--check socket: points to --help"
tap_like "$(run --check=bogus true)" "^rc=2
distenv-exec: --check=bogus: expected auto, socket, nccl or off" "--check=bogus: usage error naming the values"
# The value-less form and a PROGRAM after -- still reach the run (which,
# outside a job, stops at SLURM_JOB_ID with exit 1, not a usage error).
tap_like "$(run --check true)" "^rc=1
distenv-exec: SLURM_JOB_ID is not set" "--check PROGRAM: accepted (auto)"
tap_like "$(run --check -- socket)" "^rc=1
distenv-exec: SLURM_JOB_ID is not set" "--check -- socket: 'socket' is the PROGRAM, by the user's choice"
tap_like "$(run --check=socket true)" "^rc=1
distenv-exec: SLURM_JOB_ID is not set" "--check=socket PROGRAM: accepted"
tap_like "$(run)" "^rc=2
distenv-exec: no PROGRAM to run" "no PROGRAM: usage error"

# The variables distenv-exec reads, one parser's rule (parse.h): empty is
# "empty", never unset; a malformed value is named with the form expected.
# step VAR=VALUE...: a one-task step's SLURM_* (no cluster needed: the
# layout is computed from them alone), the changes applied, then
# distenv-exec true; "rc=N" and its stderr.
step() {
	local err rc=0
	err=$(env -i PATH=/usr/bin:/bin SLURM_JOB_ID=5 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 \
		SLURM_NODEID=0 SLURM_STEP_NUM_TASKS=1 SLURM_STEP_NUM_NODES=1 SLURM_STEP_NODELIST=n1 \
		SLURM_STEP_TASKS_PER_NODE=1 "$@" "$EXEC" true 2>&1 >/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$err"
}
tap_is "$(step)" "rc=0" "a well-formed one-task step: runs PROGRAM"
tap_like "$(step DISTENV_PORT_MIN=abc)" '^rc=2
distenv-exec: DISTENV_PORT_MIN "abc": expected a whole number in 1024..65535' "DISTENV_PORT_MIN=abc: exit 2, named with the form"
tap_like "$(step DISTENV_PORT_MIN=)" '^rc=2
distenv-exec: DISTENV_PORT_MIN is empty: expected a whole number in 1024..65535' "DISTENV_PORT_MIN empty: 'is empty', exit 2"
tap_like "$(step DISTENV_PORT_MAX=-1)" '^rc=2
distenv-exec: DISTENV_PORT_MAX "-1": expected a whole number in 1024..65535' "DISTENV_PORT_MAX=-1: exit 2"
tap_like "$(step DISTENV_PORT_MAX=70000)" '^rc=2
distenv-exec: DISTENV_PORT_MAX "70000": expected a whole number in 1024..65535' "DISTENV_PORT_MAX=70000: exit 2"
tap_like "$(step DISTENV_PORT_MIN=3000x)" '^rc=2
distenv-exec: DISTENV_PORT_MIN "3000x": expected' "DISTENV_PORT_MIN=3000x (trailing junk): exit 2"
tap_like "$(step DISTENV_PORT_MIN=30000 DISTENV_PORT_MAX=29000)" '^rc=2
distenv-exec: DISTENV_PORT_MIN=30000 is above DISTENV_PORT_MAX=29000' "DISTENV_PORT_MIN above MAX: exit 2"
tap_like "$(step DISTENV_CHECK=)" '^rc=2
distenv-exec: DISTENV_CHECK is empty: expected the path of distenv-check' "DISTENV_CHECK empty: exit 2, not the default binary"
# Slurm's own variables: the environment cannot be computed, exit 1.
tap_like "$(step SLURM_JOB_ID=)" "^rc=1
distenv-exec: SLURM_JOB_ID is empty in the task's environment" "SLURM_JOB_ID empty: 'is empty', not 'is not set'"
tap_like "$(step SLURM_PROCID=abc)" '^rc=1
distenv-exec: SLURM_PROCID "abc": expected a whole number in 0..4294967295' "SLURM_PROCID=abc: named with the form"
tap_like "$(step SLURM_STEP_NUM_NODES=abc)" '^rc=1
distenv-exec: SLURM_STEP_NUM_NODES "abc": expected a whole number in 1..4294967295' "SLURM_STEP_NUM_NODES=abc: named with the form"
tap_like "$(step SLURM_STEP_NUM_NODES=)" "^rc=1
distenv-exec: SLURM_STEP_NUM_NODES is empty in the task's environment" "SLURM_STEP_NUM_NODES empty: named, not passed over for SLURM_NNODES"
tap_like "$(step SLURM_DISTRIBUTION=arbitrary SLURM_HOSTFILE=)" "^rc=1
distenv-exec: SLURM_DISTRIBUTION=arbitrary but SLURM_HOSTFILE is empty" "SLURM_HOSTFILE empty under arbitrary: 'is empty'"
tap_done
