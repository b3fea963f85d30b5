#!/bin/bash
# `make distcheck`: the tarball builds, passes make check and installs
# out of tree with a read-only source directory.
set -euo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

build=${DISTENV_BUILD_DIR:-.}
[ -f "$build/Makefile" ] || tap_skip_all "not configured (no Makefile in $build)"
if out=$(make -C "$build" -j2 distcheck 2>&1); then
	tap_ok "make distcheck"
	tap_like "$out" "distenv-[0-9.]+ archives ready for distribution" "distcheck produced the archive"
else
	tap_fail "make distcheck" "$(printf '%s\n' "$out" | tail -40)"
	tap_skip "distcheck archive" "distcheck failed"
fi
tap_done
