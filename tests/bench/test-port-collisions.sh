#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/port-collisions --check-only: the MASTER_PORT collision benchmark
# builds against the library, prints one row per scenario and k with every
# peer's odds, and the odds behave: distenv never collides within one job,
# collides for consecutive job ids (k=4) at most 2 x as often as uniformly
# random ports, each peer is what it claims (torchrun always collides, the
# recipe never for ids less than 10000 apart and always within a job, the
# uniform peer follows the birthday formula), and the same seed gives the
# same table.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

root=$(cd "$here/../.." && pwd)
export DISTENV_BUILD_DIR=${DISTENV_BUILD_DIR:-$root}
lib=$DISTENV_BUILD_DIR/src/lib/.libs/libdistenv_core.a
[ -f "$lib" ] || tap_skip_all "the library is not built at $lib"
bench=$root/bench/port-collisions

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
rc=0
timeout 300 "$bench" --check-only >"$tmp/out" 2>"$tmp/err" || rc=$?
out=$(cat "$tmp/out")
took=$((SECONDS - start))
if [ "$rc" -eq 0 ]; then
	tap_ok "bench/port-collisions --check-only exits 0 (${took}s)"
else
	tap_fail "bench/port-collisions --check-only exits 0 (got $rc after ${took}s)" "$out" "$(cat "$tmp/err")"
fi
tap_like "$out" $'(^|\n)# 200000 trials per row, seed [0-9]+;' "the header names the trials and the seed"
tap_like "$out" $'(^|\n) +\\| +distenv +uniform +recipe +torchrun +birthday \\| +x uniform +x birthday +x recipe \\| +hits\n' \
	"the table has its column header"

# The rows: scenario k | distenv uniform recipe torchrun birthday | x uniform x birthday x recipe | hits
rows=$(awk 'NF == 14 && $3 == "|" && $9 == "|" && $13 == "|" && $2 ~ /^[0-9]+$/' <<<"$out")
want=""
for s in consecutive window-1000 window-10000 window-100000 one-job mixed-2-steps; do
	for k in 2 4 8 16 32 64; do want+="$s $k "; done
done
tap_is "$(awk '{ printf "%s %s ", $1, $2 }' <<<"$rows")" "$want" "one row per scenario and k (2..64)"
bad=$(awk '{
	for (i = 4; i <= 8; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) { print; next }
	for (i = 10; i <= 12; i++) if ($i !~ /^([0-9]+(\.[0-9]+)?|inf|-)$/) { print; next }
	if ($14 !~ /^[0-9]+$/) print
}' <<<"$rows")
tap_is "$bad" "" "every row has odds for every peer, ratios and distenv's hits"

# row SCENARIO K: that row's fields.
row() { awk -v s="$1" -v k="$2" '$1 == s && $2 == k' <<<"$rows"; }

# distenv: never within a job; consecutive ids at most 2 x uniform (k=4).
tap_is "$(awk '$1 == "one-job" { printf "%s/%s ", $4, $14 }' <<<"$rows")" "0/0 0/0 0/0 0/0 0/0 0/0 " \
	"distenv: k concurrent steps of one job never share a port"
read -r -a f <<<"$(row consecutive 4)"
if [[ ${f[9]-} =~ ^[0-9.]+$ ]] && awk -v x="${f[9]}" 'BEGIN { exit !(x <= 2) }'; then
	tap_ok "distenv: 4 consecutive job ids collide at most 2 x as often as uniform ports (${f[9]} x: ${f[3]} vs ${f[4]} in 10,000)"
else
	tap_fail "distenv: 4 consecutive job ids collide at most 2 x as often as uniform ports" "$(row consecutive 4)"
fi

# The peers are what they claim.
tap_is "$(awk '$7 != 10000' <<<"$rows")" "" "torchrun: 29500 for every step collides in every row"
tap_is "$(awk '($1 == "one-job" || $1 == "mixed-2-steps") && $6 != 10000' <<<"$rows")" "" \
	"recipe: the steps of one job share its port"
tap_is "$(awk '($1 == "consecutive" || $1 == "window-1000" || $1 == "window-10000") && $6 != 0' <<<"$rows")" "" \
	"recipe: job ids less than 10000 apart never share a port"
bad=$(awk '$2 >= 32 && $1 != "one-job" && $1 != "mixed-2-steps" && ($5 < 0.9 * $8 || $5 > 1.1 * $8)' <<<"$rows")
tap_is "$bad" "" "uniform: within 10% of the birthday formula at k=32 and 64"

tap_like "$out" $'(^|\n)  PASS  one job, k steps: distenv never collides' "target: one job never collides, PASS"
tap_like "$out" $'(^|\n)  PASS  consecutive ids, k=4: distenv <= 2 x uniform' "target: consecutive ids k=4, PASS"

# A fixed seed: the same table twice (the header's date and the time aside).
t1=$("$bench" --trials 20000 2>&1 | grep -v '^# bench/port-collisions:\|^# measured in')
t2=$("$bench" --trials 20000 2>&1 | grep -v '^# bench/port-collisions:\|^# measured in')
if [ -n "$t1" ] && [ "$t1" = "$t2" ]; then
	tap_ok "the same seed gives the same table"
else
	tap_fail "the same seed gives the same table" "$t1" "---" "$t2"
fi

rc=0
err=$("$bench" --range 30000:20000 2>&1 >/dev/null) || rc=$?
tap_is "$rc" 2 "an inverted --range is a usage error (exit 2)"
tap_like "$err" 'port range 30000-20000: expected 1024 <= port_min <= port_max <= 65535' "the usage error names the range"
tap_done
