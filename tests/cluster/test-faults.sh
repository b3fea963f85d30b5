#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check under faults on the real local cluster: a node that dies
# mid-step (every process in its namespace killed), rank 0 killed during the
# rendezvous and during a collective, a node's link flapping briefly (the run
# survives) and staying down past the timeout, a slow joiner just inside and
# just outside the timeout. Each run's verdict must come within timeout + a
# few seconds, with the right diagnosis naming the right rank and host; after
# every fault the cluster must be healthy again and no process of the test
# may be left anywhere (node namespaces or login host).
# shellcheck disable=SC2016
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_need_check
cluster_require --nodes 2 --cpus 4
started=$SECONDS

tmp=$(mktemp -d)
# The cluster's state dir (holder pid files) from the tool itself.
state=$("$DISTENV_CLUSTER" env | sed -n 's/^export SLURM_CONF=//p')
state=$(dirname "$state")
# Every srun of this test carries this variable, and Slurm passes it on to
# the tasks: any process with it in its environment is one of ours.
MARK="DISTENV_FAULTS_TEST=$$.$RANDOM"
BG=()          # pids of the background sruns (their timeout wrappers)
LINK_DOWN=""   # node whose eth0 we set down, until we set it up again

cleanup() {
	local p
	if [ -n "$LINK_DOWN" ]; then
		nx "$LINK_DOWN" ip link set eth0 up >/dev/null 2>&1 || true
	fi
	for p in "${BG[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

now_ms() {
	local t=${EPOCHREALTIME//[!0-9]/}
	echo $((10#$t / 1000))
}
# secs MS: "1.2s"
secs() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# run_bg NAME SRUN-ARGS...: srun in the background (output in $tmp/NAME.out,
# the pid of its timeout wrapper in BGPID and in BG).
run_bg() {
	local name=$1
	shift
	timeout -k 5 120 env "$MARK" "$DISTENV_CLUSTER" exec -- \
		srun --kill-on-bad-exit=0 "$@" >"$tmp/$name.out" 2>&1 &
	BGPID=$!
	BG+=("$BGPID")
}

# run_fg SRUN-ARGS...: srun in the foreground; its output on stdout.
run_fg() {
	timeout -k 5 120 env "$MARK" "$DISTENV_CLUSTER" exec -- \
		srun --kill-on-bad-exit=0 "$@" 2>&1
}

# wait_file FILE ERE SECONDS: until a line of FILE matches ERE.
wait_file() {
	local deadline=$(($(now_ms) + $3 * 1000))
	until grep -qE -- "$2" "$1" 2>/dev/null; do
		(($(now_ms) < deadline)) || return 1
		sleep 0.05
	done
}

# sleep_ms MS
sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# is_check PID: PID runs distenv-check.
is_check() {
	local exe
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	exe=${exe% (deleted)}
	[ "${exe##*/}" = distenv-check ]
}

# wait_check_pid FILE SECONDS: until FILE holds the pid of a live
# distenv-check (the task wrote $$ and exec'd); prints the pid.
wait_check_pid() {
	local deadline=$(($(now_ms) + $2 * 1000)) pid
	while (($(now_ms) < deadline)); do
		if read -r pid 2>/dev/null <"$1" && [[ $pid =~ ^[0-9]+$ ]] && is_check "$pid"; then
			echo "$pid"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# wait_bg PID SECONDS: wait for a background srun, at most SECONDS (then
# TERM it); its exit status, or 124 when it had to be stopped. (stderr
# closed: no "Killed" job notice when the rebuild has killed it.)
wait_bg() {
	local deadline=$(($(now_ms) + $2 * 1000)) rc=0 p keep=()
	{
		while kill -0 "$1" && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; do
			if (($(now_ms) >= deadline)); then
				kill -TERM "$1"
				rc=124
				break
			fi
			sleep 0.05
		done
		if ((rc == 124)); then
			wait "$1"
		else
			wait "$1" || rc=$?
		fi
	} 2>/dev/null
	for p in "${BG[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	BG=("${keep[@]}")
	return "$rc"
}

# line OUT ERE: the first line of OUT matching ERE.
line() { grep -m1 -E -- "$2" <<<"$1" || true; }

# strays: processes of this test still alive, one line each: any
# distenv-check in a node's namespace, any process anywhere carrying
# $MARK (srun, the tasks, their children; login host included), any of
# our background sruns.
# node_checks NODE: the pids of distenv-check running on NODE.
node_checks() {
	local pid exe
	for pid in $(ip netns pids "distenv-$1" 2>/dev/null); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		exe=${exe% (deleted)}
		[ "${exe##*/}" = distenv-check ] && echo "$pid"
	done
}

strays() {
	local ns pid exe f
	for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^distenv-node[0-9]+$/ { print $1 }'); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
			exe=${exe% (deleted)}
			[ "${exe##*/}" = distenv-check ] &&
				echo "$ns: pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		done
	done
	while read -r f; do
		pid=${f#/proc/}
		pid=${pid%/environ}
		echo "pid $pid ($(readlink "/proc/$pid/exe" 2>/dev/null)): $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done < <(grep -lzxF -- "$MARK" /proc/[0-9]*/environ 2>/dev/null)
	for pid in "${BG[@]}"; do
		kill -0 "$pid" 2>/dev/null && echo "background srun wrapper $pid still running"
	done
	return 0
}

# after_fault WHAT: the cluster is healthy (every daemon running, every
# node idle) and nothing of ours is left. An unhealthy cluster is rebuilt
# so that the next fault starts clean.
after_fault() {
	local what=$1 left="" deadline st rc=0
	st=$("$DISTENV_CLUSTER" status 2>&1) || rc=$?
	if ((rc == 0)) && cluster_healthy; then
		tap_ok "$what: cluster healthy afterwards (daemons running, every node idle)"
	else
		tap_fail "$what: cluster healthy afterwards (status rc=$rc)" "$st"
		cluster_up_raw --nodes 2 --cpus 4 >/dev/null 2>&1
	fi
	deadline=$(($(now_ms) + 5000))
	while left=$(strays) && [ -n "$left" ] && (($(now_ms) < deadline)); do
		sleep 0.1
	done
	tap_is "$left" "" "$what: no process of the test left (no distenv-check on any node or the login host)"
}

# --- 1. a node dies mid-step -------------------------------------------------
# A long bench on node1+node2; then every process in node2's namespace but
# the namespace holder is killed at once (slurmd, slurmstepd, the task), as
# when a node's whole userland dies: its kernel closes the sockets, so the
# peers see the connections end. (A node that goes silent without closing
# anything is the link-down case, 4.)
rm -f "$tmp"/f1.pid.*
run_bg f1 -N2 -n2 --ntasks-per-node=1 bash -c 'echo $$ > '"$tmp"'/f1.pid.$SLURM_PROCID; exec "$0" --bench --sizes=64M:64M --iters=400 --warmup=0 --timeout=10' "$CHECK"
f1=$BGPID
r0=$(wait_check_pid "$tmp/f1.pid.0" 20) || r0=""
if wait_file "$tmp/f1.out" 'bench 67108864 bytes' 20; then
	sleep 0.5
	holder=$(cat "$state/run/holder-node2.pid" 2>/dev/null || true)
	killed=()
	t0=$(now_ms)
	# (never without the holder's pid: that would kill the holder too)
	[[ $holder =~ ^[0-9]+$ ]] && for _ in 1 2 3 4 5; do
		victims=()
		for pid in $(ip netns pids distenv-node2 2>/dev/null); do
			[ "$pid" = "$holder" ] || victims+=("$pid")
		done
		((${#victims[@]})) || break
		kill -9 "${victims[@]}" 2>/dev/null
		killed+=("${victims[@]}")
		sleep 0.05
	done
	tap_diag "killed in distenv-node2: ${killed[*]:-nothing} (holder $holder kept)"
	if [ -n "$holder" ] && [ "$(ip netns pids distenv-node2 2>/dev/null | tr -d '\n')" = "$holder" ]; then
		tap_ok "node2 'dies': slurmd, slurmstepd and its task killed, only the namespace holder left"
	else
		tap_fail "node2 'dies' (holder=$holder)" "left: $(ip netns pids distenv-node2 2>&1 | tr '\n' ' ')"
	fi
	wait_file "$tmp/f1.out" '^\[rank 0/2\] node=node1 FAIL ' 15 &&
		wait_file "$tmp/f1.out" 'node1: task 0: Exited with exit code [1-9]' 10
	took=$(($(now_ms) - t0))
	out=$(cat "$tmp/f1.out")
	l=$(line "$out" '^\[rank 0/2\] node=node1 FAIL ')
	if [[ $l =~ FAIL\ peer-lost:.*rank\ 1.*node2 ]] && [[ $out == *"node1: task 0: Exited with exit code"* ]] &&
		((took <= 5000)) && ! kill -0 "${r0:-0}" 2>/dev/null; then
		tap_ok "node2 dies mid-bench: rank 0 on node1 exits non-zero with peer-lost naming rank 1 on node2 in $(secs "$took") (timeout 10)"
		tap_diag "$l"
	else
		tap_fail "node2 dies mid-bench -> rank 0 peer-lost naming rank 1/node2, fast ($(secs "$took"), rank 0 pid ${r0:-?})" "$out"
	fi
else
	tap_fail "node2 dies mid-bench: the bench never started" "$(cat "$tmp/f1.out")"
	tap_skip "node2 dies mid-bench: rank 0's diagnosis" "no bench"
fi
# srun waits for node2 until Slurm would declare it down (SlurmdTimeout;
# neither scancel nor SIGTERM ends it sooner): the rebuild ends it, as one of
# the cluster tool's registered exec clients. (stderr: bash's "Killed"
# notice for the srun wrapper.)
{
	tap_check "node death: distenv-cluster up rebuilds the degraded cluster" \
		cluster_up_raw --nodes 2 --cpus 4
	wait_bg "$f1" 10
	rc=$?
} 2>/dev/null
((rc == 124)) && tap_diag "the node-death srun outlived the rebuild: stopped"
after_fault "node death"

# --- 2. rank 0 killed during the rendezvous -------------------------------------
# Rank 1 starts 3 s late; rank 0 waits for it on MASTER_PORT and is killed
# there. Rank 1 then finds nothing listening: master-refused at its timeout.
rm -f "$tmp"/f2.pid.*
port=24691
run_bg f2 -N2 -n2 --ntasks-per-node=1 --dist-port=$port bash -c 'echo $$ > '"$tmp"'/f2.pid.$SLURM_PROCID; if [ "$SLURM_PROCID" = 1 ]; then sleep 3; fi; exec "$0" --timeout=5' "$CHECK"
f2=$BGPID
r0=$(wait_check_pid "$tmp/f2.pid.0" 20) || r0=""
listening=0
for _ in $(seq 100); do
	if [ -n "$(nx node1 ss -Htln "sport = :$port" 2>/dev/null)" ]; then
		listening=1
		break
	fi
	sleep 0.05
done
r1=$(cat "$tmp/f2.pid.1" 2>/dev/null || true)
if [ -n "$r0" ] && ((listening)) && ! { [ -n "$r1" ] && is_check "$r1"; }; then
	tap_ok "rank 0 listens on MASTER_PORT $port while rank 1 has not joined yet"
else
	tap_fail "rank 0 waiting in the rendezvous (pid ${r0:-?}, listening=$listening)" "$(cat "$tmp/f2.out")"
fi
t0=$(now_ms)
[ -n "$r0" ] && kill -9 "$r0"
# Rank 1 starts (writes its pid) at most 3 s after the kill, then retries
# for its 5 s: its verdict is due 5 s (+ a few) after its own start.
r1=$(wait_check_pid "$tmp/f2.pid.1" 6) || r1=""
t1=$(now_ms)
wait_bg "$f2" 30
rc=$?
end=$(now_ms)
took=$((end - t0)) took1=$((end - t1))
out=$(cat "$tmp/f2.out")
l=$(line "$out" '^\[rank 1/2\] node=node2 ')
if ((rc != 0)) && [ -n "$r1" ] && [[ $l =~ FAIL\ master-refused:\ MASTER_ADDR=node1\ .*refused\ connections\ to\ port\ $port ]] &&
	((took1 <= 5000 + 3000 && took <= 3000 + 5000 + 3000)); then
	tap_ok "rank 0 killed in the rendezvous: rank 1 fails with master-refused $(secs "$took1") after it started (timeout 5), $(secs "$took") after the kill"
	tap_diag "$l"
else
	tap_fail "rank 0 killed in the rendezvous -> rank 1 master-refused (rc=$rc, $(secs "$took1") after rank 1 started, $(secs "$took") after the kill)" "$out"
fi
after_fault "rank 0 killed in the rendezvous"

# --- 3. rank 0 killed during a collective --------------------------------------
rm -f "$tmp"/f3.pid.*
run_bg f3 -N2 -n2 --ntasks-per-node=1 bash -c 'echo $$ > '"$tmp"'/f3.pid.$SLURM_PROCID; exec "$0" --bench --sizes=64M:64M --iters=400 --warmup=0 --timeout=10' "$CHECK"
f3=$BGPID
r0=$(wait_check_pid "$tmp/f3.pid.0" 20) || r0=""
if wait_file "$tmp/f3.out" 'bench 67108864 bytes' 20 && [ -n "$r0" ]; then
	sleep 0.5
	t0=$(now_ms)
	kill -9 "$r0"
	wait_bg "$f3" 25
	rc=$?
	took=$(($(now_ms) - t0))
	out=$(cat "$tmp/f3.out")
	cluster_example faults-rank0-killed "$out"
	l=$(line "$out" '^\[rank 1/2\] node=node2 ')
	if ((rc != 0)) && [[ $l =~ FAIL\ peer-lost:.*rank\ 0.*node1 ]] && ((took <= 5000)); then
		tap_ok "rank 0 killed mid-bench: rank 1 on node2 fails with peer-lost naming rank 0 on node1 in $(secs "$took") (timeout 10)"
		tap_diag "$l"
	else
		tap_fail "rank 0 killed mid-bench -> rank 1 peer-lost naming rank 0/node1 (rc=$rc, $(secs "$took"))" "$out"
	fi
else
	tap_fail "rank 0 killed mid-bench: the bench never started (pid ${r0:-?})" "$(cat "$tmp/f3.out")"
	wait_bg "$f3" 1 >/dev/null
fi
after_fault "rank 0 killed mid-collective"

# --- 4. node2's link down, then up ---------------------------------------------
# 2 s down during a bench with a generous timeout: TCP retransmits, the run
# completes and verifies.
run_bg f4 -N2 -n2 --ntasks-per-node=1 "$CHECK" --bench --sizes=64M:64M --iters=40 --warmup=0 --timeout=30
f4=$BGPID
if wait_file "$tmp/f4.out" 'bench 67108864 bytes' 20; then
	sleep 0.5
	LINK_DOWN=node2
	nx node2 ip link set eth0 down
	sleep 2
	nx node2 ip link set eth0 up && LINK_DOWN=""
	t0=$(now_ms)
	wait_bg "$f4" 60
	rc=$?
	took=$(($(now_ms) - t0))
	out=$(cat "$tmp/f4.out")
	if ((rc == 0)) && grep -qE '^ +67108864 +16777216 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$out" && [[ $out != *FAIL* ]]; then
		tap_ok "node2's link down for 2 s mid-bench (timeout 30): TCP recovers, the bench verifies ($(secs "$took") after link up)"
	else
		tap_fail "link down 2 s mid-bench -> still succeeds (rc=$rc)" "$out"
	fi
else
	tap_fail "link flap: the bench never started" "$(cat "$tmp/f4.out")"
	wait_bg "$f4" 1 >/dev/null
fi
after_fault "link down 2 s"

# Down for longer than the timeout: rank 0 (node1) gives a timeout/peer
# diagnosis naming rank 1 or node2 within timeout + a few seconds; node2's
# rank ends by its own --timeout too, with its link still down (the man
# page's worst case: 5 + 3 s from its start), and its line reaches srun
# once the link is back. srun's own end then waits on Slurm learning of a
# task that exited while its node was cut off: not ours to bound.
run_bg f4b -N2 -n2 --ntasks-per-node=1 "$CHECK" --bench --sizes=64M:64M --iters=400 --warmup=0 --timeout=5
f4b=$BGPID
if wait_file "$tmp/f4b.out" 'bench 67108864 bytes' 20; then
	sleep 0.5
	LINK_DOWN=node2
	nx node2 ip link set eth0 down
	t0=$(now_ms)
	wait_file "$tmp/f4b.out" '^\[rank 0/2\] node=node1 FAIL ' 10
	took=$(($(now_ms) - t0))
	gone=""
	while (($(now_ms) - t0 < 10500)); do
		[ -z "$(node_checks node2)" ] && gone=$(($(now_ms) - t0)) && break
		sleep 0.1
	done
	left=$((11000 - $(now_ms) + t0))
	((left > 0)) && sleep_ms "$left"
	nx node2 ip link set eth0 up && LINK_DOWN=""
	t1=$(now_ms)
	wait_bg "$f4b" 40
	rc=$?
	after=$(($(now_ms) - t1))
	out=$(cat "$tmp/f4b.out")
	cluster_example faults-link-down "$out"
	l=$(line "$out" '^\[rank 0/2\] node=node1 FAIL ')
	if [[ $l =~ FAIL\ (timeout|peer-lost|peer-timeout):.*(rank\ 1|node2) ]] && ((took <= 5000 + 4000)); then
		tap_ok "node2's link down 11 s (timeout 5): rank 0 on node1 fails with ${BASH_REMATCH[1]} naming rank 1/node2 in $(secs "$took")"
		tap_diag "$l"
	else
		tap_fail "link down past the timeout -> rank 0 timeout/peer diagnosis in timeout + a few s ($(secs "$took"))" "$out"
	fi
	l=$(line "$out" '^\[rank 1/2\] node=node2 ')
	# The link went down after the rank started: its exit by 5 + 3 s from
	# its start is within 8 s of the link going down.
	if ((rc != 0)) && [ -n "$gone" ] && ((gone <= 8000)) &&
		[[ $l =~ FAIL\ (timeout|peer-lost|peer-timeout|aborted): ]]; then
		tap_ok "rank 1 on node2 exits $(secs "$gone") after its link went down (still down), failing cleanly (${BASH_REMATCH[1]}); srun ended $(secs "$after") after link up (rc $rc)"
		tap_diag "$l"
	else
		tap_fail "link down past the timeout -> rank 1 on node2 exits by its --timeout with the link down (gone after ${gone:-never} ms) and fails cleanly (rc=$rc, $(secs "$after") after link up)" "$out"
	fi
else
	tap_fail "long link outage: the bench never started" "$(cat "$tmp/f4b.out")"
	wait_bg "$f4b" 1 >/dev/null
fi
after_fault "link down past the timeout"

# --- 5. a slow joiner ---------------------------------------------------------------
# Rank 1 starts timeout-3 s late: still in time.
t0=$(now_ms)
out=$(run_fg -N2 -n2 --ntasks-per-node=1 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 3; fi; exec "$0" --timeout=6' "$CHECK") && rc=0 || rc=$?
took=$(($(now_ms) - t0))
if ((rc == 0)) && [[ $out == *"[rank 0/2] node=node1 "*" OK"* ]] && [[ $out == *"[rank 1/2] node=node2 "*" OK"* ]] && [[ $out == *"PASS: 2 ranks"* ]]; then
	tap_ok "rank 1 joins 3 s late (timeout 6): every rank OK ($(secs "$took"))"
else
	tap_fail "slow joiner inside the timeout -> success (rc=$rc, $(secs "$took"))" "$out"
fi
after_fault "slow joiner inside the timeout"

# Rank 1 starts timeout+3 s late: rank 0 gives up at its timeout naming the
# missing rank and its node; rank 1 then finds nobody and fails by itself.
run_bg f5 -N2 -n2 --ntasks-per-node=1 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 9; fi; exec "$0" --timeout=6' "$CHECK"
f5=$BGPID
t0=$(now_ms)
wait_file "$tmp/f5.out" '^\[rank 0/2\] node=node1 FAIL ' 15
took=$(($(now_ms) - t0))
wait_bg "$f5" 30
rc=$?
all=$(($(now_ms) - t0))
out=$(cat "$tmp/f5.out")
l=$(line "$out" '^\[rank 0/2\] node=node1 ')
if [[ $l =~ FAIL\ missing-ranks:\ 1\ of\ 2\ ranks\ never\ reached\ node1:.*rank\ 1\ \(expected\ on\ node2\) ]] && ((took <= 6000 + 3000)); then
	tap_ok "rank 1 joins 9 s late (timeout 6): rank 0 fails with missing-ranks 'rank 1 (expected on node2)' in $(secs "$took")"
	tap_diag "$l"
else
	tap_fail "slow joiner past the timeout -> rank 0 missing-ranks naming rank 1/node2 ($(secs "$took"))" "$out"
fi
l=$(line "$out" '^\[rank 1/2\] node=node2 ')
if ((rc != 0 && rc != 124)) && [[ $l =~ FAIL\ master-refused: ]] && ((all <= 9000 + 6000 + 4000)); then
	tap_ok "the late rank 1 fails cleanly with master-refused; srun ends in $(secs "$all") (start 9 s late + timeout 6)"
	tap_diag "$l"
else
	tap_fail "slow joiner past the timeout -> rank 1 fails cleanly, no hang (rc=$rc, $(secs "$all"))" "$out"
fi
after_fault "slow joiner past the timeout"

tap_diag "faults ran in $((SECONDS - started)) s (once the cluster was ours)"
tap_done
