#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# examples.sh: the output the docs quote is what the binaries print today.
#
# Every block of program output quoted in README.md, docs/*.md,
# bench/README.md and docs/man/* is marked with the name of an example:
#
#   Markdown: <!-- example: NAME -->      on the line before the ``` fence
#   roff:     .\" example: NAME           before the .nf ... .fi block
#
# and this file says where today's output of NAME comes from (source_of,
# the one place that maps names to commands): a command run here (option
# errors, --help, distenv-hostnames, distenv-check on 127.0.0.1), or a
# capture that a cluster test saved with cluster_example NAME "$out"
# (tests/lib/cluster.sh) in $DISTENV_EXAMPLES_DIR/NAME.txt (default
# tests/logs/examples/). Every line of an example must match a line of that
# output (in any order: ranks print in any order). In an example line:
#
#   <n> <ms> <s> <us> <port> <pid> <kib> <bytes>   a number (digits, maybe .digits)
#   <host> <addr> <any> (any other <word>)          one word (no blanks)
#   "..."                                           any text (also none; " ... "
#                                                   between words: also one blank)
#
# and a line that starts with "FAIL " stands for a failure line after its
# "[rank R/N] node=HOST " (or "distenv-check: node=HOST ") prefix.
#
# In roff blocks, a line that starts with blanks continues the one before
# (long lines are wrapped for the terminal), and \- \e \(aq are unescaped.
# A fenced or .nf block that looks like program output (it starts with
# "[rank ", "distenv-check:", "distenv:", "FAIL ", ...) but has no marker
# fails as an unmarked example; <!-- not-output: WHY --> (roff:
# .\" not-output: WHY) exempts a block that only looks so (a format).
#
# An example whose capture is absent (no root, no cluster run) is skipped
# with the reason, unless DISTENV_EXAMPLES_STRICT=1 (tests/run sets it when
# it has run every cluster file first): then it fails.
#
#   tests/docs/examples.sh               the TAP check
#   tests/docs/examples.sh --list        FILE:LINE NAME of every example
#   tests/docs/examples.sh --print NAME  today's output for NAME (to update a doc)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$src/tests/lib/tap.sh"

build=${DISTENV_BUILD_DIR:-$PWD}
CHECK=$build/src/distenv-check
EXEC=$build/src/distenv-exec
HOSTNAMES=$build/src/distenv-hostnames
EXAMPLES_DIR=${DISTENV_EXAMPLES_DIR:-$src/tests/logs/examples}
STRICT=${DISTENV_EXAMPLES_STRICT:-0}
# The docs, relative to the source tree (make check runs in the build tree).
mapfile -t DOCS < <(cd "$src" && for f in README.md docs/*.md bench/README.md docs/man/*.1 docs/man/*.8; do
	[ -f "$f" ] && echo "$f"; done)

# check_env ARGS...: distenv-check alone with no environment (stderr too).
check_env() { env -i PATH=/usr/bin:/bin "$CHECK" "$@" 2>&1; }

# check_rank0 ARGS...: a world of one on 127.0.0.1, by a shared secret.
check_rank0() {
	env -i PATH=/usr/bin:/bin DISTENV_SECRET=0123456789abcdef0123456789abcdef \
		RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$((20000 + $$ % 9000))" \
		timeout 60 "$CHECK" --timeout=20 "$@" 2>&1
}

# check_batch: distenv-check run directly in a batch script (Slurm 26.05's
# batch step id).
check_batch() {
	env -i PATH=/usr/bin:/bin SLURM_JOB_ID=7 SLURM_PROCID=0 SLURM_STEP_ID=-5 \
		SLURM_JOB_NODELIST=node1 SLURMD_NODENAME=node1 "$CHECK" 2>&1
}

# check_wrong_secret: two ranks on 127.0.0.1, rank 1 with another secret.
check_wrong_secret() {
	local port=$((20000 + ($$ + 1) % 9000)) pid
	env -i PATH=/usr/bin:/bin DISTENV_SECRET=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa RANK=0 WORLD_SIZE=2 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" timeout 30 "$CHECK" --timeout=3 >"$tmp/auth.0" 2>&1 &
	pid=$!
	sleep 0.3
	env -i PATH=/usr/bin:/bin DISTENV_SECRET=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb RANK=1 WORLD_SIZE=2 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" timeout 30 "$CHECK" --timeout=3 >"$tmp/auth.1" 2>&1
	wait "$pid"
	cat "$tmp/auth.0" "$tmp/auth.1"
}

# unit_msgs FILE PREFIX REGEX: the messages (matching REGEX) that a C unit
# test asserts (is_str's expected strings, their first literal), each after
# PREFIX: what the binary prints before them.
unit_msgs() {
	sed -n 's/.*is_str([^"]*"\(\([^"\\]\|\\.\)*\)".*/\1/p' "$src/$1" | grep -E -- "$3" | sed "s/^/$2/"
}

