#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Static checks: shell scripts shellcheck-clean, the plugin exports only
# the SPANK entry points, and it is built hardened.
set -euo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${DISTENV_BUILD_DIR:-$root}

if command -v shellcheck >/dev/null; then
	# Every shell script: by shebang, whatever its name, and every sourced
	# library (no shebang: a "# shellcheck shell=" line in its first three).
	mapfile -t scripts < <(cd "$root" && for f in scripts/* scripts/lib/*.sh bench/allreduce bench/rendezvous-load bench/preflight-scale bench/port-collisions tests/run tests/ansible/e2e .ci/run $(find tests templates -name '*.sh' -o -name '*.slurm'); do
		[ -f "$f" ] || continue
		{ head -1 "$f" | grep -qE '^#!.*(bash|/sh)' || head -3 "$f" | grep -q '^# shellcheck shell='; } && echo "$f"; done | sort -u)
	for s in "${scripts[@]}"; do
		if out=$(cd "$root" && shellcheck -x "$s" 2>&1); then
			tap_ok "shellcheck $s"
		else
			tap_fail "shellcheck $s" "$out"
		fi
	done
else
	tap_skip "shellcheck" "shellcheck not installed"
fi

so="$build/spank/.libs/distenv.so"
if [ -f "$so" ]; then
	syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -vE '^(slurm_spank_|plugin_)' || true)
	tap_is "$syms" "" "distenv.so exports only slurm_spank_* and plugin_* symbols"
	for s in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_task_init; do
		if nm -D --defined-only "$so" | grep -qw "$s"; then tap_ok "distenv.so exports $s"
		else tap_fail "distenv.so exports $s"; fi
	done
	tap_like "$(readelf -d "$so")" 'BIND_NOW|FLAGS.*NOW' "distenv.so linked with -z now"
	tap_like "$(readelf -l "$so")" 'GNU_RELRO' "distenv.so has RELRO"
	tap_like "$(nm -D "$so")" '__stack_chk_fail' "distenv.so built with the stack protector"
	tap_like "$(nm -D "$so")" '__(snprintf|vsnprintf|memcpy|sprintf)_chk' "distenv.so built with _FORTIFY_SOURCE"
else
	tap_fail "distenv.so built at $so"
fi
tap_done
