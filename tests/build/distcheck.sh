#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make distcheck` (the tarball builds, passes make check, installs and
# uninstalls out of tree with a read-only source dir), and what
# `make install` puts where.
set -euo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

build=${DISTENV_BUILD_DIR:-.}
[ -f "$build/Makefile" ] || tap_skip_all "not configured (no Makefile in $build)"
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

plugdir=$(sed -n 's/^slurmplugindir = //p' "$build/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
datadir=$prefix/share
if make -C "$build" install DESTDIR="$dest" >"$dest.log" 2>&1; then
	tap_ok "make install"
else
	tap_fail "make install" "$(tail -20 "$dest.log")"
fi
rm -f "$dest.log"
if [ -f "$dest$plugdir/distenv.so" ] && [ ! -e "$dest$plugdir/distenv.la" ]; then
	tap_ok "plugin installed as $plugdir/distenv.so (where slurmstepd looks), no .la"
else
	tap_fail "plugin installed in $plugdir" "$(find "$dest" -type f)"
fi
ex="$dest$datadir/distenv/plugstack.conf.example"
if [ -f "$ex" ] && grep -q "^required $plugdir/distenv.so default=on" "$ex"; then
	tap_ok "example plugstack.conf line installed under share/ with the plugin's path"
else
	tap_fail "example plugstack.conf line under $datadir/distenv" "$(cat "$ex" 2>&1)"
fi
tap_like "$(ls "$dest$prefix/bin" 2>&1)" "distenv-hostnames" "distenv-hostnames installed in bin"

if out=$(make -C "$build" -j2 distcheck 2>&1); then
	tap_ok "make distcheck"
	tap_like "$out" "distenv-[0-9.]+ archives ready for distribution" "distcheck produced the archive"
else
	tap_fail "make distcheck" "$(printf '%s\n' "$out" | tail -40)"
	tap_skip "distcheck archive" "distcheck failed"
fi
tap_done
