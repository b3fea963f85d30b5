#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check's environment, without a cluster: every variable it reads
# goes through one parser (src/lib/parse.c). A malformed or empty value
# exits 2 with a line naming the variable, its value and the form
# expected; a process that cannot read its own RANK is no rank (not rank
# 0: no "[rank 0/N]", --json "rank":null, no --json-summary). One rank on
# 127.0.0.1; most cases fail before any rendezvous.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
host=$(hostname)


# chk [-VAR...] [VAR=VALUE...] [-- ARGS...]: rank 0 of a world of 1 on
# 127.0.0.1 with a secret, minus each -VAR, plus each VAR=VALUE (last one
# wins), run with ARGS; prints "rc=N", its stdout, "--stderr--", its stderr.
chk() {
	local -A base=([PATH]=/usr/bin:/bin [DISTENV_SECRET]=$secret [RANK]=0 [WORLD_SIZE]=1
		[MASTER_ADDR]=127.0.0.1 [MASTER_PORT]=$(free_port))
	local envs=() args=() a k rc=0 o
	while (($#)); do
		a=$1
		shift
		case $a in
		--) args=("$@"); break ;;
		-*) unset "base[${a#-}]" ;;
		*=*) base[${a%%=*}]=${a#*=} ;;
		esac
	done
	for k in "${!base[@]}"; do envs+=("$k=${base[$k]}"); done
	o=$(env -i "${envs[@]}" timeout -k 5 60 "$CHECK" --timeout=10 "${args[@]}" 2>"$tmp/err") || rc=$?
	printf 'rc=%s\n%s\n--stderr--\n%s\n' "$rc" "$o" "$(cat "$tmp/err")"
}
# tap_unlike GOT REGEX DESC: ok when GOT does not match.
tap_unlike() {
	if [[ $1 =~ $2 ]]; then
		tap_fail "$3" "got:  '$1'" "want: no match of /$2/"
	else
		tap_ok "$3"
	fi
}

# run_ok ARGS...: chk for a run meant to pass; a port another process
# took between free_port and the listen is retried, twice.
run_ok() {
	local out _
	for _ in 1 2 3; do
		out=$(chk "$@")
		[[ $out == *"FAIL port-in-use"* ]] || break
	done
	printf '%s\n' "$out"
}

# bad VAR=VALUE... -- PATTERN NAME: exit 2 and one FAIL line matching PATTERN.
bad() {
	local vars=() pat name out
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	pat=$2 name=$3
	out=$(chk "${vars[@]}")
	tap_like "$out" "^rc=2
.*FAIL $pat" "$name"
}

# DISTENV_SPIN_US (socket backend): a number of microseconds, else exit 2
# naming it and the form; a good one runs.
for v in abc -1 1000001; do
	bad DISTENV_SPIN_US="$v" -- "environment: DISTENV_SPIN_US \"$v\": expected a whole number in 0\.\.1000000 \(microseconds a waiting rank spins" \
		"DISTENV_SPIN_US=$v: exit 2, named with the form"
done
tap_like "$(run_ok DISTENV_SPIN_US=0)" "^rc=0" "DISTENV_SPIN_US=0: the check runs"

# The issue's cases: each exit 2, each naming its variable and the form.
for v in abc 1x 0 -3; do
	bad GROUP_WORLD_SIZE="$v" -- "environment: GROUP_WORLD_SIZE \"$v\": expected a whole number in 1\.\.4294967294 -- " \
		"GROUP_WORLD_SIZE=$v: exit 2, named with the form"
done
out=$(chk GROUP_WORLD_SIZE=-3)
tap_unlike "$out" "4294967293" "GROUP_WORLD_SIZE=-3 never wraps to 4294967293 nodes"
bad SLURM_STEP_NUM_NODES=abc -- 'environment: SLURM_STEP_NUM_NODES "abc": expected a whole number' \
	"SLURM_STEP_NUM_NODES=abc: exit 2, named"
