#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Differential test: distenv-hostnames against the real
# `scontrol show hostnames` on the hand-written tests/diff/corpus.txt and on
# the expressions tests/diff/gen-corpus.sh makes. For each expression both
# must succeed or both fail, and on success print the same bytes. The local
# scontrol speaks the grammar of its Slurm version, so the comparison uses
# --slurm-22 when that is 22.05 and the default grammar from 23.11.0; the
# corpus section of the other grammar is checked against the expansions
# written in it. Output: TAP, one line per expression (each tagged with
# TAP_TAG when set).
#
# With DISTENV_CLUSTER_SLURM=24.11 or 26.05 (tests/run's pass per Slurm) the
# comparison runs on the local cluster's login side of that version, against
# its own scontrol and the distenv-hostnames built against it.
#
# Runs from the build directory (make check, make distcheck): the binary is
# ${DISTENV_HOSTNAMES:-./src/distenv-hostnames}, the corpus is read from
# ${srcdir:-.}/tests/diff. scontrol needs a slurm.conf even for this, so a
# minimal one is written to a temporary directory (SLURM_CONF); /etc is
# never read or touched.
set -euo pipefail

srcdir=${srcdir:-.}
here=$srcdir/tests/diff
if [[ ! -f $here/corpus.txt ]]; then
	here=$(cd "$(dirname "$0")" && pwd)
fi
here=$(cd "$here" && pwd)
bin=${DISTENV_HOSTNAMES:-./src/distenv-hostnames}
scontrol=${SCONTROL:-scontrol}
tag=${TAP_TAG:+[$TAP_TAG] }

if [[ ${DISTENV_CLUSTER_SLURM:-host} != host && -z ${DISTENV_HOSTNAMES_INSIDE:-} ]]; then
	# shellcheck source=tests/lib/cluster.sh
	. "$here/../lib/cluster.sh"
	cluster_require --nodes 2 --cpus 4
	CLUSTER_TIMEOUT=600 cx env DISTENV_HOSTNAMES_INSIDE=1 srcdir="$(cd "$srcdir" && pwd)" \
		DISTENV_HOSTNAMES="$DISTENV_BUILD_DIR/src/distenv-hostnames" bash "$here/$(basename "$0")"
	exit
fi

if ! command -v "$scontrol" >/dev/null 2>&1; then
	echo "1..0 # SKIP scontrol not installed"
	exit 0
fi
if [[ ! -x $bin ]]; then
	echo "Bail out! $bin is not built"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostnames-vs-scontrol.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/slurm.conf" <<'EOF'
ClusterName=distenvtest
SlurmctldHost=localhost
EOF
export SLURM_CONF=$tmp/slurm.conf
unset SLURM_CONF_SERVER

# Which grammar the local scontrol speaks: 22.05 refuses text after ']'.
if ! "$scontrol" show hostnames 'n[1-2]' >"$tmp/probe" 2>&1 ||
	[[ $(<"$tmp/probe") != $'n1\nn2' ]]; then
	echo "1..0 # SKIP scontrol show hostnames does not work here: $(head -n 1 "$tmp/probe")"
	exit 0
fi
"$scontrol" show hostnames 'n[1-2]x' >"$tmp/probe" 2>&1 || true
"$scontrol" show hostnames 'n[1-' >"$tmp/probe2" 2>&1 || true
if [[ $(<"$tmp/probe") == $'n1x\nn2x' ]]; then
	local_grammar=23
elif [[ $(<"$tmp/probe2") == 'n]' ]]; then
	local_grammar=22
else
	echo "1..0 # SKIP this scontrol (23.02?) speaks neither grammar distenv-hostnames models"
	exit 0
fi
echo "# $("$scontrol" --version 2>&1 || true), grammar $local_grammar"

tests=0
failures=0

