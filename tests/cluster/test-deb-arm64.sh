#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-deb-arm64.sh: the arm64 packages, as an admin of ARM VMs (OCI's
# Ampere A1) would build them on an amd64 machine: scripts/build-deb
# --release bookworm --arch arm64 builds them in an arm64 root under
# qemu-user with the unit tests (make check) run there under emulation and
# no lintian error; the packages are arm64, their binaries AArch64; the
# tools run (under qemu, the root's libraries) and a one-rank socket check
# passes. Loading the plugin into an emulated Slurm is not done: slurmd
# and slurmstepd under qemu would cost more CI time than the check is
# worth; test-deb.sh covers the plugin on the native packages. Needs root
# and qemu-user's binfmt entry for aarch64 (scripts/setup enables it).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

BUILD_DEB=$DISTENV_SRCDIR/scripts/build-deb
CACHE=${DISTENV_CLUSTER_CACHE:-/var/cache/distenv-cluster}
cluster_forget_job_env
[[ $(id -u) -eq 0 ]] || tap_skip_all "needs root (overlay roots, chroot)"
[[ $(dpkg --print-architecture) == amd64 ]] || tap_skip_all "the emulated arm64 build is for amd64 machines"
for t in mmdebstrap arch-test qemu-aarch64-static readelf; do
	command -v "$t" >/dev/null || tap_skip_all "$t not installed (scripts/setup installs it)"
done

cluster_scratch deb-arm64

# The same CUDA choice as test-deb.sh: the headers are the same on every
# architecture, so the arm64 package carries the NCCL backend too.
cuda_args=()
[[ -f /usr/local/cuda/include/nccl.h && -f /usr/local/cuda/include/cuda_runtime_api.h ]] || cuda_args=(--no-cuda)

# A refusal first: an arm64 build needs a release (no host arm64 toolchain).
out=$("$BUILD_DEB" --arch arm64 2>&1)
tap_is "$?" 2 "build-deb --arch arm64 without --release is refused (exit 2)"
tap_like "$out" "--arch arm64 needs --release" "... saying it needs --release"
out=$("$BUILD_DEB" --release bookworm --arch riscv64 2>&1)
tap_like "$out" "--arch: 'riscv64' is not supported \(expected arm64" "--arch riscv64 is refused, naming what is supported"

out=$("$BUILD_DEB" --release bookworm --arch arm64 "${cuda_args[@]}" --out "$tmp/dist" 2>&1)
rc=$?
tap_is "$rc" 0 "build-deb --release bookworm --arch arm64 exits 0 (make check under qemu, lintian: no errors)" ||
	tap_diag "$(tail -n 40 <<<"$out")"
tap_diag "$(grep 'build-deb: built' <<<"$out")"
mapfile -t debs < <(grep -E '^/.*\.deb$' <<<"$out")
tap_is "$(printf '%s\n' "${debs[@]##*/}" | sed -E 's/_[^_]+_arm64\.deb$//' | sort | tr '\n' ' ')" \
	"distenv distenv-slurm-plugin " "two arm64 packages, their paths printed last"
tools=$(printf '%s\n' "${debs[@]}" | grep '/distenv_')
plugin=$(printf '%s\n' "${debs[@]}" | grep '/distenv-slurm-plugin_')
tap_is "$(dpkg-deb -f "$tools" Architecture 2>&1) $(dpkg-deb -f "$plugin" Architecture 2>&1)" "arm64 arm64" \
	"both packages say Architecture: arm64"
tap_like "$(dpkg-deb -c "$plugin" 2>&1)" "\./usr/lib/aarch64-linux-gnu/slurm-wlm/distenv\.so" \
	"the plugin is in arm64's Slurm plugin dir (/usr/lib/aarch64-linux-gnu/slurm-wlm)"
tap_like "$(dpkg-deb -f "$plugin" Depends 2>&1)" "slurm-wlm-basic-plugins \(>= 22\.05~\)" \
	"the plugin depends on bookworm's Slurm 22.05"

# build-deb reads the root's path from roots --make's stdout: that line
# alone (making it, when it was not cached, is told on stderr).
out=$("$DISTENV_SRCDIR/scripts/distenv-cluster" roots --make 22.05 --arch arm64 2>/dev/null)
tap_is "$out" "$CACHE/roots/bookworm-arm64" "roots --make 22.05 --arch arm64 prints the root's path and nothing else on stdout"

# The unit tests ran in the build, under emulation, and none failed.
log=$tmp/dist/build-arm64.log
tap_like "$(grep -E '^# (TOTAL|FAIL):' "$log" 2>&1 | sort -u | tr '\n' ' ')" "^# FAIL: +0 # TOTAL: +[1-9]" \
	"make check ran in the arm64 build (dh_auto_test) and no test failed" ||
	tap_diag "$(grep -E '^(FAIL|ERROR):' "$log" | head)"
tap_like "$(grep -c '^PASS: tests/unit/' "$log")" "^[1-9][0-9]*$" "... the unit tests among them"

x=$tmp/x
dpkg-deb -x "$tools" "$x" && dpkg-deb -x "$plugin" "$x"
tap_like "$(readelf -h "$x/usr/bin/distenv-check" 2>&1)" "Machine: +AArch64" "distenv-check is an AArch64 binary"
tap_like "$(readelf -h "$x/usr/lib/aarch64-linux-gnu/slurm-wlm/distenv.so" 2>&1)" "Machine: +AArch64" \
	"distenv.so is an AArch64 shared object"

# The tools run under qemu with the arm64 root's libraries (libsodium,
# libmunge): the root as qemu's sysroot, the package's files as they are.
root=$CACHE/roots/bookworm-arm64
q() { qemu-aarch64-static -L "$root" "$@"; }
tap_like "$(q "$x/usr/bin/distenv-check" --version 2>&1)" "^distenv-check \(distenv\) [0-9.]+" "the arm64 distenv-check runs (--version)"
tap_is "$(q "$x/usr/bin/distenv-hostnames" 'node[1-3]' 2>&1 | tr '\n' ' ')" "node1 node2 node3 " \
	"the arm64 distenv-hostnames expands node[1-3]"
port=$((20000 + RANDOM % 40000))
out=$(env -i PATH=/usr/bin:/bin DISTENV_SECRET=0123456789abcdef0123 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
	LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	qemu-aarch64-static -L "$root" "$x/usr/bin/distenv-check" --backend=socket --timeout=30 2>&1)
tap_like "$out" "PASS: 1 rank on 1 node" "the arm64 distenv-check passes a one-rank socket check under qemu" ||
	tap_diag "$out"

tap_done
