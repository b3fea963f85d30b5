#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# --timeout=T bounds a rank's whole run, as the man page says: every rank
# reaches its verdict within T + 2 s and exits within T + 3 s, with the
# diagnosis that names the cause. Measured here without a cluster: a
# silent server on MASTER_PORT, a rank that never joins, one that joins
# late, a rank stopped (SIGSTOP) mid-collective and a node stopped mid
# pair sweep (distenv-simulate's pseudo-nodes: one address, many names).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
TIMEOUT=$(command -v timeout) || tap_skip_all "no timeout(1)"
command -v pgrep >/dev/null || tap_skip_all "no pgrep (procps): it finds the rank to stop under timeout(1)"
tmp=$(mktemp -d)
pids=()
stopped=""
cleanup() {
	local p
	[[ -n $stopped ]] && kill -CONT "$stopped" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
port=$((25000 + RANDOM % 800))
# The stated worst case (man page): the verdict by T + 2 s, the exit by T + 3 s.
EXIT_SLACK=3

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# rank R N PORT OUT ARGS...: one rank in the background, $! its pid.
rank() {
	local r=$1 n=$2 p=$3 out=$4
	shift 4
	env -i PATH=/usr/bin:/bin DISTENV_SECRET="$secret" DISTENV_SIMULATED=1 DISTENV_SIMULATED_NODE="$r" \
		RANK="$r" WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" \
		"$TIMEOUT" -k 5 120 "$CHECK" "$@" >"$out" 2>&1 &
}

# stop PID: SIGSTOP the distenv-check under timeout(1)'s process PID (a
# stopped timeout(1) would stop nothing); prints the stopped pid.
stop() {
	local child
	child=$(pgrep -P "$1") && kill -STOP "$child" && echo "$child"
}

# within T MS: the run took MS milliseconds, at most T + EXIT_SLACK seconds.
within() { (($2 <= ($1 + EXIT_SLACK) * 1000)); }

# A server that accepts and never says anything: the rank ends by its
# budget plus the verdict's slack, naming what it found.
if command -v python3 >/dev/null; then
	python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$tmp/silent.port" &
	silent=$!
	pids+=("$silent")
	for _ in $(seq 100); do [[ -s $tmp/silent.port ]] && break; sleep 0.05; done
	sport=$(cat "$tmp/silent.port")
	for t in 2 10; do
		t0=$(now_ms)
		rank 1 2 "$sport" "$tmp/silent.$t" --timeout="$t"
		wait $!
		rc=$?
		ms=$(($(now_ms) - t0))
		if ((rc == 1)) && within "$t" "$ms" && ((ms >= t * 1000)) &&
			grep -q "FAIL not-distenv: MASTER_ADDR=127.0.0.1 port $sport accepted the connection but sent nothing" "$tmp/silent.$t"; then
			tap_ok "silent server, --timeout=$t: not-distenv after $ms ms (at most $((t + EXIT_SLACK)) s)"
		else
			tap_fail "silent server, --timeout=$t: exit $rc after $ms ms (want 1, not-distenv, $t to $((t + EXIT_SLACK)) s)" "$(cat "$tmp/silent.$t")"
		fi
	done
	kill "$silent" 2>/dev/null
	wait "$silent" 2>/dev/null
	pids=()
else
	tap_skip "silent server, --timeout=2" "python3 not installed (it plays the silent listener)"
	tap_skip "silent server, --timeout=10" "python3 not installed"
fi

# A rank that never comes: rank 0 names it, by its budget + 1 s.
t0=$(now_ms)
rank 0 2 "$port" "$tmp/alone" --timeout=3
wait $!
rc=$?
ms=$(($(now_ms) - t0))
if ((rc == 1)) && within 3 "$ms" &&
	grep -q "FAIL missing-ranks: 1 of 2 ranks never reached 127.0.0.1:$port in [0-9.]* s: rank 1" "$tmp/alone"; then
	tap_ok "rank 1 never starts, --timeout=3: rank 0 says missing-ranks (rank 1) after $ms ms"
else
	tap_fail "rank 1 never starts: exit $rc after $ms ms (want 1, missing-ranks, at most $((3 + EXIT_SLACK)) s)" "$(cat "$tmp/alone")"
fi

# A rank that joins late but within the budget: the job passes.
rank 0 2 "$((port + 1))" "$tmp/late.0" --timeout=8
p0=$!
pids=("$p0")
sleep 2
rank 1 2 "$((port + 1))" "$tmp/late.1" --timeout=8
p1=$!
pids+=("$p1")
wait "$p0"
rc0=$?
wait "$p1"
rc1=$?
pids=()
if ((rc0 == 0 && rc1 == 0)) && grep -q "PASS" "$tmp/late.0"; then
	tap_ok "rank 1 starts 2 s after rank 0 (--timeout=8): both pass"
else
	tap_fail "late joiner: exit statuses $rc0 $rc1 (want 0 0)" "$(cat "$tmp/late.0" "$tmp/late.1")"
fi

# A large world that never comes: the missing-ranks list is cut at a
# rank, with an ellipsis and how many more, never mid-number.
rank 0 5000 "$((port + 2))" "$tmp/big" --timeout=1
wait $!
line=$(grep "FAIL missing-ranks" "$tmp/big")
if [[ $line =~ 4999\ of\ 5000\ ranks\ never\ reached\ [^:]*:[0-9]+\ in\ [0-9.]+\ s:\ ranks\ 1,\ 2,\ ([0-9]+,\ )*([0-9]+),\ \.\.\.\ \(([0-9]+)\ more\)\ -- ]] &&
	((BASH_REMATCH[2] + BASH_REMATCH[3] == 4999)); then
	tap_ok "4999 missing ranks: listed up to rank ${BASH_REMATCH[2]}, then '... (${BASH_REMATCH[3]} more)'"
else
	tap_fail "4999 missing ranks: the list is not cut at a rank with '... (N more)'" "$line"
fi

# A rank stopped mid-collective: a bench of 100000 small allreduces (the
# most -n takes), seconds of work, so still running when the stop comes
# after 1 s (30000 took under a second once ranks sharing 2 cores stopped
# their pure spin). The others end by the budget, saying where the ring
# stood (rank 0 misses data from rank 2, rank 1 cannot pass its own on).
n=3
pids=()
for ((r = 0; r < n; r++)); do
	rank "$r" "$n" "$((port + 3))" "$tmp/stall.$r" --timeout=8 --bench -b 8 -e 8 -n 100000 -w 0
	pids+=($!)
done
t0=$(now_ms)
sleep 1
stopped=$(stop "${pids[2]}")
rcs=""
worst=0
for r in 0 1; do
	wait "${pids[$r]}"
	rcs+="$? "
	ms=$(($(now_ms) - t0))
	((ms > worst)) && worst=$ms
done
[[ -n $stopped ]] && kill -CONT "$stopped"
kill "${pids[2]}" 2>/dev/null
wait "${pids[2]}" 2>/dev/null
pids=()
# t0 is taken just after the ranks started: worst is their run time, to a
# few milliseconds.
if [[ -n $stopped && $rcs == "1 1 " ]] && within 8 "$worst" &&
	grep -q "FAIL timeout: rank [01] on node[01]: --timeout=8 s ran out mid-collective: .*rank 2 on node2" "$tmp/stall.0" &&
	grep -q "FAIL timeout: .*--timeout=8 s ran out mid-collective: .*rank 2 on node2" "$tmp/stall.1"; then
	tap_ok "rank 2 stopped mid-collective: ranks 0 and 1 end after $worst ms with timeout, naming rank 2"
else
	tap_fail "rank 2 stopped mid-collective: exit statuses $rcs after $worst ms (want 1 1, timeout naming rank 2, at most $((8 + EXIT_SLACK)) s)" \
		"$(cat "$tmp/stall.0" "$tmp/stall.1")"
fi

# A sweep longer than the budget (each transfer has its own 2 s bound,
# 4G does not arrive within it, 3 rounds of them): it ends by the budget
# all the same.
n=4
pids=()
for ((r = 0; r < n; r++)); do
	rank "$r" "$n" "$((port + 4))" "$tmp/long.$r" --timeout=4 --pairs --pair-bytes=4G
	pids+=($!)
done
t0=$(now_ms)
rcs=""
worst=0
for r in 0 1 2 3; do
	wait "${pids[$r]}"
	rcs+="$? "
	ms=$(($(now_ms) - t0))
	((ms > worst)) && worst=$ms
done
pids=()
if [[ $rcs == "1 1 1 1 " ]] && within 4 "$worst" &&
	grep -q "FAIL timeout: rank [0-3] on node[0-3]: --timeout=4 s ran out in the pair sweep" "$tmp/long.0"; then
	tap_ok "--pairs sweep longer than --timeout=4: every rank ends after at most $worst ms with timeout"
else
	tap_fail "--pairs sweep longer than --timeout=4: exit statuses $rcs after $worst ms (want 1 x4, timeout, at most $((4 + EXIT_SLACK)) s)" \
		"$(cat "$tmp/long.0" "$tmp/long.1")"
fi

# A node stopped in the pair sweep, once the first round is done: the
# others end by the budget, and rank 0 names the node that stopped: as the
# rank whose report never came, or, where the stop falls inside a round on
# a loaded machine, as the pair of that round the budget ran out in. Pairs
# of 8 MiB: the other pairs' transfers stay well inside the budget on a
# loaded machine too (64 MiB took 4 s beside other tests, and the budget
# ran out in a healthy pair's round instead).
n=6
pids=()
for ((r = 0; r < n; r++)); do
	rank "$r" "$n" "$((port + 5))" "$tmp/pairs.$r" --timeout=6 --pairs --pair-bytes=8M
	pids+=($!)
done
t0=$(now_ms)
for _ in $(seq 500); do grep -q "pairs round 1/" "$tmp/pairs.0" && break; sleep 0.02; done
stopped=$(stop "${pids[2]}")
rcs=""
worst=0
for r in 0 1 3 4 5; do
	wait "${pids[$r]}"
	rcs+="$? "
	ms=$(($(now_ms) - t0))
	((ms > worst)) && worst=$ms
done
[[ -n $stopped ]] && kill -CONT "$stopped"
kill "${pids[2]}" 2>/dev/null
wait "${pids[2]}" 2>/dev/null
pids=()
if [[ -n $stopped && $rcs == "1 1 1 1 1 " ]] && within 6 "$worst" &&
	grep -qE "FAIL timeout: (phase [0-9]*: no report in [0-9.]* s from rank\(s\) 2 \(node2\): --timeout=6 s ran out|.*--timeout=6 s ran out in the pair sweep \(round [^)]*node2[^)]*\))" "$tmp/pairs.0" &&
	grep -qE "FAIL timeout: .*(rank\(s\) 2 \(node2\)|node2\))" "$tmp/pairs.5"; then
	tap_ok "node2 stopped mid pair sweep: the other ranks end after $worst ms with timeout, naming rank 2"
else
	tap_fail "node2 stopped mid pair sweep: exit statuses $rcs after $worst ms (want 1 x5, timeout naming rank 2, at most $((6 + EXIT_SLACK)) s)" \
		"$(cat "$tmp/pairs.0" "$tmp/pairs.5")"
fi
tap_done
