#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One order of authentication, everywhere: the order distenv-check really
# follows (seen by running it, one rank on 127.0.0.1, with several ways
# set at once: the PASS line names the one it took), the order --help
# prints, the man page's AUTHENTICATION list and docs/security.md's table
# must all be the same. MUNGE is a real munged of our own (its own key and
# socket under a temp dir), skipped where munged is not installed or does
# not start.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
tmp=$(mktemp -d)
munged_pid=""
cleanup() {
	[ -n "$munged_pid" ] && kill "$munged_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT


# --- the order as written -------------------------------------------------------------
# --help: "  N. NAME: what selects it".
help_order=$("$CHECK" --help | sed -n 's/^  [0-9]\. \([^:]*\): .*/\1/p' | paste -sd ';' -)
# The man page: after the auth-order marker, the bold word after each .IP.
man_order=$(awk '/^\.\\" auth-order/ { on = 1; next }
	on && /^\.(PP|SH)/ { exit }
	on && /^\.IP / { want = 1; next }
	on && want && /^\.B / { sub(/^\.B /, ""); gsub(/\\-/, "-"); print; want = 0 }' \
	"$src/docs/man/distenv-check.1" | paste -sd ';' -)
# docs/security.md: the first cell of each row of the table after its marker.
md_order=$(awk '/^<!-- auth-order/ { on = 1; next }
	on && !/^\|/ { exit }
	on && /^\| `/ { split($0, c, "|"); s = c[2]; gsub(/^ *`|` *$/, "", s); print s }' \
	"$src/docs/security.md" | paste -sd ';' -)
tap_like "$help_order" '^[^;]+(;[^;]+){3}$' "--help lists four ways to authenticate: $help_order"

# --- the order the code follows ---------------------------------------------------------
# A munged of our own, where there is one.
have_munge=0
if command -v munged >/dev/null; then
	mkdir -m 755 "$tmp/munge"
	dd if=/dev/urandom of="$tmp/munge/key" bs=1024 count=1 2>/dev/null
	chmod 600 "$tmp/munge/key"
	if munged --foreground --force --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" \
		--pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/munge/log" \
		>/dev/null 2>&1 &
	then
		munged_pid=$!
		for _ in $(seq 50); do
			[ -S "$tmp/munge/sock" ] && break
			sleep 0.1
		done
		[ -S "$tmp/munge/sock" ] && have_munge=1
	fi
fi

# run WAY...: one rank with each WAY set (insecure, secret, munge, step;
# munge off otherwise: a socket nobody listens on); prints "rc=N" and
# its output.
run() {
	local envs=(PATH=/usr/bin:/bin RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)"
		DISTENV_MUNGE_SOCKET="$tmp/no-munged") w rc=0 out
	for w in "$@"; do
		case $w in
		insecure) envs+=(DISTENV_INSECURE=1) ;;
		secret) envs+=(DISTENV_SECRET=0123456789abcdef0123456789abcdef) ;;
		munge) envs+=(DISTENV_MUNGE_SOCKET="$tmp/munge/sock") ;;
		step) envs+=(DISTENV_STEP_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')") ;;
		esac
	done
	out=$(env -i "${envs[@]}" timeout -k 5 60 "$CHECK" --timeout=10 2>&1) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$out"
}

# way_of NAME: the WAY whose method the PASS line calls NAME.
way_of() {
	case $1 in
	"none (--insecure)") echo insecure ;;
	"shared secret") echo secret ;;
	munge) echo munge ;;
	"step secret") echo step ;;
	*) echo "?" ;;
	esac
}

# Every way set; the one taken is removed, and again, until none is left.
ways=(insecure secret step)
((have_munge)) && ways+=(munge)
code_order=""
for _ in 1 2 3 4; do
	((${#ways[@]})) || break
	out=$(run "${ways[@]}")
	name=$(sed -n 's/.*distenv-check: PASS: .*(authentication: \([^)]*)\{0,1\}\)), node probe.*/\1/p' <<<"$out")
	if [[ $out != rc=0* || -z $name ]]; then
		tap_fail "with ${ways[*]} set: a PASS that names the way taken" "$out"
		break
	fi
	w=$(way_of "$name")
	if [[ " ${ways[*]} " != *" $w "* ]]; then
		tap_fail "with ${ways[*]} set: the PASS line names one of them (got \"$name\")" "$out"
		break
	fi
	tap_ok "with ${ways[*]} set: distenv-check takes $name"
	code_order+="${code_order:+;}$name"
	mapfile -t ways < <(printf '%s\n' "${ways[@]}" | grep -vx "$w")
done
out=$(run)
tap_like "$out" '^rc=2
.*FAIL usage: no authentication: ' "with none set: usage, exit 2"

# Without munged the code's order lacks munge: compare the others.
if ((have_munge)); then
	strip() { cat; }
else
	tap_skip "MUNGE's place in the order, by running it" "no munged here (or it did not start)"
	strip() { tr ';' '\n' | grep -vx munge | paste -sd ';' -; }
fi
tap_is "$(strip <<<"$help_order")" "$code_order" "--help's order is the code's"
tap_is "$(strip <<<"$man_order")" "$code_order" "distenv-check(1) AUTHENTICATION's order is the code's"
tap_is "$(strip <<<"$md_order")" "$code_order" "docs/security.md's table's order is the code's"
tap_is "$man_order" "$help_order" "the man page names the four as --help does"
tap_is "$md_order" "$help_order" "docs/security.md names the four as --help does"
tap_done
