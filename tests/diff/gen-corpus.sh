#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Prints generated hostlist expressions for hostnames-vs-scontrol.sh, one a
# line, escaped for printf %b like corpus.txt. Deterministic: its own LCG
# with a fixed seed (bash's $RANDOM differs between bash versions).
#
# Usage: gen-corpus.sh [COUNT [SEED]]   (default 400 expressions, seed 20240611)
set -euo pipefail

count=${1:-400}
state=${2:-20240611}

# rnd N: a number in [0, N) in $r.
r=0
rnd() {
	state=$(( (state * 1103515245 + 12345) % 2147483648 ))
	r=$(( (state / 65536) % $1 ))
}

# pick WORD...: one of the words in $w.
w=
pick() {
	local -a words=("$@")
	rnd "${#words[@]}"
	w=${words[r]}
}

# num: a low bound, often just below a digit boundary, sometimes padded.
n=
num() {
	rnd 10
	case $r in
	0 | 1 | 2) rnd 20; n=$r ;;
	3 | 4) pick 7 8 9 97 98 99 997 998 999 9998; n=$w ;;
	5) pick 07 08 09 097 098 099 0997 0998 0999 00009; n=$w ;;
	6) rnd 120; n=$(printf '%03d' "$r") ;;
	7) rnd 40; n=$(printf '%02d' "$r") ;;
	8) pick 0 00 000 1 01 001; n=$w ;;
	*) rnd 3000; n=$r ;;
	esac
}

# entry: N or N-M. M is N plus a little (crossing a digit boundary when N
# is just below one), written padded or not; sometimes below N.
e=
entry() {
	local lo v width
	num; lo=$n
	rnd 10
	if ((r < 3)); then
		e=$lo
		return
	fi
	rnd 12; v=$((10#$lo + r))
	rnd 10
	if ((r == 0 && 10#$lo > 0)); then
		v=$((10#$lo - 1))
	fi
	rnd 4
	width=$(( r == 0 ? ${#lo} : (r == 1 ? ${#lo} + 1 : 0) ))
	e=$lo-$(printf '%0*d' "$width" "$v")
}

# bracket: [entry,entry...]
b=
bracket() {
	local k i
	rnd 3; k=$((r + 1))
	b='['
	for ((i = 0; i < k; i++)); do
		entry
		((i)) && b+=','
		b+=$e
	done
	b+=']'
}

# damage: one of the ways to get a hostlist wrong, or a rare valid form.
d=
damage() {
	pick '[]' '[1,]' '[,2]' '[3-1]' '[1--2]' '[-1]' '[1x2]' '[a]' '[1-2' \
		'[1-2]-ib' ']' '[[1-2]]' '[ 1]' '[+2]' '[1-3 ]' '[1-2]x' '[7-]' \
		'[0-255]' '[0-65536]' '[1a-3]' '[' '[1-2]]'
	d=$w
}

prefixes=(n node gpu- rack cn tux ml-16-node- b04- x nid00 a-b. '' c1n)
texts=(-node - x .ib n '' -p 0)

# token: prefix, then 0-3 brackets with text between them.
t=
token() {
	local k i
	pick "${prefixes[@]}"; t=$w
	rnd 10; k=$(( r < 2 ? 0 : (r < 7 ? 1 : (r < 9 ? 2 : 3)) ))
	for ((i = 0; i < k; i++)); do
		if ((i)); then
			pick "${texts[@]}"; t+=$w
		fi
		bracket; t+=$b
	done
	((k == 0)) && { num; t+=$n; }
	rnd 12
	if ((r == 0)); then
		damage; t+=$d
	fi
	return 0
}

for ((line = 0; line < count; line++)); do
	rnd 8; ntok=$((r < 4 ? 1 : (r < 6 ? 2 : (r < 7 ? 3 : 4))))
	expr=
	rnd 10; ((r == 0)) && expr=','
	for ((j = 0; j < ntok; j++)); do
		if ((j)); then
			pick , , , ' ' '\t' ',,' ', '
			expr+=$w
		fi
		token; expr+=$t
	done
	rnd 10; ((r == 0)) && expr+=','
	# a space at either end would be lost by `read`: write it as \x20
	[[ $expr == ' '* ]] && expr='\x20'${expr# }
	[[ $expr == *' ' ]] && expr=${expr% }'\x20'
	printf '%s\n' "$expr"
done
