#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check's NCCL backend on the real local cluster (2 nodes x 2
# tasks), against the distenv NCCL stand-in (tests/nccl-standin: a
# libnccl.so.2 and libcudart.so.<major> on host memory over TCP), found
# as the real ones are: through the loader's search path (LD_LIBRARY_PATH).
# This proves distenv's glue (loading, the unique id through the
# rendezvous, nonblocking init, the allreduce, verification, error
# mapping, abort, the bench, the pair sweep), not NCCL nor a GPU:
# tests/gpu/device-check.sh is the proof on hardware.
# shellcheck disable=SC2016 # the tasks expand $RANK
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

cluster_need_check
SI=$DISTENV_BUILD_DIR/tests/nccl-standin
[ -e "$SI/libnccl.so.2" ] || tap_skip_all "the NCCL stand-in is not built at $SI (make check builds it; configure found no CUDA/NCCL headers?)"
cluster_require --nodes 3 --cpus 4
started=$SECONDS

# nccl [VAR=VALUE...] -- ARGS...: distenv-check on 2 nodes x 2 tasks with
# the stand-in on the loader's path and VARs in the tasks' environment;
# prints its output and "rc=N" last.
nccl() {
	local vars=() rc=0 out
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	out=$(cx srun -N2 --ntasks-per-node=2 env LD_LIBRARY_PATH="$SI" "${vars[@]}" "$CHECK" "$@" 2>&1) || rc=$?
	printf '%s\nrc=%s\n' "$out" "$rc"
}

# ok_ranks OUT: the ranks with an OK checklist line on NCCL, sorted.
ok_ranks() {
	grep -oE '^\[rank [0-9]+/4\] node=node[12] local_rank=[01]/2 device=cuda:[01] backend=nccl allreduce=10 \(expected 10\) OK$' <<<"$1" |
		grep -oE '^\[rank [0-9]+' | grep -oE '[0-9]+' | sort -n | tr '\n' ' '
}

# --- PASS, exactly verified on every rank ---------------------------------------
out=$(nccl -- --backend=nccl --timeout=20 -v)
if [[ $out == *$'\nrc=0' ]] && [ "$(ok_ranks "$out")" = "0 1 2 3 " ] &&
	[[ $out == *"PASS: 4 ranks on 2 nodes node[1-2], 2 per node"*"verified on every rank"* ]]; then
	tap_ok "2x2 --backend=nccl on the stand-in: ranks 0-3 each OK (sum 10, cuda:LOCAL_RANK), PASS verified on every rank"
else
	tap_fail "2x2 --backend=nccl on the stand-in" "$out"
fi
n=$(grep -c "backend nccl, device cuda:[01], NCCL [0-9.]* ($SI/libnccl.so.2), CUDA runtime $SI/libcudart.so.[0-9]*$" <<<"$out")
tap_is "$n" 4 "-v: every rank names the stand-in's files it loaded (a user sees it is not NCCL)"
bad=""
for dt in float64 int32 int64; do
	o=$(nccl -- --backend=nccl --timeout=20 --quiet --dtype="$dt" --count=1000003)
	[[ $o == *$'\nrc=0' ]] || bad+="$dt: $o"$'\n'
done
tap_is "$bad" "" "float64, int32, int64 at 1000003 elements verify on every rank (float32 above)"

# --- the bench ------------------------------------------------------------------
out=$(nccl -- --backend=nccl --bench --sizes=8:1M --iters=3 --warmup=1 --timeout=30)
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$out" || true)
if [[ $out == *$'\nrc=0' ]] && [ "$rows" -eq 18 ]; then
	tap_ok "--bench on the stand-in: the table, 18 sizes 8 B..1 MiB, 0 wrong each"
else
	tap_fail "--bench on the stand-in ($rows rows)" "$out"
fi

# --- auto ----------------------------------------------------------------------
out=$(nccl -- --backend=auto --timeout=20 -v)
n=$(grep -c 'backend nccl (auto), device cuda:[01], NCCL' <<<"$out")
if [[ $out == *$'\nrc=0' ]] && [ "$(ok_ranks "$out")" = "0 1 2 3 " ] && [ "$n" = 4 ]; then
	tap_ok "--backend=auto picks NCCL when the stand-in reports devices"
else
	tap_fail "--backend=auto with devices" "$out"
