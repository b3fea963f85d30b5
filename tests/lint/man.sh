#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Man pages: every page under docs/man renders without a single groff/man
# warning, has a NAME section that mandb can index, and is installed
# (listed in Makefile.am's dist_man_MANS), and every listed page exists.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
if ! command -v man >/dev/null; then
	tap_skip_all "man is not installed (apt-get install man-db)"
fi

shopt -s nullglob
pages=(docs/man/*.[1-9])
shopt -u nullglob
if ((${#pages[@]} == 0)); then
	tap_fail "man pages under docs/man"
	tap_done
	exit 1
fi

for page in "${pages[@]}"; do
	err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
	rc=$?
	if ((rc == 0)) && [[ -z $err ]]; then
		tap_ok "$page renders without warnings"
	else
		tap_fail "$page renders without warnings (exit $rc)" "$err"
	fi
	if command -v lexgrog >/dev/null; then
		name=${page##*/}
		name=${name%.*}
		out=$(lexgrog "$page" 2>&1) && rc=0 || rc=$?
		tap_like "$rc $out" "^0 .*: \"$name - " "$page: NAME section indexable by mandb (lexgrog)"
	else
		tap_skip "$page: NAME section indexable by mandb" "lexgrog not installed"
	fi
done

# dist_man_MANS, joined across backslash-continued lines.
listed=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' Makefile.am | sed -n 's/^dist_man_MANS[[:space:]]*=//p' | tr -s ' \t' '\n' | sed '/^$/d' | sort)
tap_is "$listed" "$(printf '%s\n' "${pages[@]}" | sort)" "Makefile.am dist_man_MANS lists exactly the pages under docs/man"
tap_done
