# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# frames.sh: DE_FRAME, the tests' one builder of hand-made protocol frames
# (tests/tools/de-frame, made by `make check` from src/lib/proto.c), for
# the tests that play a foreign or forged client. Source after tap.sh:
#
#   frames_need "$build"       # DE_FRAME set and exported, or the file fails
#   "$DE_FRAME" header HELLO 4294967295 >&3
#
# Python in a test calls it the same way:
#   subprocess.run([os.environ["DE_FRAME"], "hello", "rank=0"], ...).stdout

# frames_need [DIR...]: the first de-frame that runs here, from the
# checkout's own build (tests/run builds it there; made on the host's libc,
# it also runs inside every Slurm version's newer root), then the build
# trees named.
frames_need() {
	local d here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	for d in "$here" "$@"; do
		if [[ -n $d && -x $d/tests/tools/de-frame ]] && "$d/tests/tools/de-frame" version >/dev/null 2>&1; then
			DE_FRAME=$d/tests/tools/de-frame
			export DE_FRAME
			return 0
		fi
	done
	tap_fail "the frame builder tests/tools/de-frame is built (make check builds it)" \
		"looked in: $here $*"
	tap_done
	exit 1
}