fi
out=$(nccl DE_STANDIN_FAULT=no-devices -- --backend=auto --timeout=20 -v)
n=$(grep -c 'backend socket (auto), device cpu; not nccl: cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)' <<<"$out")
if [[ $out == *$'\nrc=0' ]] && [ "$n" = 4 ]; then
	tap_ok "--backend=auto with 0 devices: sockets, every rank saying why not NCCL"
else
	tap_fail "--backend=auto with 0 devices" "$out"
fi

# --- faults: each its named diagnosis within --timeout ------------------------------
# fault NAME TIMEOUT REGEX DESC [VAR=VALUE...]: every rank's FAIL line
# matches REGEX, exit 1, within TIMEOUT + 5 s.
fault() {
	local name=$1 to=$2 re=$3 desc=$4 t0=$SECONDS fails
	shift 4
	out=$(nccl DE_STANDIN_FAULT="$name" "$@" -- --backend=nccl --timeout="$to")
	fails=$(grep -cE "^\[rank [0-3]/4\] node=node[12] FAIL $re" <<<"$out")
	if [[ $out == *$'\nrc=1' ]] && [ "$fails" = 4 ] && ((SECONDS - t0 <= to + 5)); then
		tap_ok "DE_STANDIN_FAULT=$name: $desc (every rank, $((SECONDS - t0)) s, --timeout=$to)"
	else
		tap_fail "DE_STANDIN_FAULT=$name: $desc ($fails FAIL lines, $((SECONDS - t0)) s)" "$out"
	fi
}
fault init-hang 6 'timeout: .*NCCL init \(ncclCommInitRankConfig, 4 ranks\) did not complete by the end of --timeout=6 s' \
	"a rank whose init never completes: timeout naming NCCL init, the others aborted, no hang" DE_STANDIN_FAULT_RANK=3
fault async-error 15 'nccl: .*ncclAllReduce: unhandled system error .*distenv NCCL stand-in, not NCCL: rank 2: injected' \
	"an async error midway through the allreduce: nccl naming ncclAllReduce, NCCL's string and the last error" DE_STANDIN_FAULT_RANK=2
fault wrong-sum 15 'wrong-result: rank 1 on node1: .*allreduce=11 \(expected 10\) WRONG' \
	"a wrong sum on one rank: wrong-result naming it" DE_STANDIN_FAULT_RANK=1
fault old-version 15 'nccl-missing: --backend=nccl: NCCL 2\.13\.3 is loaded: the NCCL backend needs 2\.14 or later' \
	"NCCL below the minimum: nccl-missing naming the version"
fault no-devices 15 'gpu-selection: --backend=nccl but no GPU is visible: cudaGetDeviceCount: no CUDA-capable device is detected' \
	"zero devices: gpu-selection naming CUDA's error"
out=$(cx srun -N2 --ntasks-per-node=2 env LD_LIBRARY_PATH="$SI/missing-symbol:$SI" "$CHECK" --backend=nccl --timeout=15 2>&1)
n=$(grep -c 'FAIL nccl-missing: --backend=nccl: libnccl.so.2 has no ncclCommGetAsyncError (.*): an older or partial installation' <<<"$out")
tap_is "$n" 4 "a libnccl.so.2 without ncclCommGetAsyncError: nccl-missing naming the symbol on every rank"

