#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check's exit status, as distenv-check(1)'s EXIT STATUS says: 0
# verified; 1 the check failed; 2 a usage error found before the
# rendezvous (bad option; missing, empty or malformed variable: usage,
# environment, rank-out-of-range, and local-rank or node-rank when the
# rank's own variables are wrong; no usable authentication or a short
# DISTENV_SECRET; no usable data interface; rank 0's --json-summary file or
# --pairs-out folder unwritable, no gnuplot); the same diagnoses found by
# rank 0 across the job, or told by rank 0, exit 1. One row per situation,
# each the real distenv-check, 1 to 3 ranks on 127.0.0.1, asserting the
# exit status and the diagnosis word; the diagnoses of the man page's
# DIAGNOSES that need a cluster, a firewall or a GPU are named skipped,
# with the test that covers them. Every usage message names the option,
# variable or file its hint tells to fix.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
TIMEOUT=$(command -v timeout) || tap_skip_all "no timeout(1)"
command -v python3 >/dev/null || tap_skip_all "no python3 (the fake servers are python)"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
tmp=$(mktemp -d)
pids=()
servers=()
cleanup() {
	local p
	for p in "${pids[@]}" "${servers[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT


# rank_env OUT [-VAR...] [VAR=VALUE...]: OUT (an array name) gets the
# environment of a rank: rank 0 of 1 on 127.0.0.1 at $PORT with the
# secret, MUNGE off, minus each -VAR, plus each VAR=VALUE.
rank_env() {
	local -n into=$1
	shift
	local -A e=([PATH]=/usr/bin:/bin [DISTENV_SECRET]=$secret [RANK]=0 [WORLD_SIZE]=1
		[MASTER_ADDR]=127.0.0.1 [MASTER_PORT]=$PORT [DISTENV_MUNGE_SOCKET]=$tmp/no-munged)
	local a k
	for a in "$@"; do
		case $a in
		-*) unset "e[${a#-}]" ;;
		*=*) e[${a%%=*}]=${a#*=} ;;
		esac
	done
	into=()
	for k in "${!e[@]}"; do into+=("$k=${e[$k]}"); done
}

# start R [ENV...] [-- ARGS...]: rank R in the background (output in
# $tmp/out.R, exit status in $tmp/rc.R).
start() {
	local r=$1 vars=() args=() envs=()
	shift
	while (($#)); do
		[ "$1" = -- ] && { shift; args=("$@"); break; }
		vars+=("$1")
		shift
	done
	rank_env envs "${vars[@]}"
	(
		env -i "${envs[@]}" "$TIMEOUT" -k 5 60 "$CHECK" --timeout=4 "${args[@]}" >"$tmp/out.$r" 2>&1
		echo $? >"$tmp/rc.$r"
	) &
	pids+=($!)
}

# finish: wait for the ranks started.
finish() {
	local p
	for p in "${pids[@]}"; do wait "$p"; done
	pids=()
}

# expect R RC DIAG DESC: rank R exited RC with "FAIL DIAG:" in its output
# (DIAG "-": an option error, no FAIL line; "PASS": the verdict).
expect() {
	local r=$1 rc=$2 diag=$3 desc=$4 got out msg
	got=$(cat "$tmp/rc.$r" 2>/dev/null)
	out=$(cat "$tmp/out.$r" 2>/dev/null)
	case $diag in
	-) [[ $got == "$rc" && $out == "distenv-check: "* && $out != *" FAIL "* ]] ;;
	PASS) [[ $got == "$rc" && $out == *"distenv-check: PASS: "* ]] ;;
	*) [[ $got == "$rc" && $out == *" FAIL $diag: "* ]] ;;
	esac || { tap_fail "$desc: exit $rc, $diag (rank $r exit $got)" "$out"; return; }
	tap_ok "$desc: exit $rc, $diag"
	# The usage hint says "fix the option, variable or file named above".
	if [ "$diag" = usage ]; then
		msg=$(sed -n 's/.* FAIL usage: \(.*\) -- fix the option, variable or file named above$/\1/p' <<<"$out")
		if [[ $msg =~ (--[a-z][a-z-]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+|/[^ ]*) ]]; then
			tap_ok "$desc: the usage message names what to fix (${BASH_REMATCH[1]})"
		else
			tap_fail "$desc: the usage message names an option, variable or file" "$out"
		fi
	fi
}

# one RC DIAG DESC [ENV...] [-- ARGS...]: a world of one.
one() {
	local rc=$1 diag=$2 desc=$3
	shift 3
	PORT=$(free_port)
	start 0 "$@"
	finish
	expect 0 "$rc" "$diag" "$desc"
}

