#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check on the real local cluster: checks across layouts and
# dtypes, the --dist-check preflight, and faults (a node's own firewall,
# a killed rank, duplicate RANK, garbage on the rendezvous port): each
# must fail within timeout + a few seconds with the right diagnosis.
# shellcheck disable=SC2016
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"
# shellcheck source=tests/lib/frames.sh
. "$here/../lib/frames.sh"

cluster_need_check
frames_need "$DISTENV_BUILD_DIR"
cluster_require --nodes 2 --cpus 4
tmp=$(mktemp -d)
cleanup() {
	for n in node1 node2 node3; do nx "$n" nft delete table inet distenv_test >/dev/null 2>&1 || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# ok_lines OUT N: N "[rank i/N] ... OK" lines, ranks 0..N-1 each once.
ok_lines() {
	local ranks
	ranks=$(grep -oE '^\[rank [0-9]+/[0-9]+\] .* OK$' <<<"$1" | grep -oE '^\[rank [0-9]+' | grep -oE '[0-9]+' | sort -n | tr '\n' ' ')
	[ "$ranks" = "$(seq -s ' ' 0 $(($2 - 1))) " ]
}

# --- layouts ---------------------------------------------------------------
for per in 1 2; do
	out=$(cx srun -N2 --ntasks-per-node="$per" "$CHECK" --timeout=20 2>&1) && rc=0 || rc=$?
	n=$((2 * per))
	cluster_example "check-2x$per" "$out"
	if [ "$rc" -eq 0 ] && ok_lines "$out" "$n"; then
		tap_ok "2 nodes x $per tasks: every rank prints its checklist line OK"
	else
		tap_fail "2 nodes x $per tasks (rc=$rc)" "$out"
	fi
	tap_like "$out" "PASS: $n ranks on 2 nodes node\[1-2\], $per per node; data interface eth0" \
		"2x$per: rank 0's summary: the nodes as a hostlist, ranks per node, the interface"
done
out=$(cx srun -N2 --ntasks-per-node=2 "$CHECK" --timeout=20 2>&1)
tap_like "$out" "\[rank 3/4\] node=node2 local_rank=1/2 device=cpu backend=socket allreduce=10 \(expected 10\) OK" \
	"2x2: rank 3 on node2, local rank 1 of 2, sum 10"

# --- every dtype, odd sizes --------------------------------------------------
bad=""
for dt in float32 float64 int32 int64; do
	for count in 1 2 3 1000003; do
		out=$(cx srun -N2 --ntasks-per-node=2 "$CHECK" --timeout=20 --quiet --dtype="$dt" --count="$count" 2>&1) \
			|| bad+="$dt/$count: $out"$'\n'
	done
done
tap_is "$bad" "" "every dtype at counts 1, 2, 3, 1000003 on 2x2 verifies"
out=$(cx srun -N2 -n2 "$CHECK" --json --timeout=20 2>&1)
tap_like "$out" '\{"rank":1,"world":2,"node":"node2",.*"allreduce":3,"expected":3,"wrong":0,.*"ok":true\}' "--json: one object per rank"

# --- bench ------------------------------------------------------------------
out=$(cx srun -N2 -n2 "$CHECK" --bench --sizes=8:1M --iters=3 --warmup=1 --timeout=20 2>&1) && rc=0 || rc=$?
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$out" || true)
if [ "$rc" -eq 0 ] && [ "$rows" -eq 18 ]; then
	tap_ok "--bench: 18 sizes 8 B..1 MiB, table with 0 wrong each"
else
	tap_fail "--bench table (rc=$rc, $rows rows)" "$out"
fi

# --- --dist-check preflight ----------------------------------------------------
out=$(cx srun -N2 -n2 --dist-check bash -c 'echo "program ran rank=$RANK"' 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && ok_lines "$out" 2 && [ "$(grep -c '^program ran' <<<"$out")" = 2 ]; then
	tap_ok "srun --dist-check: the check passes in every task, then the program runs"
else
	tap_fail "srun --dist-check success path (rc=$rc)" "$out"
fi

# A bad DISTENV_CHECK_OPTS fails the tasks by name; nothing is cut off
# and run anyway.
out=$(DISTENV_CHECK_OPTS="$(printf -- '-q %.0s' {1..38})" cx srun -N2 -n2 --dist-check bash -c 'echo PROGRAM-STARTED' 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *"--dist-check: DISTENV_CHECK_OPTS has more than 37 words"* ]] &&
	[[ "$out" != *PROGRAM-STARTED* ]]; then
	tap_ok "--dist-check with 38 words in DISTENV_CHECK_OPTS: the tasks fail naming it, the program never starts"
else
	tap_fail "--dist-check with too many DISTENV_CHECK_OPTS words (rc=$rc)" "$out"
fi

# sbatch --dist-check: the option reaches the job's steps.
cat >"$tmp/dc.sh" <<JOB
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 -o $tmp/dc.out
srun bash -c 'echo "step program rank=\$RANK"'
JOB
jobid=$(cx sbatch --parsable --dist-check "$tmp/dc.sh" 2>&1) || true
if [[ "$jobid" =~ ^[0-9]+$ ]] && cluster_wait_job "$jobid" 60 && ok_lines "$(cat "$tmp/dc.out")" 2 \
	&& [ "$(grep -c '^step program' "$tmp/dc.out")" = 2 ]; then
	tap_ok "sbatch --dist-check: the check runs in the job's srun step before its program"
else
	tap_fail "sbatch --dist-check" "$jobid" "$(cat "$tmp/dc.out" 2>&1)"
fi
# plugstack check=auto: every step is checked without asking.
cluster_plugstack check=auto
out=$(cx srun -N2 -n2 bash -c 'echo "ran $RANK"' 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && ok_lines "$out" 2 && [ "$(grep -c '^ran ' <<<"$out")" = 2 ]; then
	tap_ok "plugstack check=auto: steps are checked by default"
else
	tap_fail "plugstack check=auto (rc=$rc)" "$out"
fi
out=$(cx srun -N2 -n2 --dist-check=off bash -c 'echo "ran $RANK"' 2>&1)
tap_is "$(grep -c '^\[rank' <<<"$out")" "0" "--dist-check=off opts a job out of check=auto"
cluster_plugstack

# --- faults -----------------------------------------------------------------
# node2's own firewall drops new inbound TCP to ephemeral ports (the data
# ports) while the master port stays open.
nx node2 nft add table inet distenv_test
nx node2 nft add chain inet distenv_test input '{ type filter hook input priority 0; }'
nx node2 nft add rule inet distenv_test input ct state new tcp dport 32768-60999 drop
start=$SECONDS
out=$(cx srun -N2 -n2 "$CHECK" --timeout=8 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
cluster_example check-peer-timeout "$out"
if [ "$rc" -ne 0 ] && [[ "$out" == *"FAIL peer-timeout"*"node1 -> node2"*"timed out"* ]] && [ "$took" -le 16 ]; then
	tap_ok "node2 drops inbound data connections: peer-timeout naming node2 in ${took}s (timeout 8)"
else
	tap_fail "data-port firewall on node2 -> peer-timeout (rc=$rc, ${took}s)" "$out"
fi
# Two nodes: which end is at fault is not known, and the hint says so.
tap_like "$(grep -m1 'FAIL peer-timeout' <<<"$out")" "FAIL peer-timeout: .* -- which of node\[1-2\] is at fault is not known: --exclude=node\[1-2\] leaves them all out$" \
	"2 nodes, one failing connection: the hint gives both nodes, saying it cannot tell which"
out=$(cx srun -N2 -n2 "$CHECK" --timeout=8 --json-summary="$tmp/fw.json" 2>&1)
if /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["ok"] is False and d["exclude"] == "node[1-2]" and d["exclude_sure"] is False))' "$tmp/fw.json" 2>/dev/null; then
	tap_ok "--json-summary: exclude node[1-2], exclude_sure false"
else
	tap_fail "--json-summary's exclude for the firewalled pair" "$(cat "$tmp/fw.json" 2>&1)" "$out"
fi
out=$(cx srun -N2 -n2 --dist-check bash -c 'echo PROGRAM-STARTED' 2>&1) && rc=0 || rc=$?
cluster_example dist-check-failed "$out"
if [ "$rc" -ne 0 ] && [[ "$out" == *"peer-timeout"* ]] && [[ "$out" != *PROGRAM-STARTED* ]]; then
	tap_ok "--dist-check with the firewall: tasks fail with the diagnosis, the program never starts"
else
	tap_fail "--dist-check failure path (rc=$rc)" "$out"
fi
nx node2 nft delete table inet distenv_test

# node1 (rank 0's host) drops the master port itself.
nx node1 nft add table inet distenv_test
nx node1 nft add chain inet distenv_test input '{ type filter hook input priority 0; }'
nx node1 nft add rule inet distenv_test input ct state new tcp dport 24680 drop
start=$SECONDS
out=$(cx srun -N2 -n2 --dist-port=24680 "$CHECK" --timeout=6 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [ "$(grep -c 'FAIL master-timeout' <<<"$out")" = 2 ] && [ "$took" -le 14 ]; then
	tap_ok "master port dropped on node1: every rank says master-timeout in ${took}s (timeout 6)"
else
	tap_fail "master port firewall -> master-timeout (rc=$rc, ${took}s)" "$out"
fi
nx node1 nft delete table inet distenv_test

# MASTER_ADDR outside the step's nodes (e.g. a value from another job).
out=$(cx srun -N1 -n1 -w node2 env MASTER_ADDR=node1 RANK=1 WORLD_SIZE=2 "$CHECK" --timeout=3 2>&1)
tap_like "$out" "FAIL master-not-in-step: MASTER_ADDR=node1 is not one of this step's nodes \(node2\)" "MASTER_ADDR not in the step: master-not-in-step"
# Nothing listening at MASTER_ADDR: refused, not timed out.
start=$SECONDS
out=$(cx srun -N1 -n1 -w node2 env -u SLURM_STEP_NODELIST MASTER_ADDR=node1 RANK=1 WORLD_SIZE=2 "$CHECK" --timeout=3 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [[ "$out" == *"FAIL master-refused"* ]] && [ "$took" -le 8 ]; then
	tap_ok "nothing listening on MASTER_ADDR: master-refused in ${took}s"
else
	tap_fail "nothing listening -> master-refused (rc=$rc, ${took}s)" "$out"
fi

# MASTER_ADDR=localhost on a 2-node job: each node would form its own world.
out=$(cx srun -N2 -n2 env MASTER_ADDR=localhost "$CHECK" --timeout=5 2>&1) && rc=0 || rc=$?
tap_like "$out" "FAIL master-loopback: MASTER_ADDR=localhost is 127.0.0.1 \(loopback\) but the job spans 2 nodes" "MASTER_ADDR=localhost on 2 nodes: master-loopback"
out=$(cx srun -N2 -n2 env MASTER_ADDR=nodeX "$CHECK" --timeout=5 2>&1) && rc=0 || rc=$?
tap_like "$out" "FAIL master-unresolvable" "MASTER_ADDR that does not resolve: master-unresolvable"

# Ranks started with different sizes: size-mismatch, named.
out=$(cx srun -N2 -n2 bash -c 'exec "$0" --timeout=6 --count=$((100 + SLURM_PROCID))' "$CHECK" 2>&1) && rc=0 || rc=$?
tap_like "$out" 'FAIL size-mismatch: rank 1 on node2 runs "check float32 count=101' "ranks with different --count: size-mismatch naming the rank"

# The Debian/Ubuntu 127.0.1.1 trap: this node's name resolves to loopback.
printf '127.0.0.1 localhost\n127.0.1.1 node2\n10.77.0.11 node1\n' >"$tmp/hosts-loopback"
out=$(cx srun -N2 -n2 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then exec unshare -m sh -c "mount --bind $1 /etc/hosts && exec $0 --timeout=6"; fi; exec "$0" --timeout=6' "$CHECK" "$tmp/hosts-loopback" 2>&1) && rc=0 || rc=$?
tap_like "$out" "\[rank 1/2\] node=node2 FAIL hostname-loopback: this node's name node2 resolves to 127.0.1.1 \(loopback\) on a 2-node job" "hostname resolving to 127.0.1.1 on a 2-node job: hostname-loopback"
tap_like "$(grep -m1 '^\[rank 0/2\]' <<<"$out")" "\[rank 0/2\] node=node1 FAIL hostname-loopback: .* -- resubmit with --exclude=node2$" \
	"... every rank's line ends with the node to leave out: --exclude=node2"

# Duplicate RANK: Slurm variables expanded once (every task says 0).
start=$SECONDS
out=$(cx srun -N2 -n2 env RANK=0 "$CHECK" --timeout=6 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [[ "$out" == *"FAIL duplicate-rank: RANK=0 is claimed twice"*node1*node2* || "$out" == *"FAIL duplicate-rank: RANK=0 is claimed twice"*node2*node1* ]] && [ "$took" -le 12 ]; then
	tap_ok "duplicate RANK: duplicate-rank naming both hosts in ${took}s"
else
	tap_fail "duplicate RANK -> duplicate-rank (rc=$rc, ${took}s)" "$out"
fi

# A rank that never comes: missing-ranks names it and where Slurm put it.
start=$SECONDS
out=$(cx srun -N2 -n2 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then exit 0; fi; exec "$0" --timeout=4' "$CHECK" 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
if [[ "$out" == *"FAIL missing-ranks: 1 of 2 ranks never reached node1:"*"rank 1 (expected on node2)"* ]] && [ "$took" -le 10 ]; then
	tap_ok "a rank that never starts: missing-ranks 'rank 1 (expected on node2)' in ${took}s"
else
	tap_fail "missing rank -> missing-ranks (rc=$rc, ${took}s)" "$out"
fi
tap_like "$(grep -m1 'FAIL missing-ranks' <<<"$out")" " -- resubmit with --exclude=node2$" \
	"... and the node where it was placed is the one to leave out: --exclude=node2"

# A rank killed mid-benchmark: the others exit non-zero naming it.
cx srun -N2 -n2 bash -c 'echo $$ > '"$tmp"'/pid.$SLURM_PROCID; exec "$0" --bench --sizes=64M:64M --iters=400 --warmup=0 --timeout=10' "$CHECK" >"$tmp/bench.out" 2>&1 &
bench=$!
for _ in $(seq 100); do [ -s "$tmp/pid.1" ] && break; sleep 0.1; done
sleep 1.5
victim=$(cat "$tmp/pid.1" 2>/dev/null || true)
start=$SECONDS
[ -n "$victim" ] && kill -9 "$victim"
wait "$bench"
rc=$?
took=$((SECONDS - start))
out=$(cat "$tmp/bench.out")
cluster_example check-peer-lost "$out"
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [[ "$out" == *"[rank 0/2] node=node1 FAIL peer-lost"*"rank 1"*node2* ]] && [ "$took" -le 15 ]; then
	tap_ok "rank 1 killed mid-benchmark: rank 0 exits non-zero with peer-lost naming rank 1 on node2 (${took}s)"
else
	tap_fail "rank killed mid-benchmark (victim=$victim rc=$rc ${took}s)" "$out"
fi

# Garbage, oversized frames, a slow client and a foreign job on the
# rendezvous port while the job assembles: the job still succeeds.
cx srun -N2 -n2 --dist-port=24681 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 3; fi; exec "$0" --timeout=15' "$CHECK" >"$tmp/noise.out" 2>&1 &
job=$!
/usr/bin/python3 - <<'PY' >"$tmp/noise.log" 2>&1
import os, socket, subprocess, time
addr = ("10.77.0.11", 24681)
def conn():
    for _ in range(50):
        try:
            return socket.create_connection(addr, timeout=2)
        except OSError:
            time.sleep(0.1)
    raise SystemExit("rank 0 never listened")
def frame(*args):  # tests/tools/de-frame: the frames proto.c makes
    return subprocess.run([os.environ["DE_FRAME"], *args], check=True, stdout=subprocess.PIPE).stdout
socks = []
c = conn(); c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); socks.append(c)
c = conn(); c.sendall(frame("header", "HELLO", str(0x7fffffff))); socks.append(c)
c = conn(); c.sendall(b"DE"); socks.append(c)          # slow client, never finishes
c = conn(); c.sendall(frame("hello", "token=slurm:999999.0", "rank=0", "host=intruder", "addr=10.77.0.1")); socks.append(c)
c = conn(); c.sendall(bytes(range(256)) * 16); socks.append(c)
print("sent", len(socks))
time.sleep(5)
PY
wait "$job"
rc=$?
out=$(cat "$tmp/noise.out")
if [ "$rc" -eq 0 ] && ok_lines "$out" 2; then
	tap_ok "garbage, oversized, slow and foreign clients on the rendezvous port: the job still verifies"
else
	tap_fail "job under rendezvous noise (rc=$rc)" "$out" "$(cat "$tmp/noise.log")"
fi
tap_like "$out" "rejected .*: not a distenv frame" "garbage logged as rejected"
tap_like "$out" "rejected .*exceeds the limit" "oversized frame logged as rejected"
tap_like "$out" 'rejected .*: it belongs to job "slurm:999999.0"' "foreign job's HELLO rejected and logged"

# NCCL: needs a GPU.
if "$CHECK" --help | grep -q nccl && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	out=$(cx srun -N1 -n1 "$CHECK" --backend=nccl --timeout=30 2>&1) && rc=0 || rc=$?
	tap_like "$out" "backend=nccl .* OK" "NCCL backend on a GPU"
else
	tap_skip "NCCL allreduce on a GPU" "no GPU on this machine (the NCCL backend is compiled; it loads NCCL and runs where nvidia-smi lists a GPU)"
fi

# --- 4 nodes ------------------------------------------------------------------
cluster_up --nodes 4 --cpus 2
out=$(cx srun -N4 --ntasks-per-node=1 "$CHECK" --timeout=20 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && ok_lines "$out" 4; then tap_ok "4 nodes x 1: every rank OK"
else tap_fail "4 nodes x 1 (rc=$rc)" "$out"; fi
nx node3 nft add table inet distenv_test
nx node3 nft add chain inet distenv_test input '{ type filter hook input priority 0; }'
nx node3 nft add rule inet distenv_test input ct state new tcp dport 32768-60999 drop
start=$SECONDS
out=$(cx srun -N4 --ntasks-per-node=1 "$CHECK" --timeout=8 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
cluster_example check-peer-timeout-node "$out"
if [ "$rc" -ne 0 ] && [[ "$out" == *"FAIL peer-timeout: node3 accepts no new TCP connections on its data port from any other node"* ]] && [ "$took" -le 16 ]; then
	tap_ok "4 nodes, node3's firewall drops inbound: the diagnosis names node3 (${took}s)"
else
	tap_fail "4 nodes, node3 firewalled (rc=$rc, ${took}s)" "$out"
fi
tap_like "$(grep -m1 'FAIL peer-timeout' <<<"$out")" "FAIL peer-timeout: node3 accepts no new TCP connections .* -- resubmit with --exclude=node3$" \
	"4 nodes, node3 named: the line ends with --exclude=node3"
nx node3 nft delete table inet distenv_test
cluster_up --nodes 2 --cpus 4
tap_check "cluster healthy after the fault tests" cluster_healthy
tap_done