# --- the NCCL pair sweep ----------------------------------------------------------
# 3 nodes x 2 tasks: 3 pairs in 3 rounds, each node's first rank measuring
# a 2-rank NCCL allreduce with the other after the TCP figures.
# pairs [VAR=VALUE...] -- ARGS...: the sweep, output and "rc=N" last.
pairs() {
	local vars=() rc=0 o
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	o=$(cx srun -N3 --ntasks-per-node=2 env LD_LIBRARY_PATH="$SI" ${vars[@]+"${vars[@]}"} "$CHECK" --pairs \
		--pair-bytes=1M --timeout=60 "$@" 2>&1) || rc=$?
	printf '%s\nrc=%s\n' "$o" "$rc"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
out=$(pairs -- --pairs-out="$tmp/ok")
if [[ $out == *$'\nrc=0' ]] && [[ $out != *"NCCL pairs: skipped"* ]] &&
	grep -qE '^NCCL pairs: 3 of 3 measured \(a 2-rank allreduce of 1048576 bytes each\), 0 failed, median [0-9.]+ GB/s$' <<<"$out" &&
	grep -q '^PASS pairs: 3 pairs of 3 nodes' <<<"$out"; then
	tap_ok "--pairs: the NCCL pair sweep measures all 3 pairs (not skipped), verified, PASS"
else
	tap_fail "--pairs with NCCL on the stand-in" "$out"
fi
n=$(grep -c '"nccl": {"status": "ok", "diagnosis": "ok", "gbps": [0-9.e+-]*[1-9]' "$tmp/ok/pairs.json" 2>/dev/null)
if [ "$n" = 3 ] && grep -q '"nccl": {"skipped": "", "measured": 3, "failed": 0, "untried": 0, "median_gbps": ' "$tmp/ok/pairs.json"; then
	tap_ok "--pairs-out's pairs.json: each pair's NCCL status and bandwidth, the NCCL sum"
else
	tap_fail "pairs.json's NCCL fields ($n pairs ok)" "$(cat "$tmp/ok/pairs.json" 2>&1)"
fi
out=$(pairs DE_STANDIN_FAULT=wrong-sum DE_STANDIN_FAULT_RANK=1 --)
n=$(grep -cE '^FAIL nccl pair node[1-3]-node[1-3]: wrong-result: on node[2-3]: 1 of 262144 float32 elements wrong \(element 0 is 4, expected 3\)' <<<"$out")
if [[ $out == *$'\nrc=1' ]] && [ "$n" = 3 ] &&
	grep -qE '^FAIL pairs: 0 of 3 pairs failed, 3 NCCL pairs failed' <<<"$out"; then
	tap_ok "--pairs, a wrong sum on the called side: each NCCL pair fails naming wrong-result and the node, exit 1"
else
	tap_fail "--pairs with DE_STANDIN_FAULT=wrong-sum ($n lines)" "$out"
fi
# The wrong sum on node2 alone: its two NCCL pairs fail, node1-node3
# passes, so node2 is the culprit, sure: the hint, pairs.nodes (what the
# sweep template drains) and pairs.prom say so.
out=$(cx srun -N3 --ntasks-per-node=2 env LD_LIBRARY_PATH="$SI" \
	bash -c '[ "$SLURMD_NODENAME" != node2 ] || export DE_STANDIN_FAULT=wrong-sum; exec "$0" "$@"' \
	"$CHECK" --pairs --pair-bytes=1M --timeout=60 --pairs-out="$tmp/n2" 2>&1) && rc=0 || rc=$?
if [ "$rc" = 1 ] && grep -qE '^FAIL pairs: 0 of 3 pairs failed, 2 NCCL pairs failed, .* -- resubmit with --exclude=node2$' <<<"$out" &&
	[ "$(grep -c '^FAIL nccl pair' <<<"$out")" = 2 ] && [[ $out != *"FAIL nccl pair node1-node3"* ]]; then
	tap_ok "--pairs, a wrong sum on node2 only: its 2 NCCL pairs fail, node1-node3 passes, the hint says --exclude=node2"
else
	tap_fail "--pairs with a wrong sum on node2 (rc=$rc)" "$out"
fi
got=$(cut -f1,2 "$tmp/n2/pairs.nodes" 2>&1 | tr '\t\n' ': ')
if [ "$got" = "node1:pass node2:fault node3:pass " ] && grep -q $'^node2\tfault\tfailing-nccl-node: every NCCL pair of it fails: wrong-result$' "$tmp/n2/pairs.nodes"; then
	tap_ok "pairs.nodes: node2 fault (failing-nccl-node, wrong-result), node1 and node3 pass: the sweep template drains node2 alone"
else
	tap_fail "pairs.nodes with node2's NCCL failing" "$(cat "$tmp/n2/pairs.nodes" 2>&1)"
fi
prom=$(grep -E '^distenv_(pair_nccl_failed|sweep_ok)' "$tmp/n2/pairs.prom" 2>&1 | sort | tr '\n' ' ')
tap_is "$prom" 'distenv_pair_nccl_failed{src="node1",dst="node2"} 1 distenv_pair_nccl_failed{src="node1",dst="node3"} 0 distenv_pair_nccl_failed{src="node2",dst="node3"} 1 distenv_sweep_ok 0 ' \
	"pairs.prom: distenv_pair_nccl_failed per pair, distenv_sweep_ok 0 although every TCP pair passed"
n=$(grep -cE '^distenv_pair_nccl_bandwidth_bytes_per_second\{src="node[1-3]",dst="node[1-3]"\} [0-9.e+]*[1-9]' "$tmp/ok/pairs.prom" 2>/dev/null)
if [ "$n" = 3 ] && grep -q '^distenv_sweep_ok 1$' "$tmp/ok/pairs.prom"; then
	tap_ok "pairs.prom of the passing sweep: the 3 NCCL pairs' bandwidth, distenv_sweep_ok 1"
else
	tap_fail "pairs.prom's NCCL bandwidth ($n samples)" "$(cat "$tmp/ok/pairs.prom" 2>&1)"
fi
out=$(pairs DE_STANDIN_FAULT=async-error DE_STANDIN_FAULT_RANK=1 --)
n=$(grep -cE '^FAIL nccl pair node[1-3]-node[1-3]: nccl: on node[2-3]: ncclAllReduce: unhandled system error .*injected' <<<"$out")
if [[ $out == *$'\nrc=1' ]] && [ "$n" = 3 ]; then
	tap_ok "--pairs, an async error on the called side: each NCCL pair names it (the called node's own error), exit 1"
else
	tap_fail "--pairs with DE_STANDIN_FAULT=async-error ($n lines)" "$out"
fi
out=$(pairs DE_STANDIN_FAULT=no-devices --)
if [[ $out == *$'\nrc=0' ]] &&
	grep -q '^NCCL pairs: skipped: the NCCL backend is not usable on this node: cudaGetDeviceCount: no CUDA-capable device is detected' <<<"$out"; then
	tap_ok "--pairs with 0 devices: NCCL pairs skipped saying why, the TCP sweep passes"
else
	tap_fail "--pairs with 0 devices" "$out"
fi

# A pair that fails over TCP (node2 drops what node3 sends) is not tried
# over NCCL: the two others are measured, it is counted as not tried.
addr3=$(nx node2 getent hosts node3 | awk '{print $1; exit}')
if [ -n "$addr3" ] && nx node2 nft add table inet distenv_standin &&
	nx node2 nft add chain inet distenv_standin input '{ type filter hook input priority 0; }' &&
	nx node2 nft add rule inet distenv_standin input ip saddr "$addr3" drop; then
	out=$(pairs -- --pairs-out="$tmp/fw")
	nx node2 nft delete table inet distenv_standin
	if [[ $out == *$'\nrc=1' ]] && grep -q '^FAIL pairs: 1 of 3 pairs failed' <<<"$out" &&
		grep -qE '^NCCL pairs: 2 of 3 measured \(a 2-rank allreduce of 1048576 bytes each\), 0 failed, median [0-9.]+ GB/s; 1 not tried, their TCP pair failed$' <<<"$out" &&
		grep -q '"measured": 2, "failed": 0, "untried": 1,' "$tmp/fw/pairs.json"; then
		tap_ok "--pairs with node2-node3 firewalled: that pair is not tried over NCCL (counted so, in pairs.json too), the other 2 are measured"
	else
		tap_fail "--pairs with node2-node3 firewalled" "$out" "$(cat "$tmp/fw/pairs.json" 2>&1)"
	fi
else
	nx node2 nft delete table inet distenv_standin >/dev/null 2>&1
	tap_fail "firewalling node3 from node2 (node3 is '$addr3')"
fi

# --- through the plugin ---------------------------------------------------------
out=$(cx env LD_LIBRARY_PATH="$SI" DISTENV_CHECK_OPTS="--backend=nccl --timeout=20" \
	srun -N2 --ntasks-per-node=2 --dist-check bash -c 'echo "program ran rank=$RANK"' 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [ "$(ok_ranks "$out")" = "0 1 2 3 " ] && [ "$(grep -c '^program ran' <<<"$out")" = 4 ]; then
	tap_ok "srun --dist-check with DISTENV_CHECK_OPTS=--backend=nccl: the NCCL check passes in every task, then the program runs"
else
	tap_fail "srun --dist-check, NCCL backend (rc=$rc)" "$out"
fi

tap_diag "nccl-standin ran in $((SECONDS - started)) s (once the cluster was ours)"
tap_done