# capture NAME...: the saved cluster outputs, or status 3 when one is absent.
capture() {
	local n
	for n in "$@"; do
		[ -r "$EXAMPLES_DIR/$n.txt" ] || return 3
	done
	for n in "$@"; do cat "$EXAMPLES_DIR/$n.txt"; done
}

# hostnames_session: the man page's "$ command" lines and their output.
hostnames_session() {
	local cmd
	for cmd in "'node[1-3],gpu07'" "--count 'rack[1-2]-node[01-16]'" "--index 1 'a[08-11]'"; do
		printf '$ distenv-hostnames %s\n' "$cmd"
		eval "\"\$HOSTNAMES\" $cmd"
	done
}

# not_here WHY: status 4, with the reason for the skip.
not_here() {
	printf '%s\n' "$1" >"$tmp/reason"
	return 4
}

# source_of NAME: today's output of the example NAME. Status 3: its capture
# is absent; 4: it cannot be made on this machine (not_here says why); 5:
# no such NAME. To add an example: a case here, the marker in the doc.
source_of() {
	case $1 in
	# run here
	check-unknown-option) check_env --foo ;;
	check-option-errors) for o in --verbose=1 --timeout -d -x --p; do check_env "$o"; done ;;
	check-env) check_env; check_batch ;;
	check-help) check_env --help ;;
	check-wrong-secret) check_wrong_secret ;;
	exec-no-program) "$EXEC" 2>&1 ;;
	hostnames-session) hostnames_session ;;
	configure-summary)
		[ -r "$build/config.log" ] || { not_here "no config.log in $build (configure was not run there)"; return; }
		# The example is an x86_64 build for a system prefix; make
		# distcheck's own prefix leaves the plugin dir under it
		# (\${libdir}/slurm), an arm64 build has its own plugin dir.
		local prefix cpu
		prefix=$(sed -n "s/^prefix='\(.*\)'$/\1/p" "$build/config.log")
		cpu=$(sed -n "s/^host_cpu='\(.*\)'$/\1/p" "$build/config.log")
		case $prefix in
		/usr | /usr/local) ;;
		*) not_here "configured with --prefix=$prefix (the example shows a build for /usr or /usr/local)"; return ;;
		esac
		[ "$cpu" = x86_64 ] || { not_here "a $cpu build (the example shows an x86_64 one)"; return; }
		sed -n '/^  distenv .* configured$/,/^$/p' "$build/config.log"
		;;
	gpu-selection)
		local out
		out=$(check_rank0 --backend=nccl)
		if [[ $out != *"FAIL gpu-selection: --backend=nccl but no GPU is visible"* ]]; then
			not_here "this machine has a GPU or no CUDA runtime (the example is a node without a GPU)"
			return
		fi
		printf '%s\n' "$out"
		;;
	# the messages a unit test asserts
	local-rank-more)
		capture local-rank-srun || return
		unit_msgs tests/unit/test-world.c 'FAIL local-rank: ' 'LOCAL_WORLD_SIZE='
		;;
	node-rank)
		capture node-rank || return
		unit_msgs tests/unit/test-world.c 'FAIL node-rank: ' 'NODE_RANK=.*one value'
		;;
	nccl-version) unit_msgs tests/unit/test-cudalib.c 'FAIL nccl-missing: --backend=nccl: ' 'is loaded: the NCCL backend needs' ;;
	# saved by the cluster tests (cluster_example in tests/cluster/*.sh)
	quickstart) capture check-2x2 torch-2x2 ;;
	check-2x1 | check-2x2 | check-peer-lost | dist-check-failed | local-rank | not-distenv | bulk-stall | \
		plugin-verbose | plugin-verbose-kept | ports-cyclic) capture "$1" ;;
	check-peer-timeout) capture check-peer-timeout check-peer-timeout-node ;;
	peer-lost) capture check-peer-lost faults-rank0-killed ;;
	not-distenv-silent) capture not-distenv-silent ;;
	timeout) capture faults-link-down ;;
	pairs-firewall | pairs-tbf) capture "$1" ;;
	node-check-ok | node-check-drained | node-check-resumed) capture "$1" ;;
	sweep-drain | sweep-resume) capture "$1" ;;
	# the Ansible end-to-end test's smoke.yml log, its lines unquoted
	ansible-smoke)
		capture ansible-smoke >"$tmp/ansible" || return 3
		sed -e 's/^[[:space:]]*//; s/^"msg": //; s/^"//; s/",\{0,1\}$//' "$tmp/ansible"
		;;
	# needs a GPU or a node without NCCL (tests/gpu/device-check.sh and
	# tests/cli/test-check-nccl.sh check these texts there)
	gpu-*) not_here "needs a GPU (tests/gpu/device-check.sh checks these texts)" ;;
	nccl-missing) not_here "needs a node where libnccl.so.2 does not load (tests/cli/test-check-nccl.sh checks the text)" ;;
	*) return 5 ;;
	esac
}