# listener MODE PORT: a fake server on 127.0.0.1:PORT, in the background
# until the test ends: "silent" accepts and never answers; "bound" only
# holds the port.
listener() {
	python3 - "$1" "$2" <<'PY' &
import socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen(16)
held = []
while True:
    if mode == "silent":
        held.append(s.accept()[0])
    else:
        time.sleep(60)
PY
	servers+=($!)
	local _
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
		sleep 0.1
	done
}

# --- 0 -------------------------------------------------------------------------------
one 0 PASS "one rank, a shared secret"

# --- 2: the rank's own options and variables, before the rendezvous ------------------
one 2 - "an unknown option" -- --foo
one 2 - "an option's bad value (--timeout=0)" -- --timeout=0
one 2 - "--json with --pairs (no JSON for the pair matrix on stdout)" -- --json --pairs
one 2 environment "RANK missing, no Slurm step" -RANK
one 2 environment "MASTER_PORT empty" MASTER_PORT=
one 2 environment "MASTER_PORT malformed (70000)" MASTER_PORT=70000
one 2 rank-out-of-range "RANK=1 of WORLD_SIZE=1" RANK=1
one 2 local-rank "LOCAL_WORLD_SIZE=0" LOCAL_WORLD_SIZE=0
one 2 local-rank "LOCAL_RANK=x" LOCAL_RANK=x
one 2 node-rank "GROUP_RANK=0 NODE_RANK=1 (one rank's two values differ)" GROUP_RANK=0 NODE_RANK=1
one 2 node-rank "NODE_RANK=-1" NODE_RANK=-1
one 2 usage "no authentication (no secret, no munged, no step secret)" -DISTENV_SECRET
one 2 usage "DISTENV_SECRET under 16 bytes" DISTENV_SECRET=short
one 2 usage "DISTENV_SECRET_FILE that does not exist" -DISTENV_SECRET DISTENV_SECRET_FILE="$tmp/no-such-file"
one 2 usage "DISTENV_STEP_SECRET malformed" -DISTENV_SECRET DISTENV_STEP_SECRET=abc
one 2 usage "no usable data interface (DISTENV_SOCKET_IFNAME=nosuch0)" DISTENV_SOCKET_IFNAME=nosuch0
one 2 usage "WORLD_SIZE too large to be exact in float32" RANK=0 WORLD_SIZE=16777217
one 2 usage "--json-summary in a folder that does not exist" -- --json-summary="$tmp/no-dir/sum.json"
if [ -e "$tmp/no-dir" ]; then tap_fail "... and nothing written" "$(ls -la "$tmp/no-dir")"; else tap_ok "... and nothing written"; fi
one 2 usage "--json-summary naming a folder" -- --json-summary="$tmp"
: >"$tmp/a-file"
one 2 usage "--pairs-out naming a file" -- --pairs --pairs-out="$tmp/a-file"
one 2 usage "--pairs-out, DISTENV_GNUPLOT not executable" DISTENV_GNUPLOT=/nonexistent/gnuplot -- --pairs --pairs-out="$tmp/po1"
one 2 usage "--pairs-out, no gnuplot in PATH" PATH=/nonexistent -- --pairs --pairs-out="$tmp/po2"
if grep -q PASS "$tmp/out.0"; then tap_fail "no PASS line for a run that stopped" "$(cat "$tmp/out.0")"; else tap_ok "no PASS line for a run that stopped"; fi

# --- 1: what the network or the job shows --------------------------------------------
one 1 master-unresolvable "MASTER_ADDR does not resolve" MASTER_ADDR=no-such-host.invalid
one 1 master-loopback "MASTER_ADDR 127.0.0.1 on a 2-node job" RANK=0 WORLD_SIZE=2 GROUP_WORLD_SIZE=2
one 1 master-not-in-step "MASTER_ADDR not one of the step's nodes" MASTER_ADDR=localhost SLURM_STEP_NODELIST="nodex[1-2]"
one 1 master-refused "nothing listens at MASTER_ADDR:MASTER_PORT" RANK=1 WORLD_SIZE=2
one 1 missing-ranks "rank 0 alone of 2" WORLD_SIZE=2
PORT=$(free_port)
listener bound "$PORT"
start 0
finish
expect 0 1 port-in-use "MASTER_PORT taken on rank 0's host"
PORT=$(free_port)
listener silent "$PORT"
start 1 RANK=1 WORLD_SIZE=2
finish
expect 1 1 not-distenv "a server on MASTER_PORT that never answers"