bad SLURM_NNODES=1x -- 'environment: SLURM_NNODES "1x": expected a whole number' "SLURM_NNODES=1x: exit 2, named"
bad MASTER_PORT=70000 -- 'environment: MASTER_PORT "70000": expected a whole number in 1\.\.65535' \
	"MASTER_PORT=70000: exit 2, named with the range"
bad MASTER_PORT=0 -- 'environment: MASTER_PORT "0": expected a whole number in 1\.\.65535' "MASTER_PORT=0: exit 2"
bad MASTER_PORT= -- 'environment: MASTER_PORT is empty: expected a whole number in 1\.\.65535' \
	"MASTER_PORT empty: 'is empty', not 'not set'"
bad WORLD_SIZE=0 -- 'environment: WORLD_SIZE "0": expected a whole number in 1\.\.' "WORLD_SIZE=0: exit 2"
bad WORLD_SIZE=' 2' -- 'environment: WORLD_SIZE " 2": expected a whole number' "WORLD_SIZE with a blank: exit 2"
bad MASTER_ADDR= -- 'environment: MASTER_ADDR is empty: expected a host name' "MASTER_ADDR empty: exit 2, 'is empty'"
bad LOCAL_WORLD_SIZE=0 -- 'local-rank: LOCAL_WORLD_SIZE "0": expected a whole number in 1\.\.' \
	"LOCAL_WORLD_SIZE=0: exit 2, named"
bad LOCAL_RANK=x -- 'local-rank: LOCAL_RANK "x": expected a whole number in 0\.\.' "LOCAL_RANK=x: exit 2"
bad GROUP_RANK=0 NODE_RANK=1 -- 'node-rank: GROUP_RANK=0 but NODE_RANK=1: one node, one value' \
	"GROUP_RANK=0 NODE_RANK=1: exit 2, both named"
bad NODE_RANK=-1 -- 'node-rank: NODE_RANK "-1": expected a whole number' "NODE_RANK=-1: exit 2"
bad DISTENV_SIMULATED=abc -- 'environment: DISTENV_SIMULATED "abc": expected a whole number' \
	"DISTENV_SIMULATED=abc: exit 2, named"
bad DISTENV_TOKEN= -- 'environment: DISTENV_TOKEN is empty: expected' "DISTENV_TOKEN empty: exit 2"

# Flags: 1/0, yes/no, true/false, on/off; anything else refused by name.
bad DISTENV_INSECURE=maybe -- 'environment: DISTENV_INSECURE "maybe": expected 1 or 0 \(also yes/no, true/false, on/off\)' \
	"DISTENV_INSECURE=maybe: exit 2, named with the spellings"
bad DISTENV_INSECURE= -- 'environment: DISTENV_INSECURE is empty: expected 1 or 0' "DISTENV_INSECURE empty: exit 2"
out=$(run_ok -DISTENV_SECRET DISTENV_INSECURE=yes)
tap_like "$out" "^rc=0
.*--stderr--
.*--insecure: the rendezvous and data ports accept anyone" "DISTENV_INSECURE=yes: honoured (no longer silently ignored)"
out=$(chk DISTENV_INSECURE=0 DISTENV_SECRET=)
tap_like "$out" '^rc=2
.*FAIL environment: DISTENV_SECRET is empty: expected a secret' "DISTENV_SECRET empty: exit 2, named"
printf 'short\n' >"$tmp/short-secret"
chmod 600 "$tmp/short-secret"
out=$(chk -DISTENV_SECRET DISTENV_SECRET_FILE="$tmp/short-secret")
tap_like "$out" '^rc=2
.*FAIL usage: the secret in DISTENV_SECRET_FILE is 5 bytes long: expected at least 16' \
	"DISTENV_SECRET_FILE with a 5-byte secret: refused, its length named (it once read 0)"

# The hint: srun advice only when variables are missing.
out=$(chk MASTER_PORT=70000)
tap_like "$out" " -- the variable is set, but empty or malformed: give it the form named above" \
	"a malformed value's hint is about the value"
tap_unlike "$out" "run under srun" "... not the srun advice"
out=$(chk -RANK -MASTER_PORT)
tap_like "$out" "^rc=2
distenv-check: node=$host FAIL environment: RANK MASTER_PORT not set and no Slurm step to derive them from -- run under srun" \
	"missing variables: the srun advice"

