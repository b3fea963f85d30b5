#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzzes the parsers that read what others wrote with libFuzzer, under
# ASan + UBSan: fuzz-hostlist (Slurm hostlist expressions), fuzz-proto (the
# rendezvous frames anyone on the network may send), fuzz-settings
# (plugstack.conf arguments, --dist-* values, SLURM_STEP_TASKS_PER_NODE).
# Each target starts from its seeds in tests/fuzz/corpus/TARGET (fuzz-proto
# also from frames gen-proto-corpus makes with the current encoders) and
# runs for SECONDS; any crash, failed check, leak, timeout or sanitizer
# report fails it, and the input that did it is printed (base64) and kept
# under tests/logs/fuzz-artifacts. TAP, one line per target.
#
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 20 (a minute for the three); 0 only replays
#                       the seeds. The long run: see tests/fuzz/README.md.
# Environment: FUZZ_CC (default clang); FUZZ_OUT=DIR keeps the binaries,
# the grown corpora and the crash inputs in DIR instead of a temporary one;
# DISTENV_BUILD_DIR (default the repository): a configured build, for
# config.h.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

root=$(cd "$here/../.." && pwd)
build=${DISTENV_BUILD_DIR:-$root}
secs=${1:-20}
[[ $secs =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(hostlist proto settings)
for t in "${targets[@]}"; do
	[ -f "$here/fuzz-$t.c" ] || { echo "$0: no target $t (tests/fuzz/fuzz-$t.c)" >&2; exit 2; }
done

cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null ||
	tap_skip_all "$cc not installed (Debian 12: clang libclang-rt-14-dev; Ubuntu 24.04: clang libclang-rt-18-dev)"
[ -f "$build/config.h" ] || tap_skip_all "not configured (no config.h in $build)"

if [ -n "${FUZZ_OUT:-}" ]; then
	out=$FUZZ_OUT
	mkdir -p "$out" || exit 1
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/distenv-fuzz.XXXXXX")
	trap 'rm -rf "$out"' EXIT
fi

san=(-g -O1 -fno-omit-frame-pointer '-fsanitize=address,undefined' -fno-sanitize-recover=all)
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$out/probe.c"
if ! "$cc" "${san[@]}" -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" >"$out/probe.log" 2>&1; then
	major=$("$cc" -dumpversion 2>/dev/null | cut -d. -f1)
	tap_skip_all "$cc has no libFuzzer runtime (install libclang-rt-${major:-N}-dev): $(head -1 "$out/probe.log")"
fi

# The library once, with coverage for the fuzzer, as an archive: each
# target links only what it calls.
flags=("${san[@]}" -Wall -Wextra -I"$build" -I"$root/src/lib")
mkdir -p "$out/obj"
rm -f "$out/obj/"*.o "$out/libdistenv-fuzz.a"
built=1
for f in "$root"/src/lib/*.c; do
	if ! "$cc" "${flags[@]}" -fsanitize=fuzzer-no-link \
		-DDE_CHECK_PATH_DEFAULT='"/usr/local/bin/distenv-check"' \
		-c "$f" -o "$out/obj/$(basename "${f%.c}").o" >>"$out/build.log" 2>&1; then
		built=0
	fi
done
if [ "$built" = 1 ] && ar rcs "$out/libdistenv-fuzz.a" "$out/obj/"*.o >>"$out/build.log" 2>&1; then
	:
else
	tap_fail "build src/lib with $cc -fsanitize=fuzzer-no-link,address,undefined" "$(tail -30 "$out/build.log")"
	tap_done
	exit 1
fi

# Crash inputs are kept where tests/run keeps its logs.
keep=${FUZZ_ARTIFACTS:-$root/tests/logs/fuzz-artifacts}
report_re='ERROR: libFuzzer|ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: |^fuzz-[a-z]+: .*:[0-9]+: '

for t in "${targets[@]}"; do
	name=fuzz-$t
	log=$out/$name.log
	: >"$log"
	if ! "$cc" "${flags[@]}" -fsanitize=fuzzer "$here/$name.c" "$out/libdistenv-fuzz.a" \
		-o "$out/$name" >"$log" 2>&1; then
		tap_fail "$name: build" "$(tail -30 "$log")"
		continue
	fi
	seeds=("$here/corpus/$t")
	if [ "$t" = proto ]; then
		rm -rf "$out/seed-proto" && mkdir -p "$out/seed-proto"
		if "$cc" "${flags[@]}" -I"$root/tests/tools" "$here/gen-proto-corpus.c" "$root/tests/tools/frames.c" \
			"$out/libdistenv-fuzz.a" \
			-o "$out/gen-proto-corpus" >>"$log" 2>&1 &&
			"$out/gen-proto-corpus" "$out/seed-proto" >>"$log" 2>&1; then
			seeds+=("$out/seed-proto")
		else
			tap_fail "$name: gen-proto-corpus" "$(tail -30 "$log")"
			continue
		fi
	fi
	mkdir -p "$out/corpus-$t" "$out/artifacts"
	rm -f "$out/artifacts/$t-"*
	if [ "$secs" = 0 ]; then mode=(-runs=0); else mode=(-max_total_time="$secs"); fi
	dict=()
	[ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
	# -timeout: a list of 2^20 hosts takes seconds under ASan; a hang
	# still fails.
	start=$SECONDS
	rc=0
	timeout $((secs * 2 + 300)) "$out/$name" "${mode[@]}" "${dict[@]}" -timeout=30 \
		-rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$t-" \
		"$out/corpus-$t" "${seeds[@]}" >>"$log" 2>&1 || rc=$?
	took=$((SECONDS - start))
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	new=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
	nseeds=$(find "${seeds[@]}" -type f | wc -l)
	if [ "$rc" -eq 0 ] && ! grep -qE "$report_re" "$log"; then
		tap_ok "$name: ${runs:-?} runs in ${took}s from $nseeds seeds (${new:-0} new inputs): no crash, leak or sanitizer report"
		continue
	fi
	# The report from its first line to its SUMMARY, without libFuzzer's
	# own frames and ASan's shadow map.
	report=$(awk -v re="$report_re" '!on && $0 ~ re { on = 1 } on { print } on && /^SUMMARY: / { exit }' "$log" |
		grep -vE '^ +#[0-9]+ 0x[0-9a-f]+ in (fuzzer::|LLVMFuzzerRunDriver|main|__libc|_start)' | head -50)
	detail=("exit status $rc after ${took}s" "${report:-$(tail -30 "$log")}")
	for a in "$out/artifacts/$t-"*; do
		[ -f "$a" ] || continue
		detail+=("input $(basename "$a") ($(wc -c <"$a") bytes), base64: $(head -c 3000 "$a" | base64 -w0)")
		if mkdir -p "$keep" 2>/dev/null && cp "$a" "$keep/" 2>/dev/null; then
			detail+=("kept as $keep/$(basename "$a"); replay: FUZZ_OUT=DIR tests/fuzz/run.sh 0 $t; DIR/$name $keep/$(basename "$a")")
		fi
	done
	tap_fail "$name: ${runs:-?} runs in ${took}s" "${detail[@]}"
done
tap_done
