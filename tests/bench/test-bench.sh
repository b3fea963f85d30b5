#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/allreduce --check-only: the benchmark harness runs every installed
# peer (distenv-check, PyTorch gloo, Open MPI, iperf3) once at 8 and 16
# bytes over loopback and prints its table with numbers in every column of
# an installed peer; a peer that is not installed is reported as missing
# (with what to install), and its assertions are skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

root=$(cd "$here/../.." && pwd)
export DISTENV_BUILD_DIR=${DISTENV_BUILD_DIR:-$root}
CHECK=$DISTENV_BUILD_DIR/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"

have_gloo=0 have_mpi=0 have_iperf=0
/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null && have_gloo=1
command -v mpicc >/dev/null && command -v mpirun >/dev/null && have_mpi=1
command -v iperf3 >/dev/null && have_iperf=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
rc=0
timeout 300 "$root/bench/allreduce" --check-only --out "$tmp/raw" >"$tmp/out" 2>"$tmp/err" || rc=$?
out=$(cat "$tmp/out")
took=$((SECONDS - start))
if [ "$rc" -eq 0 ]; then
	tap_ok "bench/allreduce --check-only exits 0 (${took}s)"
else
	tap_fail "bench/allreduce --check-only exits 0 (got $rc after ${took}s)" "$out" "$(cat "$tmp/err")"
fi
tap_like "$out" $'(^|\n)    size  iters \\|   distenv      gloo   openmpi \\|' "the table has its column header"

# row SIZE: the table row of SIZE (8B, 16B) as fields:
# size iters | d g o | d g o | xg xo
num='^[0-9]+\.[0-9]+$'
for size in 8B 16B; do
	row=$(awk -v s="$size" '$1 == s && $3 == "|"' <<<"$out")
	if [ -z "$row" ]; then
		tap_fail "a row for $size" "$out"
		continue
	fi
	read -r -a f <<<"$row"
	tap_ok "a row for $size"
	if [[ ${f[3]} =~ $num && ${f[7]} =~ $num ]]; then
		tap_ok "$size: distenv time ${f[3]} us, busbw ${f[7]} GB/s"
	else
		tap_fail "$size: distenv has a time and a busbw" "$row"
	fi
	if ((have_gloo)); then
		if [[ ${f[4]} =~ $num && ${f[8]} =~ $num && ${f[11]} =~ $num ]]; then
			tap_ok "$size: gloo time ${f[4]} us, busbw ${f[8]} GB/s, distenv ${f[11]}x"
		else
			tap_fail "$size: gloo has a time, a busbw and a ratio" "$row"
		fi
	else
		tap_skip "$size: gloo numbers" "python3-torch (gloo) not installed"
	fi
	if ((have_mpi)); then
		if [[ ${f[5]} =~ $num && ${f[9]} =~ $num && ${f[12]} =~ $num ]]; then
			tap_ok "$size: openmpi time ${f[5]} us, busbw ${f[9]} GB/s, distenv ${f[12]}x"
		else
			tap_fail "$size: openmpi has a time, a busbw and a ratio" "$row"
		fi
	else
		tap_skip "$size: openmpi numbers" "openmpi-bin/libopenmpi-dev not installed"
	fi
done

# The raw tables the harness kept: rank 0's, one row per size, none wrong.
for peer in distenv gloo openmpi; do
	case $peer in
	gloo) ((have_gloo)) || { tap_skip "$peer raw table" "not installed"; continue; } ;;
	openmpi) ((have_mpi)) || { tap_skip "$peer raw table" "not installed"; continue; } ;;
	esac
	# distenv's table is nccl-tests' (a root column); the peers' have none.
	rows=$(awk '$1 ~ /^[0-9]+$/ && (NF == 8 || NF == 9) { print $1, $NF }' "$tmp/raw/$peer.r1" 2>/dev/null | tr '\n' ' ')
	tap_is "$rows" "8 0 16 0 " "$peer raw table: rows for 8 and 16 bytes, 0 wrong"
done

if ((have_iperf)); then
	tap_like "$out" $'(^|\n)# iperf3 single stream on 127\\.0\\.0\\.1: [0-9]+\\.[0-9]+ GB/s' "iperf3 single-stream GB/s reported"