# A rank that cannot read its own RANK is no rank, never rank 0.
for v in abc "" -1 1x; do
	out=$(chk RANK="$v" WORLD_SIZE=4)
	want="RANK \"$v\": expected a whole number"
	[ -z "$v" ] && want="RANK is empty: expected a whole number"
	tap_like "$out" "^rc=2
distenv-check: node=$host FAIL environment: $want" "RANK='$v': 'distenv-check: node=$host FAIL', exit 2"
	tap_unlike "$out" '\[rank ' "RANK='$v': no [rank N/M] prefix"
done
out=$(chk RANK=abc WORLD_SIZE=4 -- --json)
tap_like "$out" '^rc=2
\{"rank":null,"world":4,"node":"[^"]*","ok":false,"diagnosis":"environment","message":"RANK \\"abc\\": expected' \
	'RANK=abc --json: "rank":null'
out=$(chk RANK=abc WORLD_SIZE=abc -- --json)
tap_like "$out" '^rc=2
\{"rank":null,"world":null,' 'WORLD_SIZE=abc --json: "world":null too'
rm -f "$tmp/sum.json"
out=$(chk RANK=abc WORLD_SIZE=4 -- --json-summary="$tmp/sum.json")
if [[ $out == rc=2* ]] && [ ! -e "$tmp/sum.json" ]; then
	tap_ok "RANK=abc --json-summary: no summary written (it cannot know it is rank 0)"
else
	tap_fail "RANK=abc --json-summary" "$out" "$(cat "$tmp/sum.json" 2>&1)"
fi
# ... while rank 0 that fails on another variable does write the verdict.
out=$(chk MASTER_PORT=70000 -- --json-summary="$tmp/sum.json")
if [[ $out == rc=2* ]] && grep -q '"diagnosis":"environment","message":"MASTER_PORT \\"70000\\"' "$tmp/sum.json"; then
	tap_ok "rank 0 with MASTER_PORT=70000: its --json-summary names the variable"
else
	tap_fail "rank 0 --json-summary" "$out" "$(cat "$tmp/sum.json" 2>&1)"
fi

# Interface variables: the error quotes the variable and its value as
# written. GLOO_SOCKET_IFNAME is a list of exact names, every one must
# exist (gloo opens a device on each); NCCL's and ours take NCCL's syntax.
bad GLOO_SOCKET_IFNAME=nosuch0 -- 'usage: GLOO_SOCKET_IFNAME="nosuch0": no up interface named "nosuch0" with an IPv[46] address \(this node has: ' \
	'GLOO_SOCKET_IFNAME=nosuch0: quoted as written, no "=nosuch0"'
bad GLOO_SOCKET_IFNAME=lo,nosuch0 -- 'usage: GLOO_SOCKET_IFNAME="lo,nosuch0": no up interface named "nosuch0" .*gloo opens a device on every name listed, so each must exist' \
	"GLOO_SOCKET_IFNAME=lo,nosuch0: refused (every name must exist), the missing one named"
bad NCCL_SOCKET_IFNAME=nosuch -- 'usage: NCCL_SOCKET_IFNAME="nosuch": no up interface with an IPv[46] address matches "nosuch"' \
	"NCCL_SOCKET_IFNAME=nosuch: quoted as written"
bad DISTENV_SOCKET_IFNAME= -- 'environment: DISTENV_SOCKET_IFNAME is empty: expected interface names' \
	"DISTENV_SOCKET_IFNAME empty: exit 2 (distenv's own variable)"
out=$(run_ok GLOO_SOCKET_IFNAME=)
tap_like "$out" "^rc=0
.*PASS.*\(route to MASTER_ADDR\)" "GLOO_SOCKET_IFNAME empty: not set, as PyTorch reads it"
out=$(run_ok GLOO_SOCKET_IFNAME=lo)
tap_like "$out" "^rc=0
.*PASS.*data interface lo \(GLOO_SOCKET_IFNAME=lo\)" "GLOO_SOCKET_IFNAME=lo: the control case passes"
tap_done
