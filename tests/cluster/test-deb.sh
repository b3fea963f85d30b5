#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-deb.sh: distenv's Debian packages as an admin meets them. For this
# machine's release (dpkg-buildpackage here) and for each release of
# $DISTENV_TEST_SLURM (inside its cluster root): scripts/build-deb builds
# them from a clean copy of the checkout with no lintian error; the plugin
# package depends on exactly the Slurm major it was built against; then the
# local cluster of that Slurm comes up from a root with the packages
# INSTALLED (distenv-cluster up --install) and loads the installed plugin
# and tools: the environment test and srun --dist-check pass; on this
# machine's release the packages of a newer version (a copy of the
# checkout with its version raised) upgrade them in place and the cluster
# runs the new ones; a remove, then a purge, leave none of the packages'
# files, and down leaves no overlay and the cached root as it was. Needs
# root; skips otherwise.
# shellcheck disable=SC2016
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/cluster.sh
. "$here/../lib/cluster.sh"

S=$DISTENV_CLUSTER
BUILD_DEB=$DISTENV_SRCDIR/scripts/build-deb
CACHE=${DISTENV_CLUSTER_CACHE:-/var/cache/distenv-cluster}
cluster_forget_job_env
[[ $(id -u) -eq 0 ]] || tap_skip_all "needs root (overlay roots, Slurm daemons)"
for t in dpkg-buildpackage lintian dh; do
	command -v "$t" >/dev/null || tap_skip_all "$t not installed (scripts/setup installs it)"
done
# shellcheck source=/dev/null # the machine's own
host_rel=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ -n $(cluster_slurm_of "$host_rel") ]] || tap_skip_all "this machine's release ($host_rel) has no cluster root to install into (bookworm, trixie, sid)"

# This machine's release, then the others the suite runs.
rels=("$host_rel")
for v in ${DISTENV_TEST_SLURM:-}; do
	r=$(cluster_release_of "$v")
	[[ -z $r || " ${rels[*]} " == *" $r "* ]] || rels+=("$r")
done

cluster_scratch deb

# The packages carry the NCCL backend where this machine has CUDA's and
# NCCL's headers (build-deb's default); elsewhere sockets-only, on purpose.
cuda_args=() nccl_in=1
if [[ ! -f /usr/local/cuda/include/nccl.h || ! -f /usr/local/cuda/include/cuda_runtime_api.h ]]; then
	cuda_args=(--no-cuda) nccl_in=0
	tap_diag "no CUDA/NCCL headers in /usr/local/cuda: the packages are built with --no-cuda (sockets only)"
fi

# The upgrade's packages: the same sources, version VERSION+up1 (newer to
# dpkg), with its changelog entry, built as an admin would the next release.
version=$(sed -n '/^AC_INIT/{s/^[^,]*, *\[//;s/\].*//;p;}' "$DISTENV_SRCDIR/configure.ac")
upv=$version+up1
mkdir -p "$tmp/up"
git -C "$DISTENV_SRCDIR" ls-files -z -co --exclude-standard |
	tar -C "$DISTENV_SRCDIR" --null -T - -cf - | tar -C "$tmp/up" -xf -
sed -i "/^AC_INIT/s/\[$version\]/[$upv]/" "$tmp/up/configure.ac"
{
	printf 'distenv (%s) unstable; urgency=medium\n\n  * Test upgrade.\n\n' "$upv"
	printf ' -- distenv developers <distenv@users.noreply.github.com>  %s\n\n' "$(date -R)"
	cat "$DISTENV_SRCDIR/debian/changelog"
} >"$tmp/up/debian/changelog.new" && mv "$tmp/up/debian/changelog.new" "$tmp/up/debian/changelog"