# show RAW: the expression for a TAP line ('#' would start a directive).
show() {
	local s=${1//#/\\x23}
	((${#s} > 100)) && s=${s:0:100}...
	printf '%s' "$s"
}

report() {	# report PASS DESCRIPTION [DIAGNOSTIC FILE...]
	local pass=$1 desc=$2 f
	shift 2
	tests=$((tests + 1))
	if ((pass)); then
		echo "ok $tests - $tag$desc"
	else
		failures=$((failures + 1))
		echo "not ok $tests - $tag$desc"
		for f in "$@"; do
			[[ -s $f ]] && sed -n '1,8s/^/#   /p' "$f"
		done
	fi
	return 0
}

# decode RAW: the expression in $expr (corpus escapes, "(empty)").
expr=
decode() {
	if [[ $1 == '(empty)' ]]; then
		expr=
	else
		printf -v expr '%b' "$1"
	fi
}

# grammar_flag GRAMMAR: the distenv-hostnames option for it, in $flag.
flag=()
grammar_flag() {
	if [[ $1 == 22 ]]; then flag=(--slurm-22); else flag=(); fi
}

# Runs distenv-hostnames on $expr; rc in $d_rc, output in $tmp/d.out.
d_rc=0
run_ours() {
	d_rc=0
	"$bin" "${flag[@]}" -- "$expr" >"$tmp/d.out" 2>"$tmp/d.err" || d_rc=$?
}

check_scontrol() {	# check_scontrol RAW
	local s_fail=0 d_fail=0 what s_what=succeeds d_what=succeeds
	decode "$1"
	grammar_flag "$local_grammar"
	"$scontrol" -- show hostnames "$expr" >"$tmp/s.out" 2>"$tmp/s.err" || s_fail=1
	# scontrol says "Invalid hostlist" but exits 0
	grep -q '^Invalid hostlist' "$tmp/s.err" && s_fail=1
	run_ours
	((d_rc != 0)) && d_fail=1
	if ((s_fail != d_fail)); then
		((s_fail)) && s_what=fails
		((d_fail)) && d_what=fails
		what="scontrol $s_what, distenv-hostnames $d_what"
		report 0 "$(show "$1"): $what" "$tmp/s.err" "$tmp/d.err" "$tmp/s.out" "$tmp/d.out"
	elif ((s_fail)); then
		report 1 "$(show "$1"): both refuse it"
	elif ! cmp -s "$tmp/s.out" "$tmp/d.out"; then
		diff "$tmp/s.out" "$tmp/d.out" >"$tmp/diff" || true
		report 0 "$(show "$1"): the outputs differ (< scontrol, > distenv-hostnames)" "$tmp/diff"
	else
		report 1 "$(show "$1"): same $(wc -l <"$tmp/s.out") lines"
	fi
}

check_expected() {	# check_expected GRAMMAR RAW WANT
	local want
	decode "$2"
	grammar_flag "$1"
	run_ours
	if [[ $3 == '!error' ]]; then
		if ((d_rc == 1)) && grep -q '^distenv-hostnames: hostlist' "$tmp/d.err"; then
			report 1 "$(show "$2"): refused ($1 grammar)"
		else
			report 0 "$(show "$2"): should be refused ($1 grammar), exit $d_rc" "$tmp/d.out" "$tmp/d.err"
		fi
		return 0
	fi
	if [[ $3 == '(none)' ]]; then
		: >"$tmp/want"
	else
		printf -v want '%b' "$3"
		printf '%s\n' "${want//|/$'\n'}" >"$tmp/want"
	fi
	if ((d_rc == 0)) && cmp -s "$tmp/want" "$tmp/d.out"; then
		report 1 "$(show "$2"): expands as expected ($1 grammar)"
	else
		diff "$tmp/want" "$tmp/d.out" >"$tmp/diff" || true
		report 0 "$(show "$2"): expansion differs ($1 grammar, exit $d_rc; < expected, > got)" "$tmp/diff" "$tmp/d.err"
	fi
}

section='' other=0 section_other=22
[[ $local_grammar == 22 ]] && section_other=23
while IFS= read -r line || [[ -n $line ]]; do
	case $line in
	'' | '#'*) continue ;;
	'[22]' | '[23]') section=${line:1:2}; continue ;;
	esac
	if [[ -z $section ]]; then
		report 0 "corpus.txt: expression before a [22] or [23] section: $(show "$line")"
	elif [[ $line == *' => '* ]]; then
		check_expected "$section" "${line%% => *}" "${line#* => }"
	elif [[ $section == "$local_grammar" ]]; then
		check_scontrol "$line"
	else
		other=$((other + 1))
	fi
done <"$here/corpus.txt"
# The other grammar's plain expressions need that scontrol: one line for
# them all (the run against that Slurm compares them).
if ((other)); then
	tests=$((tests + 1))
	echo "ok $tests - $tag$other corpus expressions of the ${section_other} grammar # SKIP they need an scontrol of that grammar (compared where one runs)"
fi

generated=0
while IFS= read -r line; do
	check_scontrol "$line"
	generated=$((generated + 1))
done < <(bash "$here/gen-corpus.sh")
report "$((generated >= 300))" "gen-corpus.sh made $generated expressions"

echo "1..$tests"
((failures == 0))