# two [ENV0...] -- [ENV1...]: ranks 0 and 1 of 2 (rank 1 a little later).
two() {
	local v0=() v1=()
	while [ "$1" != -- ]; do v0+=("$1"); shift; done
	shift
	v1=("$@")
	PORT=$(free_port)
	start 0 WORLD_SIZE=2 "${v0[@]}"
	sleep 0.3
	start 1 RANK=1 WORLD_SIZE=2 "${v1[@]}"
	finish
}
two -- DISTENV_SECRET=ffffffffffffffffffffffffffffffff
expect 1 1 authentication "rank 1 with another secret"
two LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 -- LOCAL_RANK=0 LOCAL_WORLD_SIZE=2
expect 0 1 local-rank "two ranks of one node with LOCAL_RANK=0 (rank 0, across the job)"
two NODE_RANK=0 -- NODE_RANK=1
expect 0 1 node-rank "one node, two NODE_RANKs (rank 0, across the job)"
two WORLD_SIZE=2 -- WORLD_SIZE=3
expect 0 1 world-size-mismatch "WORLD_SIZE 2 and 3"
two -- -- --count=5
expect 0 1 size-mismatch "ranks with different --count"
two DISTENV_TOKEN=one -- DISTENV_TOKEN=other
expect 1 1 usage "rank 1 of another launch (DISTENV_TOKEN differs): rank 0 turns it away"
two -- --json-summary="$tmp/no-dir/sum.json" --
# (rank 1's --json-summary: only rank 0 writes one)
expect 0 0 PASS "rank 1's --json-summary is not rank 0's business"
two -- --
expect 0 0 PASS "two ranks pass"
# Rank 0's own usage error, told to the others.
PORT=$(free_port)
start 0 WORLD_SIZE=2 -- --json-summary="$tmp/no-dir/sum.json"
sleep 0.3
start 1 RANK=1 WORLD_SIZE=2
finish
expect 0 2 usage "rank 0's --json-summary unwritable: rank 0 before the rendezvous"
expect 1 1 usage "... told by rank 0 to rank 1"
if grep -q "rank 0 on [^ ]* failed before it could join: --json-summary" "$tmp/out.1"; then
	tap_ok "... rank 1 names rank 0's reason"
else
	tap_fail "... rank 1 names rank 0's reason" "$(cat "$tmp/out.1")"
fi
# A summary that can be written up front but not at the end: FAIL, no PASS, no file.
mkdir "$tmp/gone"
PORT=$(free_port)
start 0 WORLD_SIZE=2 -- --json-summary="$tmp/gone/sum.json"
sleep 0.5
rmdir "$tmp/gone"
start 1 RANK=1 WORLD_SIZE=2
finish
expect 0 1 usage "--json-summary's folder removed during the run"
if ! grep -q PASS "$tmp/out.0" && [ ! -e "$tmp/gone" ] && grep -q "the check passed, but its verdict is not in the file" "$tmp/out.0"; then
	tap_ok "... no PASS line, no file, says why"
else
	tap_fail "... no PASS line, no file, says why" "$(cat "$tmp/out.0")"
fi
# Three ranks, two with RANK=1.
PORT=$(free_port)
start 0 WORLD_SIZE=3
sleep 0.3
start 1 RANK=1 WORLD_SIZE=3
start 2 RANK=1 WORLD_SIZE=3
finish
if grep -q " FAIL duplicate-rank: " "$tmp/out.0" && [ "$(cat "$tmp/rc.0")" = 1 ]; then
	tap_ok "two processes with RANK=1: exit 1, duplicate-rank"
else
	tap_fail "two processes with RANK=1: exit 1, duplicate-rank (rank 0 exit $(cat "$tmp/rc.0"))" "$(cat "$tmp/out.0")"
fi

# --- DIAGNOSES this machine cannot show -------------------------------------------
for d in "hostname-loopback:needs a node whose name resolves to 127.0.1.1 (tests/cluster/test-check.sh)" \
	"master-timeout:needs a firewall that drops SYNs (tests/cluster/test-check.sh, test-faults.sh)" \
	"peer-refused peer-timeout bulk-stall:need a firewall or an MTU between nodes (tests/cluster/test-check.sh, test-faults.sh)" \
	"peer-lost timeout:need a rank killed or stopped mid-run (tests/cli/test-check-timeout.sh, tests/cluster/test-faults.sh)" \
	"backend-mismatch gpu-selection nccl nccl-missing shared-gpu:need GPUs or NCCL (tests/cli/test-check-nccl.sh, tests/gpu)" \
	"wrong-result aborted internal:no input makes them (a bug, or reserved)" \
	"hostname-unresolvable hostname-not-local data-interface ephemeral-ports gpu-count:distenv-check --node's, in a node's own namespaces (tests/cli/test-check-node.sh)"; do
	tap_skip "exit 1: ${d%%:*}" "${d#*:}"
done
tap_done