for rel in "${rels[@]}"; do
	v=$(cluster_slurm_of "$rel")
	vre=${v//./\\.}
	arg=$rel
	[[ $rel == "$host_rel" ]] && arg=host
	# This machine's: built anew (--no-cache), whatever an earlier run left.
	fresh=()
	[[ $rel == "$host_rel" ]] && fresh=(--no-cache)
	out=$("$BUILD_DEB" --release "$arg" "${cuda_args[@]}" "${fresh[@]}" --out "$tmp/dist-$rel" 2>&1)
	rc=$?
	if [[ $rel == "$host_rel" ]]; then
		tap_like "$out" "building distenv .* on this machine" "[$rel] build-deb --no-cache builds anew"
	fi
	tap_is "$rc" 0 "[$rel] build-deb --release $arg exits 0 (lintian: no errors)" || tap_diag "$out"
	tap_diag "[$rel] $(grep 'build-deb: built' <<<"$out")"
	mapfile -t debs < <(grep -E '^/.*\.deb$' <<<"$out")
	tap_is "$(printf '%s\n' "${debs[@]##*/}" | sed -E 's/_[^_]+_[^_]+\.deb$//' | sort | tr '\n' ' ')" \
		"distenv distenv-slurm-plugin " "[$rel] two packages, their paths printed last"
	tools=$(printf '%s\n' "${debs[@]}" | grep '/distenv_')
	plugin=$(printf '%s\n' "${debs[@]}" | grep '/distenv-slurm-plugin_')
	next=$(printf '%d.%02d' "${v%.*}" "$((10#${v#*.} + 1))")
	tap_like "$(dpkg-deb -f "$plugin" Depends 2>&1)" \
		"slurm-wlm-basic-plugins \(>= $vre~\), slurm-wlm-basic-plugins \(<< ${next//./\\.}~\)" \
		"[$rel] the plugin depends on Slurm $v exactly (>= $v~, << $next~)"
	tap_like "$(dpkg-deb -c "$plugin" 2>&1)" "\./usr/lib/[^/]+/slurm-wlm/distenv\.so" \
		"[$rel] the plugin is in Slurm's plugin dir"
	tap_like "$(dpkg-deb -c "$plugin" 2>&1)" "\./usr/share/distenv/plugstack\.conf\.example" \
		"[$rel] ... with its plugstack line, not enabled (nothing under /etc)"
	tap_is "$({ dpkg-deb -c "$plugin"; dpkg-deb -c "$tools"; } 2>&1 | awk '$6 ~ /^\.\/etc\// { print $6 }')" "" \
		"[$rel] no file under /etc in either package"
	dpkg-deb -x "$tools" "$tmp/x-$rel"
	tap_is "$(readelf -d "$tmp/x-$rel/usr/bin/distenv-check" 2>&1 | grep -oE 'lib(nccl|cudart)[^]]*')" "" \
		"[$rel] distenv-check links no NCCL or CUDA library (it loads them at run time)"

	[[ -n ${CLUSTER_LOCK_FD:-} ]] || cluster_lock
	out=$("$S" up --slurm "$v" --install "$tools" --install "$plugin" 2>&1)
	tap_is "$?" 0 "[$rel] up --slurm $v --install the packages exits 0" || { tap_diag "$out"; continue; }
	tap_like "$out" "installed distenv_.* distenv-slurm-plugin_.* in an overlay of the $rel root" "[$rel] ... installed in an overlay"
	st=$("$S" status 2>&1)
	tap_like "$st" "plugstack: required /usr/lib/[^/]+/slurm-wlm/distenv\.so" "[$rel] the cluster loads the installed plugin"
	tap_like "$(cx srun -v -N1 -n1 true 2>&1)" "distenv: [0-9.]+ loaded, built against Slurm $vre\." \
		"[$rel] srun -v: the installed plugin, built against Slurm $v"
	tap_is "$(cx sh -c 'command -v distenv-check' 2>&1)" "/usr/bin/distenv-check" "[$rel] the tools are the installed ones"
	out=$(cx srun -N2 -n4 --ntasks-per-node=2 bash -c \
		'echo "$(hostname) $SLURM_PROCID RANK=$RANK LOCAL_RANK=$LOCAL_RANK NODE_RANK=$NODE_RANK WORLD_SIZE=$WORLD_SIZE MASTER_ADDR=$MASTER_ADDR"' 2>&1 | sort)
	tap_is "$out" "node1 0 RANK=0 LOCAL_RANK=0 NODE_RANK=0 WORLD_SIZE=4 MASTER_ADDR=node1
node1 1 RANK=1 LOCAL_RANK=1 NODE_RANK=0 WORLD_SIZE=4 MASTER_ADDR=node1
node2 2 RANK=2 LOCAL_RANK=0 NODE_RANK=1 WORLD_SIZE=4 MASTER_ADDR=node1
node2 3 RANK=3 LOCAL_RANK=1 NODE_RANK=1 WORLD_SIZE=4 MASTER_ADDR=node1" \
		"[$rel] the installed plugin's environment in every task"
	out=$(cx srun -N2 -n4 --ntasks-per-node=2 --dist-check true 2>&1)
	tap_like "$out" "distenv-check: PASS: 4 ranks on 2 nodes" "[$rel] srun --dist-check runs the installed distenv-check" ||
		tap_diag "$out"

	# The NCCL backend is in the package, and a CPU node (no CUDA in the
	# root) hears which library is missing.
	if ((nccl_in)); then
		out=$(cx env -i PATH=/usr/bin:/bin DISTENV_SECRET=0123456789abcdef0123 RANK=0 WORLD_SIZE=1 \
			MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 distenv-check --backend=nccl --timeout=10 2>&1)
		tap_like "$out" "nccl-missing.*libnccl\.so\.2" \
			"[$rel] the installed distenv-check has the NCCL backend; on a node without NCCL: nccl-missing, naming libnccl.so.2" ||
			tap_diag "$out"
	else
		tap_skip "[$rel] the installed distenv-check's NCCL backend" "built with --no-cuda (no CUDA/NCCL headers here)"
	fi

	if [[ $rel == "$host_rel" ]]; then
		# Its unit tests are the first build's (the same sources): nocheck.
		out=$(DEB_BUILD_OPTIONS=nocheck "$tmp/up/scripts/build-deb" --release host "${cuda_args[@]}" --out "$tmp/dist-up" 2>&1)
		tap_is "$?" 0 "[$rel] build-deb of version $upv exits 0" || tap_diag "$out"
		mapfile -t updebs < <(grep -E '^/.*\.deb$' <<<"$out")
		out=$(cx dpkg -i "${updebs[@]}" 2>&1)
		tap_is "$?" 0 "[$rel] dpkg -i of $upv over $version exits 0 (an upgrade)" || tap_diag "$out"
		tap_is "$(cx dpkg-query -W -f '${Package}=${Version} ' distenv distenv-slurm-plugin 2>&1)" \
			"distenv=$upv distenv-slurm-plugin=$upv " "[$rel] ... both packages at $upv"
		tap_like "$(cx srun -v -N1 -n1 true 2>&1)" "distenv: ${upv//+/\\+} loaded" \
			"[$rel] ... and the next srun loads the upgraded plugin"
		out=$(cx srun -N2 -n4 --ntasks-per-node=2 --dist-check true 2>&1)
		tap_like "$out" "distenv-check: PASS: 4 ranks on 2 nodes" "[$rel] ... srun --dist-check passes after the upgrade" ||
			tap_diag "$out"
		tools=$(printf '%s\n' "${updebs[@]}" | grep '/distenv_')
		plugin=$(printf '%s\n' "${updebs[@]}" | grep '/distenv-slurm-plugin_')
	fi

	# Remove, then purge: none of the packages' files is left (on the login
	# side and on a node: one overlay root for all).
	mapfile -t files < <(for d in "$tools" "$plugin"; do dpkg-deb -c "$d"; done | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }')
	out=$(cx dpkg --remove distenv-slurm-plugin distenv 2>&1)
	tap_is "$?" 0 "[$rel] dpkg --remove of both packages exits 0" || tap_diag "$out"
	left=$(nx node2 sh -c 'for f in "$@"; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done; true' sh "${files[@]}" 2>&1)
	tap_is "$left" "" "[$rel] remove leaves none of the packages' files (they have no conffiles)"
	out=$(cx dpkg --purge distenv-slurm-plugin distenv 2>&1)
	tap_is "$?" 0 "[$rel] dpkg --purge of both packages exits 0" || tap_diag "$out"
	tap_is "$(cx sh -c 'ls -d /usr/share/distenv /usr/share/doc/distenv /usr/share/doc/distenv-slurm-plugin 2>/dev/null; dpkg -l "distenv*" 2>/dev/null | grep -E "^[a-z][a-z] "' 2>&1)" "" \
		"[$rel] ... no package dir, no dpkg record"

	out=$("$S" down 2>&1)
	tap_is "$?" 0 "[$rel] down exits 0"
	tap_is "$(awk '$2 ~ /pkgroot/ { print $2 }' /proc/self/mounts)" "" "[$rel] down leaves no overlay mounted"
	tap_is "$(ls "$CACHE/roots/$rel/usr/bin/distenv-check" "$CACHE/roots/$rel/var/lib/dpkg/info/distenv.list" 2>/dev/null)" "" \
		"[$rel] the cached root was never touched"
done

# The same inputs again: the packages come from build-deb's cache (the
# --no-cache build above stored them), the same bytes, lintian's report
# with them.
out=$("$BUILD_DEB" --release host "${cuda_args[@]}" --out "$tmp/dist-again" 2>&1)
rc=$?
mapfile -t again < <(grep -E '^/.*\.deb$' <<<"$out")
same=1
for f in "${again[@]}"; do cmp -s "$f" "$tmp/dist-$host_rel/${f##*/}" || same=0; done
if ((rc == 0 && ${#again[@]} == 2 && same)) && [[ $out == *"(from the cache)"* && -s $tmp/dist-again/lintian.log ]]; then
	tap_ok "build-deb of the same inputs again: the cached packages, byte for byte, and lintian's report"
else
	tap_fail "build-deb of the same inputs again: the cached packages (rc=$rc, ${#again[@]} packages, same bytes: $same)" "$out"
fi
tap_done
