# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tap.sh: a tiny TAP producer for bash test scripts. Source it, call the
# checks, end with `tap_done` (its status is the script's):
#
#   . "$(dirname "$0")/../lib/tap.sh"
#   tap_check "srun works" srun -N2 true
#   tap_is "$(hostname)" node1 "hostname"
#   tap_done
#
# Detail lines go to stdout as "# ..." (TAP diagnostics). With TAP_TAG set
# (tests/run sets it to the Slurm version a file runs against), every result
# line starts with "[TAG] ", so that a failure names what it ran on.

TAP_N=0
TAP_FAILED=0
TAP_PREFIX=${TAP_TAG:+[$TAP_TAG] }

# tap_diag LINES...: every line of every argument as a "# " line.
tap_diag() {
	local arg line
	for arg in "$@"; do
		while IFS= read -r line || [[ -n $line ]]; do
			printf '#   %s\n' "$line"
		done <<<"$arg"
	done
}

tap_ok() { # DESC
	TAP_N=$((TAP_N + 1))
	printf 'ok %d - %s%s\n' "$TAP_N" "$TAP_PREFIX" "$1"
}

tap_fail() { # DESC [DETAIL...]
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	printf 'not ok %d - %s%s\n' "$TAP_N" "$TAP_PREFIX" "$1"
	shift
	(($#)) && tap_diag "$@"
	return 0
}

tap_skip() { # DESC REASON
	TAP_N=$((TAP_N + 1))
	printf 'ok %d - %s%s # SKIP %s\n' "$TAP_N" "$TAP_PREFIX" "$1" "${2-}"
}

# tap_check DESC CMD...: ok when CMD exits 0; else its output as diagnostics.
# Returns CMD's status so callers can chain on it.
tap_check() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		tap_ok "$desc"
	else
		tap_fail "$desc" "command: $*" "exit status: $rc" "${out:-(no output)}"
	fi
	return "$rc"
}

tap_is() { # GOT WANT DESC
	if [[ $1 == "$2" ]]; then
		tap_ok "$3"
	else
		tap_fail "$3" "got:  '$1'" "want: '$2'"
		return 1
	fi
}

tap_like() { # GOT REGEX DESC
	if [[ $1 =~ $2 ]]; then
		tap_ok "$3"
	else
		tap_fail "$3" "got:  '$1'" "want: match of /$2/"
		return 1
	fi
}

# tap_done: print the plan; non-zero when anything failed.
tap_done() {
	printf '1..%d\n' "$TAP_N"
	if ((TAP_FAILED)); then
		printf '# failed %d of %d\n' "$TAP_FAILED" "$TAP_N"
		return 1
	fi
	return 0
}

tap_skip_all() { # REASON
	printf '1..0 # SKIP %s%s\n' "$TAP_PREFIX" "$1"
	exit 0
}