# roff_text: a man page's .nf block as the terminal shows it.
roff_text() {
	sed -e 's/\\-/-/g; s/\\(aq/'"'"'/g; s/\\(dq/"/g; s/\\&//g; s/\\e/\\/g' |
		awk 'NR > 1 && /^[ \t]/ { sub(/^[ \t]+/, " "); line = line $0; next }
		     NR > 1 { print line } { line = $0 } END { if (NR) print line }'
}

# looks_like_output FIRST_LINE: program output rather than a command?
looks_like_output() {
	[[ $1 =~ ^(\[rank\ |distenv-check:\ |distenv:\ |distenv-exec:\ |distenv-hostnames:\ |FAIL\ |PASS\ |SLOW\ |TASK\ \[) ]]
}

# scan: one record per block, "FILE<TAB>LINE<TAB>NAME<TAB>TMPFILE" (NAME "-"
# unmarked, "!" exempt), the block's text in TMPFILE.
scan() {
	local f n=0 line name lineno inblock kind
	for f in "${DOCS[@]}"; do
		lineno=0 name="" inblock=0
		case $f in *.md) kind=md ;; *) kind=roff ;; esac
		while IFS= read -r line || [[ -n $line ]]; do
			lineno=$((lineno + 1))
			if ((inblock)); then
				if [[ $kind == md && $line =~ ^[[:space:]]*\`\`\` ]] ||
					[[ $kind == roff && $line == .fi* ]]; then
					inblock=0
					continue
				fi
				printf '%s\n' "$line" >>"$tmp/block.$n"
				continue
			fi
			if [[ $kind == md && $line =~ ^\<!--\ example:\ ([A-Za-z0-9_-]+)\ --\>$ ]] ||
				[[ $kind == roff && $line =~ ^\.\\\"\ example:\ ([A-Za-z0-9_-]+)$ ]]; then
				name=${BASH_REMATCH[1]}
				continue
			fi
			if [[ $kind == md && $line =~ ^\<!--\ not-output: ]] ||
				[[ $kind == roff && $line =~ ^\.\\\"\ not-output: ]]; then
				name="!"
				continue
			fi
			if [[ $kind == md && $line =~ ^[[:space:]]*\`\`\` ]] || [[ $kind == roff && $line == .nf* ]]; then
				n=$((n + 1))
				: >"$tmp/block.$n"
				printf '%s\t%s\t%s\t%s\n' "$f" "$lineno" "${name:--}" "$tmp/block.$n"
				name="" inblock=1
				continue
			fi
			# A marker holds over roff's .PP/.RS and blank lines only.
			if [[ -n $name && -n $line && $line != .PP && $line != .RS* ]]; then
				printf '%s\t%s\t%s\t%s\n' "$f" "$lineno" "?$name" ""
				name=""
			fi
		done <"$src/$f"
	done
}

# line_regex LINE: the ERE an example line stands for.
line_regex() {
	local re prefix=""
	# " ... " between words stands for nothing too: "a ... b" matches "a b".
	re=$(printf '%s' "$1" | sed -e 's/[][\.*^$?+(){}|/]/\\&/g' -e 's/ \\\.\\\.\\\. / (.* )?/g' -e 's/\\\.\\\.\\\./.*/g')
	re=$(printf '%s' "$re" | sed -E -e 's/<(n|ms|s|us|port|pid|kib|bytes)>/[0-9]+([.][0-9]+)?/g' \
		-e 's/<[a-z][a-z0-9-]*>/[^[:space:]]+/g')
	[[ $1 == 'FAIL '* ]] && prefix='(\[rank [0-9]+/[0-9]+\] node=[^ ]+ |distenv-check: node=[^ ]+ )?'
	printf '^%s%s$' "$prefix" "$re"
}

# compare FILE LINE NAME BLOCK: every line of BLOCK matches a line of NAME's output.
compare() {
	local f=$1 at=$2 name=$3 block=$4 out rc=0 line missing=()
	out=$(source_of "$name") || rc=$?
	case $rc in
	3)
		if [ "$STRICT" = 1 ]; then
			tap_fail "$f:$at example $name: no capture in $EXAMPLES_DIR (the cluster test that saves it did not run)"
		else
			tap_skip "$f:$at example $name" "no capture yet (a cluster test saves it: tests/run as root)"
		fi
		return
		;;
	4)
		tap_skip "$f:$at example $name" "$(cat "$tmp/reason")"
		return
		;;
	5)
		tap_fail "$f:$at example $name: no such example in tests/docs/examples.sh's source_of"
		return
		;;
	esac
	[[ $f == docs/man/* ]] && { roff_text <"$block" >"$block.txt" && mv "$block.txt" "$block"; }
	while IFS= read -r line || [[ -n $line ]]; do
		[ -z "$line" ] && continue
		grep -qE -- "$(line_regex "$line")" <<<"$out" || missing+=("$line")
	done <"$block"
	if [ ${#missing[@]} -eq 0 ]; then
		tap_ok "$f:$at example $name matches today's output"
	else
		tap_fail "$f:$at example $name: ${#missing[@]} line(s) not in today's output" \
			"${missing[@]/#/doc:   }" "today's output (tests/docs/examples.sh --print $name):" "$out"
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case ${1:-} in
--print)
	[ $# -eq 2 ] || { echo "usage: $0 --print NAME" >&2; exit 2; }
	source_of "$2"
	rc=$?
	case $rc in
	3) echo "$0: $2: no capture in $EXAMPLES_DIR (run the cluster test that saves it)" >&2 ;;
	4) echo "$0: $2: $(cat "$tmp/reason")" >&2 ;;
	5) echo "$0: $2: no such example" >&2 ;;
	esac
	exit "$rc"
	;;
--list)
	scan | awk -F'\t' '$3 != "-" && $3 != "!" { print $1 ":" $2 " " $3 }'
	exit 0
	;;
"") ;;
*)
	echo "usage: $0 [--list | --print NAME]" >&2
	exit 2
	;;
esac

if [ ! -x "$CHECK" ] || [ ! -x "$EXEC" ] || [ ! -x "$HOSTNAMES" ]; then
	tap_skip_all "the tools are not built in $build/src (make)"
fi

[ ${#DOCS[@]} -gt 0 ] || tap_skip_all "no docs under $src"
scan >"$tmp/index"
unmarked=0
while IFS=$'\t' read -r f at name block; do
	case $name in
	'!') ;;
	'?'*) tap_fail "$f:$at: marker example: ${name#?} is not followed by a block" ;;
	-)
		first=$(head -n 1 "$block")
		[[ $f == docs/man/* ]] && first=$(roff_text <"$block" | head -n 1)
		if looks_like_output "$first"; then
			tap_fail "$f:$at: unmarked example (program output without <!-- example: NAME -->): $first"
			unmarked=$((unmarked + 1))
		fi
		;;
	*) compare "$f" "$at" "$name" "$block" ;;
	esac
done <"$tmp/index"
if ((unmarked == 0)); then
	tap_ok "every block of program output in the docs is a marked example ($(wc -l <"$tmp/index") blocks)"
fi
tap_done
