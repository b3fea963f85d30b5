#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every unit test program under valgrind: no invalid access, no leak.
set -euo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

command -v valgrind >/dev/null || tap_skip_all "valgrind not installed"
build=${DISTENV_BUILD_DIR:-.}
found=0
for t in "$build"/tests/unit/test-*; do
	case $t in *.c | *.o | *.log | *.trs) continue ;; esac
	[ -x "$t" ] || continue
	found=1
	out=$(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$t" 2>&1 >/dev/null) && rc=0 || rc=$?
	if [ "$rc" -eq 0 ] && [ -z "$out" ]; then
		tap_ok "$(basename "$t") is valgrind-clean"
	else
		tap_fail "$(basename "$t") under valgrind (exit $rc)" "$out"
	fi
done
[ "$found" = 1 ] || tap_fail "no unit test programs found under $build/tests/unit (build them with make check)"
tap_done
