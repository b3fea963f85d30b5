#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# templates/sweep/run.slurm acting on its verdict, on the real local
# cluster (4 nodes, run as root like an admin): a firewalled pair drains
# nothing with DRAIN=1 (both nodes named as needing a look); with node4
# drained by hand and node3's link limited with tbf, the dry run prints
# the exact scontrol command and drains nothing, DRAIN=1 drains node3
# alone with Reason="distenv: slow-node: ... (job J)"; RESUME=1 from the
# login host whose re-test does not finish (a failing distenv-check, then
# a SIGTERM mid-re-test) drains node3 again with its reason unchanged and
# leaves no reservation and no job; while it runs, a job without the
# reservation cannot get node3; the fault removed, RESUME=1 resumes node3.
# node4's own reason is never touched, and it is never a partner. Every
# tc/nft change is undone on exit.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_need_check
cluster_require --nodes 4 --cpus 2
cluster_scratch sweep-drain
TPL=$DISTENV_SRCDIR/templates/sweep/run.slurm
HAND="disk swapped, by hand"   # node4's reason, someone else's
RESV=distenv-resume
TC=0
NFT=0
undo() {
	if ((TC)); then
		nx node3 tc qdisc del dev eth0 root >/dev/null 2>&1 || true
		tc qdisc del dev distenv-node3 root >/dev/null 2>&1 || true
		TC=0
	fi
	if ((NFT)); then
		nx node3 nft delete table inet distenv_drain >/dev/null 2>&1 || true
		NFT=0
	fi
}
trap 'undo; cluster_scratch_cleanup' EXIT

# The sweeps' settings: the template's own defaults but a shorter
# --timeout (the firewalled pair's probe waits for it). LOW: threshold
# 0.25 where every node should pass (the other lanes can halve a pair's
# rate on this 2-core machine, which 0.5 names as a slow link); the tbf
# runs keep the default (node3 measures about 0.01 x; their output is a
# docs example).
SETTINGS=(DISTENV_CHECK="$CHECK" TIMEOUT=15)
LOW=PAIR_THRESHOLD=0.25

