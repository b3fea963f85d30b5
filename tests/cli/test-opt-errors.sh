#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The three tools' option errors, without a cluster: each says what GNU
# getopt says (src/lib/opterr.c), then the --help hint, exit 2 (each man
# page: 2 is a usage error); a unique abbreviation works; --version's
# first line is "NAME (distenv) VERSION".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

build=${DISTENV_BUILD_DIR:-.}
for t in distenv-check distenv-exec distenv-hostnames; do
	if [ ! -x "$build/src/$t" ]; then
		echo "1..1"
		echo "not ok 1 - $t built at $build/src/$t"
		exit 1
	fi
done
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$build/config.h" 2>/dev/null)

# run TOOL ARGS...: "rc=N" then TOOL's stderr, outside any job and with no
# torchrun variables (an option error comes before any of them is read).
run() {
	local tool=$1 err rc=0
	shift
	err=$(env -i PATH=/usr/bin:/bin "$build/src/$tool" "$@" 2>&1 >/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$err"
}

# out TOOL ARGS...: "rc=N" then TOOL's stdout.
out() {
	local tool=$1 o rc=0
	shift
	o=$(env -i PATH=/usr/bin:/bin "$build/src/$tool" "$@" 2>/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$o"
}

# usage_error TOOL MESSAGE ARGS...: exit 2, MESSAGE, then the hint; nothing else.
usage_error() {
	local tool=$1 msg=$2
	shift 2
	tap_is "$(run "$tool" "$@")" "rc=2
$tool: $msg
Try '$tool --help' for more information." "$tool $*: $msg, exit 2"
}

# version TOOL ARGS...: the first line of stdout, exit 0.
version() {
	local tool=$1 got
	shift
	got=$(out "$tool" "$@" | head -2)
	if [ -n "$version" ]; then
		tap_is "$got" "rc=0
$tool (distenv) $version" "$tool $*: '$tool (distenv) $version'"
	else
		tap_like "$got" "^rc=0
$tool \(distenv\) [0-9]+\.[0-9]+" "$tool $*: '$tool (distenv) VERSION' (no config.h for the exact one)"
	fi
}

# --- distenv-check ---------------------------------------------------------------
usage_error distenv-check "option '--verbose' doesn't allow an argument" --verbose=1
usage_error distenv-check "option '--verbose' doesn't allow an argument" --verb=1
usage_error distenv-check "option '--json' doesn't allow an argument" --json=x
usage_error distenv-check "unrecognized option '--foo'" --foo
usage_error distenv-check "unrecognized option '--foo=1'" --foo=1
usage_error distenv-check "invalid option -- 'x'" -x
usage_error distenv-check "invalid option -- 'x'" -vx
usage_error distenv-check "option '--timeout' requires an argument" --timeout
usage_error distenv-check "option '--timeout' requires an argument" --time
usage_error distenv-check "option requires an argument -- 'd'" -d
usage_error distenv-check "option '--p' is ambiguous; possibilities: '--pairs' '--pair-bytes' '--pair-threshold' '--pairs-out' '--port-range'" --p
usage_error distenv-check "option '--js' is ambiguous; possibilities: '--json' '--json-summary'" --js
# --tim takes 3: the error is --bogus's, so the abbreviation parsed.
usage_error distenv-check "unrecognized option '--bogus'" --tim 3 --bogus
version distenv-check --vers
version distenv-check --version
version distenv-check -V

# --- distenv-exec ----------------------------------------------------------------
usage_error distenv-exec "option '--verbose' doesn't allow an argument" --verbose=1 true
usage_error distenv-exec "option '--force' doesn't allow an argument" --force=yes true
usage_error distenv-exec "unrecognized option '--foo'" --foo true
usage_error distenv-exec "unrecognized option '--foo=1'" --foo=1 true
usage_error distenv-exec "invalid option -- 'x'" -x true
# Its only option with a value, --check, takes it optionally (after '='):
# no missing argument.
tap_skip "distenv-exec: a missing argument" "no option of distenv-exec requires one"
usage_error distenv-exec "option '--ver' is ambiguous; possibilities: '--verbose' '--version'" --ver true
tap_is "$(run distenv-exec --forc --verb true)" "rc=1
distenv-exec: SLURM_JOB_ID is not set: run distenv-exec in a Slurm job (srun distenv-exec PROGRAM, or in the job script)" \
	"distenv-exec --forc --verb true: abbreviations accepted (then: not in a job, exit 1)"
version distenv-exec --vers
version distenv-exec --version
version distenv-exec -V

# --- distenv-hostnames -----------------------------------------------------------
usage_error distenv-hostnames "option '--count' doesn't allow an argument" --count=1 'n[1-3]'
usage_error distenv-hostnames "option '--slurm-22' doesn't allow an argument" --slurm-22=no 'n[1-3]'
usage_error distenv-hostnames "unrecognized option '--foo'" --foo 'n[1-3]'
usage_error distenv-hostnames "unrecognized option '--foo=1'" --foo=1 'n[1-3]'
usage_error distenv-hostnames "invalid option -- 'q'" -q 'n[1-3]'
usage_error distenv-hostnames "invalid option -- '2'" -2 'n[1-3]'
usage_error distenv-hostnames "option '--index' requires an argument" 'n[1-3]' --index
usage_error distenv-hostnames "option requires an argument -- 'i'" 'n[1-3]' -i
# first, count, index, slurm-22, help, version: no two share a prefix.
tap_skip "distenv-hostnames: an ambiguous prefix" "no two of its long options share a prefix"
tap_is "$(out distenv-hostnames --cou 'n[1-3]')" "rc=0
3" "distenv-hostnames --cou: the unique abbreviation of --count"
tap_is "$(out distenv-hostnames --ind=1 'n[1-3]')" "rc=0
n2" "distenv-hostnames --ind=1: the unique abbreviation of --index"
version distenv-hostnames --vers
version distenv-hostnames --version
version distenv-hostnames -V
tap_done
