#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The NCCL path on a real GPU, in the suite: tests/gpu/device-check.sh on
# this checkout's build where nvidia-smi lists a GPU; skipped elsewhere.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
	tap_skip_all "no GPU (nvidia-smi lists none): the NCCL path is checked by tests/gpu/device-check.sh on a GPU machine"
fi
build=${DISTENV_BUILD_DIR:-$(cd "$here/../.." && pwd)}
exec "$here/device-check.sh" --build-dir "$build"