else
	tap_like "$out" 'iperf3 +missing \(install: ' "iperf3 reported missing with what to install"
fi
((have_gloo)) || tap_like "$out" 'gloo +missing \(install: ' "gloo reported missing with what to install"
((have_mpi)) || tap_like "$out" 'openmpi +missing \(install: ' "openmpi reported missing with what to install"

if ((have_mpi)); then
	tap_like "$out" $'(^|\n)  (PASS|MISS)  >= 1\\.0 x openmpi at every size: below at .*; lowest [0-9.]+ x over 2 sizes' "the Open MPI target has a verdict over both sizes"
else
	tap_like "$out" $'(^|\n)  n/a   >= 1\\.0 x openmpi at every size: openmpi missing' "the Open MPI target is n/a without Open MPI"
fi
tap_like "$out" $'(^|\n)  n/a   busbw >= 0\\.9 x iperf3 single stream at 64MiB and up: no size from 64MiB measured' "targets at unmeasured sizes are n/a"

# --ranks/--hosts: 4 ranks on 2 hosts (network namespaces), every peer in
# that layout; the header says so, rows from every installed peer, the
# busbw factor is 2(n-1)/n, and the namespaces are gone afterwards.
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	tap_skip "--ranks 4 --hosts 2" "needs root and ip(8) (network namespaces)"
else
	rc=0
	timeout 300 "$root/bench/allreduce" --check-only --ranks 4 --hosts 2 --out "$tmp/raw4" >"$tmp/out4" 2>"$tmp/err4" || rc=$?
	out4=$(cat "$tmp/out4")
	tap_is "$rc" 0 "--check-only --ranks 4 --hosts 2 exits 0"
	tap_like "$out4" $'(^|\n)# bench/allreduce: 4 ranks on 2 hosts \\(network namespaces' "the header names 4 ranks on 2 hosts"
	tap_like "$out4" 'busbw = algbw x 2\(n-1\)/n \(n = 4\)' "busbw is scaled for 4 ranks"
	tap_like "$(cat "$tmp/raw4/distenv.r1")" '4 ranks on 2 nodes h\[0-1\], 2 per node' "distenv-check saw 4 ranks on 2 hosts, 2 each"
	for peer in distenv gloo openmpi; do
		case $peer in
		gloo) ((have_gloo)) || { tap_skip "$peer on 2 hosts" "not installed"; continue; } ;;
		openmpi) ((have_mpi)) || { tap_skip "$peer on 2 hosts" "not installed"; continue; } ;;
		esac
		rows=$(awk '$1 ~ /^[0-9]+$/ && (NF == 8 || NF == 9) { print $1, $NF }' "$tmp/raw4/$peer.r1" 2>/dev/null | tr '\n' ' ')
		tap_is "$rows" "8 0 16 0 " "$peer on 2 hosts: rows for 8 and 16 bytes, 0 wrong"
	done
	((have_iperf)) && tap_like "$out4" $'(^|\n)# iperf3 single stream host h0 -> h1 \\(10\\.76\\.0\\.11\\): [0-9]+\\.[0-9]+ GB/s' "iperf3 measured the link between host 0 and host 1"
	tap_is "$(ip netns list | grep -c '^dab-' || true) $(ip link show dab0 2>/dev/null | grep -c . || true)" "0 0" "no namespace or bridge of the run is left"
	rc=0
	"$root/bench/allreduce" --ranks 2 --hosts 3 >/dev/null 2>"$tmp/err5" || rc=$?
	tap_is "$rc" 2 "--hosts above --ranks is a usage error (exit 2)"
	tap_like "$(cat "$tmp/err5")" "--hosts wants a number of hosts, 0\\.\\.32 and at most --ranks \\(2\\), got '3'" "... naming the input and what was expected"
fi

# Nothing of the run is left behind: no rank, server or mpirun of ours.
left=$(pgrep -af 'distenv-bench\.[A-Za-z0-9]+/mpi_allreduce|bench/torch_allreduce\.py' || true)
tap_is "$left" "" "no process of the run is left"
tap_done