# job NAME NODES [VAR=VALUE...]: sbatch the template from $tmp/NAME, wait
# until it left the queue; sets OUTF (its output) and JID.
job() {
	local name=$1 nodes=$2 deadline=$((SECONDS + 60))
	shift 2
	mkdir -p "$tmp/$name"
	JID=$(cd "$tmp/$name" && cx env "${SETTINGS[@]}" "$@" sbatch --parsable --nodes="$nodes" "$TPL" 2>&1)
	OUTF=$tmp/$name/distenv-sweep-$JID.out
	[[ $JID =~ ^[0-9]+$ ]] || return 1
	while [[ -n $(cx squeue -h -j "$JID" -o %i 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 0.2; done
	# and its nodes out of completing
	while [[ -n $(cx sinfo -h -t completing,allocated,mixed -o %N 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 0.2; done
}

# resume NAME [VAR=VALUE...]: RESUME=1 (or what VARs say) on the login
# host, from $tmp/NAME; sets OUT (stdout and stderr) and RC.
resume() {
	local name=$1
	shift
	mkdir -p "$tmp/$name"
	OUT=$(cd "$tmp/$name" && cx env "${SETTINGS[@]}" OUT="$tmp/$name/pairs" "$@" bash "$TPL" 2>&1)
	RC=$?
}

# state NODE: "STATE|REASON" (reason "none" when none).
state() { cx sinfo -h -N -n "$1" -o '%T|%E' | head -n 1; }
# states: every node's, one line.
states() { cx sinfo -h -N -o '%N=%T|%E' | tr '\n' ' '; }
no_resv() { ! cx scontrol show reservation="$RESV" >/dev/null 2>&1; }

# --- a firewalled pair proves neither node bad: DRAIN=1 drains nothing -----
NFT=1
nx node3 nft add table inet distenv_drain &&
	nx node3 nft add chain inet distenv_drain input '{ type filter hook input priority 0; }' &&
	nx node3 nft add rule inet distenv_drain input ip saddr 10.77.0.14 drop
job link 4 DRAIN=1 "$LOW"
undo
if grep -q '^FAIL pair node3-node4: peer-timeout' "$OUTF" &&
	grep -q '^run.slurm: node3: needs a look, not drained (the sweep proves neither node of a link bad): failing-link node3-node4: peer-timeout' "$OUTF" &&
	grep -q '^run.slurm: node4: needs a look, not drained' "$OUTF" &&
	grep -q '^run.slurm: node1: passes: left as it is' "$OUTF" && ! grep -q 'drained:' "$OUTF" &&
	[[ $(states) == "node1=idle|none node2=idle|none node3=idle|none node4=idle|none " ]]; then
	tap_ok "node3 drops node4's packets, DRAIN=1: the link named, both nodes need a look, nothing drained"
else
	tap_fail "firewalled pair with DRAIN=1 (job $JID): $(states)" "$(cat "$OUTF" 2>&1)"
fi

# --- node4 drained by hand; node3 limited to 100 Mbit/s both ways --------------
cx scontrol update NodeName=node4 State=DRAIN Reason="$HAND"
TC=1
nx node3 tc qdisc add dev eth0 root tbf rate 100mbit burst 64kb latency 100ms &&
	tc qdisc add dev distenv-node3 root tbf rate 100mbit burst 64kb latency 100ms

job dry 3
cmd=$(sed -n 's/^run.slurm: node3: at fault; would run: //p' "$OUTF")
eval "set -- $cmd"
if [[ $# == 5 && $1 == scontrol && $2 == update && $3 == NodeName=node3 && $4 == State=DRAIN &&
	$5 == "Reason=distenv: slow-node: all 2 of its pairs below 0.5 x the median pair "*" (job $JID)" ]] &&
	grep -q '^run.slurm: node1: passes: left as it is' "$OUTF" && grep -q '^run.slurm: node2: passes' "$OUTF" &&
	grep -q '^run.slurm: dry run: nothing drained (DRAIN=1 drains)' "$OUTF" &&
	[[ $(state node3) == "idle|none" && $(state node4) == "drained|$HAND" ]]; then
	tap_ok "tbf on node3, no DRAIN: prints the exact scontrol command for node3 alone, drains nothing"
else
	tap_fail "dry run (job $JID): $(states)" "command: $cmd" "$(cat "$OUTF" 2>&1)"
fi

job drain 3 DRAIN=1
cluster_example sweep-drain "$(grep '^run.slurm: ' "$OUTF")"
reason3=$(state node3)
reason3=${reason3#*|}
if [[ $(state node3) == drained\|* && $reason3 == "distenv: slow-node: all 2 of its pairs below 0.5 x the median pair "*" (job $JID)" ]] &&
	grep -qF "run.slurm: node3: drained: Reason=\"$reason3\"" "$OUTF" &&
	[[ $(state node1) == "idle|none" && $(state node2) == "idle|none" && $(state node4) == "drained|$HAND" ]]; then
	tap_ok "DRAIN=1: node3 alone drained, Reason=\"$reason3\"; node4's reason untouched"
else
	tap_fail "DRAIN=1 (job $JID): $(states)" "$(cat "$OUTF" 2>&1)"
fi

# --- RESUME whose re-test does not finish: all put back --------------------------
back() { # back NAME: node3 drained with its reason unchanged, no reservation, no job, the rest as they were
	[[ $(state node3) == "drained|$reason3" && $(state node4) == "drained|$HAND" &&
		$(state node1) == "idle|none" && $(state node2) == "idle|none" ]] && no_resv &&
		[[ -z $(cx squeue -h -o %i) ]]
}
resume fails RESUME=1 DISTENV_CHECK=/bin/false
if ((RC == 1)) && back && [[ $OUT == *"run.slurm: node4: left as it is: drained for another reason (Reason=$HAND)"* &&
	$OUT == *"run.slurm: node3: undrained into $RESV for the re-test"* &&
	$OUT == *"run.slurm: node3: drained again, reason unchanged: the re-test did not settle it"* &&
	$OUT == *"run.slurm: reservation $RESV deleted"* ]]; then
	tap_ok "RESUME=1, distenv-check fails: node3 drained again with its reason, reservation deleted, exit 1"
else
	tap_fail "RESUME=1 with a failing distenv-check (exit $RC): $(states)" "$OUT" "$(cx scontrol show reservation 2>&1)"
fi

# A re-test that hangs, and SIGTERM: the traps put everything back. While
# it runs, node3 is undrained but kept from jobs outside the reservation.
printf '#!/bin/sh\nexec sleep 60\n' >"$tmp/hang"
chmod 0755 "$tmp/hang"
mkdir -p "$tmp/term"
# Not through cx: its timeout would take the signal; exec all the way, so
# that $! is the template's own bash.
(cd "$tmp/term" && exec "$DISTENV_CLUSTER" exec -- env "${SETTINGS[@]}" RESUME=1 DISTENV_CHECK="$tmp/hang" \
	OUT="$tmp/term/pairs" bash "$TPL" >"$tmp/term.out" 2>&1) &
pid=$!
deadline=$((SECONDS + 20))
until [[ -n $(cx squeue -h -R "$RESV" -t R -o %i 2>/dev/null) ]] || ((SECONDS > deadline)); do sleep 0.2; done
mid=$(state node3)
other=$(cx srun -w node3 -N1 --immediate=2 true 2>&1)
orc=$?
kill -TERM "$pid"
wait "$pid"
RC=$?
OUT=$(cat "$tmp/term.out")
if [[ $mid == allocated\|* ]] && ((orc != 0)) && ((RC == 143)) && back &&
	[[ $OUT == *"run.slurm: node3: drained again, reason unchanged"* && $OUT == *"reservation $RESV deleted"* ]]; then
	tap_ok "RESUME=1, SIGTERM mid-re-test: job cancelled, node3 drained again with its reason, reservation deleted (meanwhile a job outside it could not get node3)"
else
	tap_fail "RESUME=1 and SIGTERM (exit $RC, node3 meanwhile $mid, other job exit $orc): $(states)" "$other" "$OUT"
fi

# --- the fault removed ------------------------------------------------------------
undo
resume plan
if ((RC == 0)) && back && [[ $OUT == *"run.slurm: would re-test node3 against node1 node2 (partition debug):"* &&
	$OUT == *"would run: scontrol create reservation ReservationName=$RESV Users=root Nodes=node3,node1,node2 StartTime=now Duration=UNLIMITED"* &&
	$OUT == *"would run: scontrol update NodeName=node3 State=RESUME"* &&
	$OUT == *"dry run: nothing done"* ]]; then
	tap_ok "outside a job without RESUME=1: prints what RESUME=1 would do (node3 against node1 node2), does nothing"
else
	tap_fail "resume dry run (exit $RC): $(states)" "$OUT"
fi

resume resume RESUME=1 "$LOW"
cluster_example sweep-resume "$OUT"
if ((RC == 0)) && [[ $(state node3) == "idle|none" && $(state node1) == "idle|none" && $(state node2) == "idle|none" &&
	$(state node4) == "drained|$HAND" ]] && no_resv &&
	[[ $OUT == *"run.slurm: node3: resumed: passes the re-test (was: $reason3)"* &&
	$OUT == *"run.slurm: node4: left as it is: drained for another reason (Reason=$HAND)"* ]]; then
	tap_ok "fault removed, RESUME=1: node3 resumed (idle), node4 still drained with its own reason, no reservation left"
else
	tap_fail "RESUME=1 after the fault (exit $RC): $(states)" "$OUT"
fi

cx scontrol update NodeName=node4 State=RESUME
if cluster_healthy; then tap_ok "cluster healthy after the sweeps"; else tap_fail "cluster healthy after the sweeps"; fi
tap_done
