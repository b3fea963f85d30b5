#!/bin/bash
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
tap_done
