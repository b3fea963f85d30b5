#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distenv-check --pairs without a cluster: its options' usage errors (exit
# 2, naming the option and the form expected), and a whole sweep on this
# host over four simulated nodes (distenv-simulate's pseudo-nodes: one
# address, four names), files included. The real network cases are
# tests/cluster/test-pairs.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
tmp=$(mktemp -d)
pids=()
ne_pid=""
cleanup() {
	local p
	for p in "${pids[@]}" $ne_pid; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# usage ARGS...: "rc=N" and the first line of stderr of a rank with a
# complete environment.
usage() {
	local rc=0 err
	err=$(env -i PATH=/usr/bin:/bin RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
		"$CHECK" "$@" 2>&1 >/dev/null) || rc=$?
	printf 'rc=%s\n%s\n' "$rc" "$(head -n 1 <<<"$err")"
}

tap_is "$(usage --pairs --pair-bytes=12Q)" $'rc=2\ndistenv-check: --pair-bytes "12Q": expected a byte count like 8, 4K, 64M or 1G (at most 4G)' \
	"--pair-bytes 12Q: usage error naming the option and the form"
tap_is "$(usage --pairs --pair-bytes=1K)" $'rc=2\ndistenv-check: --pair-bytes "1K": expected at least 64K (a smaller transfer measures latency, not bandwidth)' \
	"--pair-bytes 1K: too small to time, exit 2"
tap_is "$(usage --pairs --pair-threshold=1.5)" $'rc=2\ndistenv-check: --pair-threshold "1.5": expected a fraction of the median pair in (0, 1], e.g. 0.5' \
	"--pair-threshold 1.5: exit 2, expects a fraction"
tap_is "$(usage --pairs --pair-threshold=half)" $'rc=2\ndistenv-check: --pair-threshold "half": expected a fraction of the median pair in (0, 1], e.g. 0.5' \
	"--pair-threshold half: exit 2"
tap_is "$(usage --pair-bytes=8M)" $'rc=2\ndistenv-check: --pair-bytes, --pair-threshold and --pairs-out go with --pairs' \
	"--pair-bytes without --pairs: exit 2"
tap_is "$(usage --pairs --bench)" $'rc=2\ndistenv-check: --pairs and --bench: one at a time' "--pairs --bench: exit 2"
tap_is "$(usage --pairs --pairs-out=)" $'rc=2\ndistenv-check: --pairs-out needs a folder name' "--pairs-out with no folder: exit 2"
tap_is "$(usage --pairs --json-summary=x.json)" $'rc=2\ndistenv-check: --json-summary is the check\'s verdict: with --pairs, --pairs-out=DIR writes pairs.json' \
	"--pairs --json-summary: exit 2, points to --pairs-out"

# sim N PORT ARGS...: N pseudo-nodes on 127.0.0.1, rank r's output in $tmp/sim.r; sets RC0 and RC1
# (rank 0's and rank 1's exit status) and RCMAX.
sim() {
	local n=$1 port=$2 r rc
	shift 2
	pids=()
	for ((r = 0; r < n; r++)); do
		env -i PATH="${SIM_PATH:-/usr/bin:/bin}" ${SIM_GNUPLOT:+DISTENV_GNUPLOT="$SIM_GNUPLOT"} DISTENV_SECRET="$secret" DISTENV_SIMULATED=1 DISTENV_SIMULATED_NODE=$r \
			RANK=$r WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
			"$TIMEOUT" -k 5 60 "$CHECK" --pairs --timeout=20 "$@" >"$tmp/sim.$r" 2>&1 &
		pids+=($!)
	done
	RCMAX=0
	for ((r = 0; r < n; r++)); do
		wait "${pids[$r]}"
		rc=$?
		((r == 0)) && RC0=$rc
		((r == 1)) && RC1=$rc
		((rc > RCMAX)) && RCMAX=$rc
	done
	pids=()
}

TIMEOUT=$(command -v timeout)
port=$((24000 + RANDOM % 800))
# The loopback is shared by all four: the figures say nothing here, the
# threshold is set low so that only the plumbing is judged.
# --pairs-out needs gnuplot for its PNG: a package build root (make check in
# dh_auto_test) has none, so there the sweep runs without the files.
out_args=(--pairs-out="$tmp/out")
command -v gnuplot >/dev/null || out_args=()
t_start=$(date +%s)
sim 4 "$port" --pair-bytes=8M --pair-threshold=0.05 "${out_args[@]}"
t_end=$(date +%s)
out=$(cat "$tmp/sim.0")
if ((RC0 == 0 && RCMAX == 0)) && [[ $out == *"PASS pairs: 6 pairs of 4 nodes, none failed, no outlier"* ]] &&
	[[ $(grep -c 'rank 0: pairs round [1-3]/3: 2 pairs, 0 failed' <<<"$out") == 3 ]]; then
	tap_ok "4 simulated nodes: every rank exits 0, PASS, 6 pairs in 3 rounds of 2"
else
	tap_fail "4 simulated nodes (rank 0 exit $RC0, worst $RCMAX)" "$out" "$(cat "$tmp/sim.1")"
fi
if ((${#out_args[@]} == 0)); then
	tap_skip "--pairs-out: pairs.json, pairs.csv and a PNG" "gnuplot not installed (scripts/setup installs gnuplot-nox)"
elif [[ -s $tmp/out/pairs.json && -s $tmp/out/pairs.csv && -s $tmp/out/pairs.png ]] &&
	[[ $(wc -l <"$tmp/out/pairs.csv") == 7 ]] && [[ $(head -c 4 "$tmp/out/pairs.png" | od -An -c | tr -d ' ') == '211PNG' ]]; then
	tap_ok "--pairs-out: pairs.json, pairs.csv (header + 6 pairs) and a PNG"
else
	tap_fail "--pairs-out files" "$(ls -la "$tmp/out" 2>&1)"
fi
# prom_samples FILE: its distenv_* samples as "name{labels} value", labels
# sorted by name (node_exporter serves them sorted), lines sorted.
prom_samples() {
	awk '/^distenv_/ {
		v = $NF; s = $0; sub(/ [^ ]*$/, "", s); l = ""
		if ((i = index(s, "{")) > 0) {
			k = split(substr(s, i + 1, length(s) - i - 1), a, ",")
			for (x = 1; x <= k; x++)
				for (y = x + 1; y <= k; y++)
					if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
			for (x = 1; x <= k; x++) l = l (x > 1 ? "," : "") a[x]
			s = substr(s, 1, i - 1) "{" l "}"
		}
		print s, v
	}' "$1" | sort
}

# pairs.prom, read as the format says and against pairs.csv (ok pairs
# only: this sweep fails none): each metric declared once, HELP and TYPE
# before its samples; bandwidth per direction (src -> dst = csv's a -> b
# is gbps_ab), latency and the flags once per pair, the flags of the
# nodes, the sweep's figures. One summary line, compared whole.
prom_summary() {
	awk -F'[{}=", ]+' -v t0="$t_start" -v t1="$t_end" '
	FNR == NR { if (FNR > 1 && $3 == "ok") { bw[$1 ">" $2] = $5 * 1e9; bw[$2 ">" $1] = $6 * 1e9; rtt[$1 ">" $2] = $7 / 1e6 } next }
	function near(x, y) { return y > 0 && (x - y) / y < 1e-5 && (y - x) / y < 1e-5 }
	/^# HELP / { help[$3]++; next }
	/^# TYPE / { if (types[$3]++ || !help[$3] || $4 != "gauge") dup++; cur = $3; nt++; next }
	{ if ($1 != cur) stray++ }
	$1 == "distenv_pair_bandwidth_bytes_per_second" { n["bw"]++; if (!near($6, bw[$3 ">" $5])) bad = bad " bw:" $3 ">" $5; next }
	$1 == "distenv_pair_rtt_seconds" { n["rtt"]++; if (!near($6, rtt[$3 ">" $5])) bad = bad " rtt:" $3 ">" $5; next }
	$1 ~ /^distenv_(pair|node)_(failed|slow)$/ { n[$1]++; ones[$1] += $NF; next }
	$1 == "distenv_sweep_timestamp_seconds" { ts = $2 >= t0 && $2 <= t1 ? "in" : $2; next }
	$1 == "distenv_sweep_duration_seconds" { dur = $2 > 0 && $2 < 60 ? "in" : $2; next }
	$1 == "distenv_sweep_median_bandwidth_bytes_per_second" { med = $2 > 0 ? "set" : $2; next }
	$1 == "distenv_sweep_nodes" { nodes = $2; next }
	$1 == "distenv_sweep_ok" { ok = $2; next }
	{ bad = bad " unknown:" $1 }
	END {
		printf "families %d, dup %d, stray %d; bw %d, rtt %d; pair failed %d/%d slow %d/%d; node failed %d/%d slow %d/%d; ",
			nt, dup, stray, n["bw"], n["rtt"], ones["distenv_pair_failed"], n["distenv_pair_failed"],
			ones["distenv_pair_slow"], n["distenv_pair_slow"], ones["distenv_node_failed"], n["distenv_node_failed"],
			ones["distenv_node_slow"], n["distenv_node_slow"]
		printf "nodes %s, ok %s, time %s, duration %s, median %s; wrong:%s\n", nodes, ok, ts, dur, med, bad ? bad : " none"
	}' "$tmp/out/pairs.csv" "$tmp/out/pairs.prom"
}

if ((${#out_args[@]} == 0)); then
	tap_skip "--pairs-out: pairs.prom's metrics" "gnuplot not installed (--pairs-out needs it; scripts/setup installs gnuplot-nox)"
else
	tap_is "$(prom_summary 2>&1)" "families 11, dup 0, stray 0; bw 12, rtt 6; pair failed 0/6 slow 0/6; node failed 0/4 slow 0/4; nodes 4, ok 1, time in, duration in, median set; wrong: none" \
		"pairs.prom: 11 metrics each declared once; bandwidth both ways and latency as pairs.csv says, flags per pair and node, the sweep's time"
fi

# Debian's node_exporter, its textfile collector pointed at the sweep's
# folder, on a port of its own on 127.0.0.1 (started here, killed by PID).
NODE_EXPORTER=${DISTENV_NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
if ((${#out_args[@]} == 0)); then
	tap_skip "node_exporter serves pairs.prom" "no pairs.prom: gnuplot not installed"
	tap_skip "node_exporter's /metrics has pairs.prom's series" "no pairs.prom: gnuplot not installed"
elif [[ ! -x $NODE_EXPORTER ]] || ! command -v python3 >/dev/null; then
	tap_skip "node_exporter serves pairs.prom" "$NODE_EXPORTER or python3 not installed (scripts/setup installs prometheus-node-exporter)"
	tap_skip "node_exporter's /metrics has pairs.prom's series" "no node_exporter"
else
	neport=$(free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$neport" --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$tmp/out" >"$tmp/node-exporter.log" 2>&1 &
	ne_pid=$!
	# Retried until it listens (a few tenths of a second), 10 s at most.
	python3 - "http://127.0.0.1:$neport/metrics" >"$tmp/metrics" 2>"$tmp/metrics.err" <<'PY'
import sys, time, urllib.request
end = time.time() + 10
while True:
    try:
        sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
        break
    except OSError as e:
        if time.time() > end:
            sys.exit("GET %s: %s" % (sys.argv[1], e))
        time.sleep(0.1)
PY
	kill "$ne_pid" 2>/dev/null
	wait "$ne_pid" 2>/dev/null
	ne_pid=""
	if grep -qx 'node_textfile_scrape_error 0' "$tmp/metrics" &&
		grep -q "^node_textfile_mtime_seconds{file=\"$tmp/out/pairs.prom\"} " "$tmp/metrics"; then
		tap_ok "node_exporter's textfile collector reads pairs.prom: node_textfile_scrape_error 0"
	else
		tap_fail "node_exporter reads pairs.prom" "$(grep textfile "$tmp/metrics")" "$(cat "$tmp/metrics.err" "$tmp/node-exporter.log")"
	fi
	prom_samples "$tmp/out/pairs.prom" >"$tmp/want"
	prom_samples "$tmp/metrics" >"$tmp/got"
	# The same series (name and labels) with the same values as numbers:
	# node_exporter reprints them in Go's shortest form.
	diff=$(paste -d' ' "$tmp/want" "$tmp/got" | awk 'NF != 4 || $1 != $3 || $2 + 0 != $4 + 0' | head -n 20)
	if [[ -s $tmp/want && -z $diff ]] && [[ $(wc -l <"$tmp/want") == "$(wc -l <"$tmp/got")" ]] &&
		grep -q '^distenv_pair_bandwidth_bytes_per_second{dst="node1",src="node0"} [0-9]' "$tmp/metrics" &&
		grep -qx 'distenv_node_failed{node="node3"} 0' "$tmp/metrics" && grep -qx 'distenv_sweep_ok 1' "$tmp/metrics"; then
		tap_ok "node_exporter's /metrics has pairs.prom's series: all $(wc -l <"$tmp/want"), labels src/dst/node, values as written"
	else
		tap_fail "node_exporter's /metrics vs pairs.prom" "${diff:-(counts: $(wc -l <"$tmp/want") written, $(wc -l <"$tmp/got") served)}"
	fi
fi

# pairs.prom is written as .pairs.prom.tmp and renamed: node_exporter reads
# only *.prom, so it never sees half a file. Here the rename cannot be done
# (a folder has the name): the error names both, and no temporary is left.
if ((${#out_args[@]} == 0)); then
	tap_skip "pairs.prom not put in place" "gnuplot not installed"
else
	mkdir -p "$tmp/busy/pairs.prom/x"
	sim 2 "$((port + 4))" --pair-threshold=0.05 --pairs-out="$tmp/busy"
	if ((RC0 == 1)) && grep -q -- "--pairs-out: cannot rename $tmp/busy/.pairs.prom.tmp to $tmp/busy/pairs.prom: " "$tmp/sim.0" &&
		[[ ! -e $tmp/busy/.pairs.prom.tmp ]]; then
		tap_ok "pairs.prom cannot be put in place: rank 0 exits 1 naming it and its temporary .pairs.prom.tmp (not *.prom), none left"
	else
		tap_fail "pairs.prom not put in place (rank 0 exit $RC0)" "$(cat "$tmp/sim.0")" "$(ls -la "$tmp/busy")"
	fi
fi

if ((${#out_args[@]} == 0)); then
	tap_skip "--pairs-out: pairs.nodes" "gnuplot not installed"
elif [[ $(cut -f2- "$tmp/out/pairs.nodes" | sort | uniq -c | sed 's/^ *//') == $'4 pass\tnamed in no finding' ]] &&
	[[ $(cut -f1 "$tmp/out/pairs.nodes" | sort | tr '\n' ' ') == "$(grep -o '"nodes": \[[^]]*' "$tmp/out/pairs.json" | grep -o '"[^"]*"' | tail -n +2 | tr -d '"' | sort | tr '\n' ' ')" ]]; then
	tap_ok "--pairs-out: pairs.nodes, one line a node of pairs.json, each NODE<TAB>pass<TAB>why"
else
	tap_fail "--pairs-out: pairs.nodes" "$(cat "$tmp/out/pairs.nodes" 2>&1)" "$(head -3 "$tmp/out/pairs.json")"
fi
# Two ranks per node: the node's first rank measures, the other follows
# the rounds and exits with the job's verdict.
pids=()
for r in 0 1 2 3; do
	env -i PATH=/usr/bin:/bin DISTENV_SECRET="$secret" DISTENV_SIMULATED=1 DISTENV_SIMULATED_NODE=$((r / 2)) \
		RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$((port + 3))" \
		"$TIMEOUT" -k 5 60 "$CHECK" --pairs --timeout=20 --pair-threshold=0.05 >"$tmp/two.$r" 2>&1 &
	pids+=($!)
done
rcs=""
for p in "${pids[@]}"; do
	wait "$p"
	rcs+="$? "
done
pids=()
if [[ $rcs == "0 0 0 0 " ]] && grep -q "^PASS pairs: 1 pair of 2 nodes" "$tmp/two.0" &&
	grep -q "rank 0: pairs round 1/1: 1 pair, 0 failed" "$tmp/two.0" && [[ ! -s $tmp/two.1 ]]; then
	tap_ok "2 nodes x 2 ranks: one pair, measured by each node's first rank; every rank exits 0"
else
	tap_fail "2 nodes x 2 ranks (exit statuses $rcs)" "$(cat "$tmp/two.0" "$tmp/two.1")"
fi
# No gnuplot: rank 0 says so before the rendezvous (a usage error, exit 2),
# every other rank hears it from rank 0 (exit 1), nothing is measured.
SIM_PATH=/nonexistent sim 2 "$((port + 1))" --pairs-out="$tmp/none"
if ((RC0 == 2 && RC1 == 1)) && grep -q -- "FAIL usage: --pairs-out: pairs.png is drawn by gnuplot" "$tmp/sim.0" && grep -q -- "--pairs-out: pairs.png is drawn by gnuplot, and no gnuplot is on this node (not in PATH)" "$tmp/sim.1" &&
	[[ -z $(ls -A "$tmp/none" 2>/dev/null) ]]; then
	tap_ok "no gnuplot in PATH: rank 0 exits 2 before the rendezvous, rank 1 1, both naming gnuplot, nothing written"
else
	tap_fail "no gnuplot (rank 0 exit $RC0, rank 1 exit $RC1)" "$(cat "$tmp/sim.0" "$tmp/sim.1")"
fi
SIM_GNUPLOT=/nonexistent/gnuplot sim 2 "$((port + 2))" --pairs-out="$tmp/none"
if ((RC0 == 2 && RC1 == 1)) && grep -q -- 'DISTENV_GNUPLOT="/nonexistent/gnuplot": not an executable file' "$tmp/sim.1" &&
	! grep -q -- "no gnuplot is on this node" "$tmp/sim.1"; then
	tap_ok "DISTENV_GNUPLOT not executable: names the variable and the path, by every rank"
else
	tap_fail "DISTENV_GNUPLOT not executable (rank 0 exit $RC0, rank 1 exit $RC1)" "$(cat "$tmp/sim.0" "$tmp/sim.1")"
fi
tap_done
