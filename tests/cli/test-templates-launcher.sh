#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sbatch templates' launcher choice, without Slurm: each template run
# by bash as a batch script would be (SLURM_JOB_ID set), with a PATH that
# has neither srun nor distenv-exec, stops before any step with exit 2 and
# a message that says what chose the launcher: DISTENV_LAUNCHER=exec when
# the user set it, "DISTENV_LAUNCHER=auto chose exec (no srun on PATH)"
# when nobody did. (An srun without the plugin: tests/cluster/test-templates.sh.)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

BASH_BIN=$(command -v bash)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty-path"
: >"$tmp/train.py"

# tpl TEMPLATE VAR=VALUE...: "rc=N" and the template's stderr.
tpl() {
	local t=$1 rc=0 err
	shift
	err=$(env -i PATH="$tmp/empty-path" SLURM_JOB_ID=1 PROGRAM="$tmp/train.py" "$@" \
		"$BASH_BIN" "$src/templates/$t" 2>&1 >/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$err"
}

for t in generic/run.slurm generic/run-cpu.slurm cpu-dryrun/run.slurm parallelcluster/run.slurm \
	cluster-toolkit/run.slurm oci-hpc/run.slurm; do
	[ -f "$src/templates/$t" ] || { tap_fail "templates/$t exists"; continue; }
	tap_is "$(tpl "$t")" "rc=2
run.slurm: error: DISTENV_LAUNCHER=auto chose exec (no srun on PATH): distenv-exec not found on PATH (install distenv, or set DISTENV_EXEC=/path/to/distenv-exec)" \
		"$t: DISTENV_LAUNCHER unset, no srun: says auto chose exec and why, exit 2"
	tap_is "$(tpl "$t" DISTENV_LAUNCHER=exec DISTENV_EXEC=/nonexistent/distenv-exec)" "rc=2
run.slurm: error: DISTENV_LAUNCHER=exec: /nonexistent/distenv-exec not found on PATH (install distenv, or set DISTENV_EXEC=/path/to/distenv-exec)" \
		"$t: DISTENV_LAUNCHER=exec set: blames the setting, exit 2"
done
tap_done
