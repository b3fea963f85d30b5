#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The library, the tools and the unit tests under AddressSanitizer +
# UndefinedBehaviorSanitizer: a separate out-of-tree build of the source
# tree as `make distdir` ships it, configured with --enable-sanitizers
# --without-cuda (no SPANK plugin there: slurmstepd has no ASan runtime).
# Runs every unit test program, then distenv-check multi-rank on loopback
# (2, 4 and 8 ranks, each dtype, odd and large counts, --json, --bench, garbage
# on the rendezvous port, a missing rank, a rank with the wrong secret, a
# rank of another job) and fails on any sanitizer report, leaks included.
# Then distenv-check of the normal build under valgrind, which sees what
# ASan does not (uninitialised bytes sent on a socket).
# The unit tests under valgrind (hostlist, layout, settings parsing and the
# rest) are tests/unit/valgrind.sh; the parsers under libFuzzer are
# tests/fuzz/run.sh.
#
# Needs the normal build configured in ${DISTENV_BUILD_DIR:-the repository}
# (its Makefile makes the source tree). About a minute on 2 cores.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"
# shellcheck source=tests/lib/frames.sh
. "$here/../lib/frames.sh"

root=$(cd "$here/../.." && pwd)
build=${DISTENV_BUILD_DIR:-$root}
[ -f "$build/Makefile" ] || tap_skip_all "not configured (no Makefile in $build)"
frames_need "$build"
cc=$(sed -n 's/^CC = //p' "$build/Makefile")
cc=${cc:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/distenv-san.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

printf 'int main(void) { return 0; }\n' >"$tmp/t.c"
"$cc" -fsanitize=address,undefined "$tmp/t.c" -o "$tmp/t" >"$tmp/t.log" 2>&1 ||
	tap_skip_all "$cc cannot link -fsanitize=address,undefined: $(head -1 "$tmp/t.log")"

# Every report ends the process (-fno-sanitize-recover=all, halt_on_error)
# with an exit status of its own; leaks are reported at exit.
export ASAN_OPTIONS=detect_leaks=1:exitcode=66:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=67
report_re='ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer|Sanitizer:DEADLYSIGNAL'

# --- the sanitizer build ---------------------------------------------------------
src=$tmp/src san=$tmp/build
if make -C "$build" distdir distdir="$src" >"$tmp/distdir.log" 2>&1; then
	tap_ok "source tree from make distdir"
else
	tap_fail "make distdir" "$(tail -20 "$tmp/distdir.log")"
	tap_done
	exit 1
fi
mkdir "$san"
if (cd "$san" && "$src/configure" CC="$cc" --enable-sanitizers --without-cuda) >"$tmp/configure.log" 2>&1; then
	tap_like "$(grep -E '^ +sanitizers:' "$tmp/configure.log")" \
		'-fsanitize=address,undefined .*-fno-sanitize-recover=all .*-fno-omit-frame-pointer' \
		"configure --enable-sanitizers --without-cuda"
else
	tap_fail "configure --enable-sanitizers --without-cuda" "$(tail -30 "$tmp/configure.log")"
	tap_done
	exit 1
fi
start=$SECONDS
if { make -C "$san" -j2 && make -C "$san" -j2 check TESTS=; } >"$tmp/make.log" 2>&1; then
	tap_ok "sanitizer build: tools and unit tests ($((SECONDS - start))s)"
else
	tap_fail "sanitizer build" "$(tail -40 "$tmp/make.log")"
	tap_done
	exit 1
fi
so=$(find "$san/spank" -name '*.so' 2>/dev/null)
tap_is "$so" "" "no SPANK plugin in the sanitizer build (slurmstepd cannot load an ASan .so)"
CHECK=$san/src/distenv-check
if grep -qa __asan_init "$CHECK" && grep -qa __ubsan_handle "$CHECK"; then
	tap_ok "distenv-check is built with ASan and UBSan"
else
	tap_fail "distenv-check is built with ASan and UBSan" "no __asan_init/__ubsan_handle_* in $CHECK"
fi

# verdict LABEL SEEN GOT WANT FILE...: ok when no FILE holds a sanitizer
# report, the outputs showed what was expected (SEEN is 1) and the exit
# statuses GOT are WANT; else the reports, or the outputs, as diagnostics.
verdict() {
	local label=$1 seen=$2 got=$3 want=$4 reports
	shift 4
	reports=$(grep -h -A30 -E "$report_re" "$@" 2>/dev/null | head -80)
	if [ -n "$reports" ]; then
		tap_fail "$label: sanitizer report (exits: $got)" "$reports"
	elif [ "$seen" != 1 ] || [ "$got" != "$want" ]; then
		tap_fail "$label (exits: $got, want $want)" "$(tail -n 20 "$@" 2>/dev/null)"
	else
		tap_ok "$label"
	fi
}

# seen CMD...: 1 when CMD succeeds, else 0.
seen() { "$@" >/dev/null 2>&1 && echo 1 || echo 0; }

# --- unit tests ------------------------------------------------------------------------
for c in "$src"/tests/unit/test-*.c; do
	t=$san/tests/unit/$(basename "${c%.c}")
	name=$(basename "$t")
	if [ ! -x "$t" ]; then
		tap_fail "$name under ASan+UBSan" "not built: $t"
		continue
	fi
	rc=0
	(cd "$tmp" && timeout 120 "$t") >"$tmp/$name.out" 2>&1 || rc=$?
	verdict "$name under ASan+UBSan" 1 "$rc" 0 "$tmp/$name.out"
done

# --- distenv-check on loopback -------------------------------------------------------
# Ranks prove a shared secret to rank 0 (no MUNGE here): a fresh one per run.
DISTENV_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export DISTENV_SECRET

# pick_port: sets PORT to a free TCP port (tests/lib/ports.sh).
pick_port() { PORT=$(free_port); }

# start_rank TAG BIN WORLD RANK ARGS...: one rank in the background, its
# output in $tmp/TAG.RANK, its pid appended to pids.
start_rank() {
	local tag=$1 bin=$2 world=$3 rank=$4
	shift 4
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$world RANK=$rank \
		LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$world \
		timeout 120 "$bin" "$@" >"$tmp/$tag.$rank" 2>&1 &
	pids+=($!)
}

# wait_ranks: waits for every pid in pids; RCS is their exit statuses
# ("0 0 0" in rank order when started highest rank first, as world does).
wait_ranks() {
	local p rc
	RCS=""
	for p in "${pids[@]}"; do
		rc=0
		wait "$p" || rc=$?
		RCS="$rc $RCS"
	done
	RCS=${RCS% }
	pids=()
}

# world TAG BIN N ARGS...: N ranks of BIN on 127.0.0.1, highest rank first.
world() {
	local tag=$1 bin=$2 n=$3 r
	shift 3
	pick_port
	for ((r = n - 1; r >= 0; r--)); do start_rank "$tag" "$bin" "$n" "$r" "$@"; done
	wait_ranks
}

# pass TAG N ARGS...: N sanitized ranks verify and exit 0, no report: rank
# 0 prints the PASS verdict (--json: "ok":true; --bench: a table with 0
# wrong everywhere).
pass() {
	local tag=$1 n=$2 zeros r files=() label ok
	shift 2
	label="$n ranks $* under ASan+UBSan"
	world "$tag" "$CHECK" "$n" --timeout=60 "$@"
	zeros=$(printf '0 %.0s' $(seq "$n"))
	for ((r = 0; r < n; r++)); do files+=("$tmp/$tag.$r"); done
	if [[ " $* " == *" --bench "* ]]; then
		ok=$(awk 'NF == 9 && $1 ~ /^[0-9]+$/ { rows++; if ($9 != 0) bad++ }
			END { print (rows > 0 && !bad) ? "ok" : "bad" }' "$tmp/$tag.0")
	elif [[ " $* " == *" --json "* ]]; then
		ok=$(grep -q '"wrong":0,.*"ok":true}$' "$tmp/$tag.0" && echo ok)
	else
		ok=$(grep -q '^distenv-check: PASS' "$tmp/$tag.0" && echo ok)
	fi
	verdict "$label" "$(seen test "$ok" = ok)" "$RCS" "${zeros% }" "${files[@]}"
}

pass c2a 2 --count=1 --dtype=float32
pass c2b 2 --count=1000 --dtype=int64
pass c2c 2 --count=262147 --dtype=float64 --json
pass c4a 4 --count=7 --dtype=int32
pass c4b 4 --count=262147 --dtype=float64
pass c4c 4 --count=100003 --dtype=int64 --quiet
pass c8 8 --count=200003 --dtype=float32
pass b2 2 --bench --sizes=8:64K --iters=3 --warmup=1
pass b4 4 --bench --sizes=8:1M --iters=2 --warmup=1 --dtype=int32
tap_like "$(cat "$tmp/b4.0")" $'(^|\n) +1048576 +262144 +int32 +sum +-1 ' "4-rank bench table has its 1 MiB row"

# Garbage on the rendezvous port while rank 0 waits for rank 1: rank 0 turns
# it away and the job still passes; every byte went through the decoders.
pick_port
start_rank noise "$CHECK" 2 0 --timeout=30 --count=1000
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.1
done
garbage() {
	# shellcheck disable=SC2059
	exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf "$1" >&3 && sleep 0.2
	exec 3>&- || true
}
# garbage_frame DE-FRAME-ARGS...: a hand-made frame (tests/tools/de-frame).
garbage_frame() {
	exec 3<>"/dev/tcp/127.0.0.1/$PORT" && "$DE_FRAME" "$@" >&3 && sleep 0.2
	exec 3>&- || true
}
(garbage 'GET / HTTP/1.0\r\n\r\n') 2>/dev/null
(garbage_frame header HELLO 4294967295) 2>/dev/null # a HELLO with a 4 GiB payload
(garbage_frame raw HELLO 00ff000000000000) 2>/dev/null # a string past the end
(garbage_frame header PEERS 0 $(($("$DE_FRAME" version) + 4))) 2>/dev/null # another version
head -c 3000 /dev/urandom >"$tmp/random"
(exec 3<>"/dev/tcp/127.0.0.1/$PORT" && cat "$tmp/random" >&3) 2>/dev/null
start_rank noise "$CHECK" 2 1 --timeout=30 --count=1000
wait_ranks
verdict "garbage on the rendezvous port: the job passes" \
	"$(seen grep -q '^distenv-check: PASS' "$tmp/noise.0")" "$RCS" "0 0" "$tmp/noise.0" "$tmp/noise.1"
tap_is "$(grep -c 'rank 0: rejected 127.0.0.1' "$tmp/noise.0")" 5 "rank 0 logged each of the 5 garbage connections it turned away"

# A rank that never comes: missing-ranks on the others, exit 1, no report
# (the error paths free what they allocated).
pick_port
start_rank miss2 "$CHECK" 2 0 --timeout=3
wait_ranks
verdict "2 ranks, rank 1 missing: missing-ranks, exit 1, no report" \
	"$(seen grep -q "FAIL missing-ranks: 1 of 2 ranks never reached 127.0.0.1:$PORT" "$tmp/miss2.0")" \
	"$RCS" 1 "$tmp/miss2.0"
pick_port
for r in 3 1 0; do start_rank miss4 "$CHECK" 4 "$r" --timeout=3; done
wait_ranks
verdict "4 ranks, rank 2 missing: missing-ranks naming it on the 3 others, exit 1, no report" \
	"$(seen test "$(grep -l 'FAIL missing-ranks: 1 of 4 ranks never reached.*: rank 2 -- ' "$tmp"/miss4.* | wc -l)" = 3)" \
	"$RCS" "1 1 1" "$tmp"/miss4.*

# A rank with another secret: refused with the authentication diagnosis,
# rank 0 names it missing; both exit 1, no report.
pick_port
DISTENV_SECRET=other$DISTENV_SECRET start_rank auth "$CHECK" 2 1 --timeout=3
start_rank auth "$CHECK" 2 0 --timeout=3
wait_ranks
verdict "a rank with another DISTENV_SECRET: authentication, exit 1, no report" \
	"$(seen grep -q 'FAIL authentication: ' "$tmp/auth.1")" "$RCS" "1 1" "$tmp/auth.0" "$tmp/auth.1"

# A rank of another job (another DISTENV_TOKEN): turned away, both exit 1,
# no report.
pick_port
DISTENV_TOKEN=another-job start_rank foreign "$CHECK" 2 1 --timeout=3
start_rank foreign "$CHECK" 2 0 --timeout=3
wait_ranks
verdict "a rank of another job: turned away, exit 1, no report" \
	"$(seen grep -q 'this rendezvous belongs to another job' "$tmp/foreign.1")" \
	"$RCS" "1 1" "$tmp/foreign.0" "$tmp/foreign.1"

# A rank that fails before it can join tells rank 0 (a HELLO with its
# diagnosis); when rank 0 is the one, it serves its verdict to the others.
# early TAG BAD EXITS: 3 ranks, rank BAD with an interface it lacks; the
# two others stop on its diagnosis, no report.
early() {
	local tag=$1 bad=$2 want=$3 r files=()
	pick_port
	for r in 2 1 0; do
		if [ "$r" = "$bad" ]; then
			GLOO_SOCKET_IFNAME=nosuch0 start_rank "$tag" "$CHECK" 3 "$r" --timeout=30
		else
			start_rank "$tag" "$CHECK" 3 "$r" --timeout=30
			files+=("$tmp/$tag.$r")
		fi
	done
	wait_ranks
	verdict "rank $bad fails before joining: the two others stop on its diagnosis, no report" \
		"$(seen test "$(grep -l "FAIL usage: rank $bad on .* failed before it could join: GLOO_SOCKET_IFNAME=\"nosuch0\"" "${files[@]}" | wc -l)" = 2)" \
		"$RCS" "$want" "$tmp/$tag".*
}
early early 1 "1 2 1"
early early0 0 "2 1 1"

# --- valgrind on the normal build ------------------------------------------------
# (the unit tests under valgrind: tests/unit/valgrind.sh)
NCHECK=$build/src/distenv-check
if ! command -v valgrind >/dev/null; then
	tap_skip "distenv-check under valgrind" "valgrind not installed"
elif [ ! -x "$NCHECK" ] || grep -qa __asan_init "$NCHECK"; then
	tap_skip "distenv-check under valgrind" "no build without sanitizers at $NCHECK"
else
	vg=(valgrind -q --error-exitcode=99 --leak-check=full '--errors-for-leak-kinds=definite,indirect')
	# 2 ranks: the allgather; 4 ranks, 280 KB: recursive halving on one node.
	for spec in 2:1000 4:70001; do
		n=${spec%%:*}
		rm -f "$tmp"/vg.*
		pick_port
		for ((r = n - 1; r >= 0; r--)); do
			MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$n RANK=$r \
				timeout 120 "${vg[@]}" "$NCHECK" --timeout=90 --count="${spec#*:}" >"$tmp/vg.$r" 2>&1 &
			pids+=($!)
		done
		wait_ranks
		errs=$(grep -h '^==[0-9]*==' "$tmp"/vg.* | head -60)
		zeros=$(printf '0 %.0s' $(seq "$n"))
		if [ "$RCS" = "${zeros% }" ] && [ -z "$errs" ] && grep -q '^distenv-check: PASS' "$tmp/vg.0"; then
			tap_ok "$n ranks of distenv-check under valgrind (--count=${spec#*:}): PASS, no error, no leak"
		else
			tap_fail "$n ranks of distenv-check under valgrind (--count=${spec#*:}, exits: $RCS)" "${errs:-$(cat "$tmp"/vg.*)}"
		fi
	done
fi
tap_done
