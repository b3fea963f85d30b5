#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One distenv-check for CPU and GPU nodes: libnccl and libcudart are loaded
# at run time, never linked. On a node without them --backend=nccl is the
# nccl-missing diagnosis naming what it tried, and --backend=auto runs on
# sockets saying why. The libraries are made unfindable for real: a tmpfs
# over the directories that hold them, in a mount namespace of its own
# (root only). One rank on 127.0.0.1, no cluster.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$here/../lib/ports.sh"

build=${DISTENV_BUILD_DIR:-.}
CHECK=$build/src/distenv-check
[ -x "$CHECK" ] || tap_skip_all "distenv-check not built at $CHECK"
# Built without the CUDA/NCCL headers there is no NCCL backend to load.
out=$(env -i PATH=/usr/bin:/bin RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 "$CHECK" --backend=nccl 2>&1)
[[ $out == *"built without CUDA/NCCL headers"* ]] && tap_skip_all "distenv-check built without the CUDA/NCCL headers (configure --without-cuda, or none found)"

secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT


# one [PREFIX...] -- ARGS...: rank 0 of a world of 1 on 127.0.0.1 run
# through PREFIX (e.g. the hiding namespace), only the torchrun variables;
# prints "rc=N", its stdout, "--stderr--", its stderr. one_env: more
# VAR=VALUE for its environment.
one_env=()
one() {
	local pre=() rc=0 o
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	o=$("${pre[@]}" env -i PATH=/usr/bin:/bin ${one_env[@]+"${one_env[@]}"} DISTENV_SECRET="$secret" RANK=0 WORLD_SIZE=1 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" "$CHECK" --timeout=10 "$@" 2>"$tmp/err") || rc=$?
	printf 'rc=%s\n%s\n--stderr--\n%s\n' "$rc" "$o" "$(cat "$tmp/err")"
}

# --- not linked --------------------------------------------------------------
if command -v readelf >/dev/null; then
	needed=$(readelf -d "$CHECK" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	if [ -n "$needed" ] && ! grep -qE '^lib(nccl|cudart)\.' <<<"$needed"; then
		tap_ok "distenv-check's DT_NEEDED has neither libnccl nor libcudart ($(tr '\n' ' ' <<<"$needed"))"
	else
		tap_fail "libnccl/libcudart not in distenv-check's DT_NEEDED" "$needed"
	fi
else
	tap_skip "DT_NEEDED without libnccl/libcudart" "readelf not installed (binutils)"
fi

# --- where the libraries are here ---------------------------------------------
# elf_machine FILE: the ELF e_machine field, so that libraries of another
# architecture (an arm64 package built beside amd64 CUDA) count as absent.
elf_machine() { od -An -j18 -N2 -tx1 "$1" 2>/dev/null | tr -d ' \n'; }
machine=$(elf_machine "$CHECK")

# The loader's cache and the directories configure baked in.
libs=()
while read -r f; do
	[ -e "$f" ] && [ "$(elf_machine "$f")" = "$machine" ] && libs+=("$(readlink -f "$f")")
done < <(
	ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\(libnccl\.so\.2\|libcudart\.so\.[0-9.]*\) .* => //p'
	sed -n 's/^#define DE_\(CUDA\|NCCL\)_LIBDIR "\(.*\)"$/\2/p' "$build/config.h" 2>/dev/null |
		while read -r d; do ls "$d"/libnccl.so.2 "$d"/libcudart.so.[0-9]* 2>/dev/null; done)
dirs=$(for f in "${libs[@]}"; do dirname "$f"; done | sort -u)
cudart=$(for f in "${libs[@]}"; do basename "$f"; done | grep -m1 '^libcudart\.so\.[0-9]' || true)
have_gpu=0
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && have_gpu=1

# --- libraries present, no GPU ------------------------------------------------
if [ -z "$dirs" ]; then
	tap_skip "libraries present, no GPU: --backend=nccl names the missing GPU" "libnccl.so.2/libcudart not installed here"
	tap_skip "libraries present, no GPU: --backend=auto picks sockets" "libnccl.so.2/libcudart not installed here"
elif [ "$have_gpu" = 1 ]; then
	tap_skip "libraries present, no GPU: --backend=nccl names the missing GPU" "this machine has a GPU (tests/gpu covers it)"
	tap_skip "libraries present, no GPU: --backend=auto picks sockets" "this machine has a GPU (tests/gpu covers it)"
else
	out=$(one -- --backend=nccl)
	tap_like "$out" $'^rc=1\n\\[rank 0/1\\] node=[^ ]+ FAIL gpu-selection: --backend=nccl but no GPU is visible: cudaGetDeviceCount: ' \
		"libraries present, no GPU: --backend=nccl loads them, then fails naming the missing GPU/driver (exit 1)"
	out=$(one -- --backend=auto -v)
	tap_like "$out" $'^rc=0\n.*backend=socket allreduce=1 \\(expected 1\\) OK.*--stderr--\ndistenv-check: rank 0: backend socket \\(auto\\), device cpu; not nccl: cudaGetDeviceCount: ' \
		"libraries present, no GPU: --backend=auto passes on sockets, -v says why not NCCL"
fi

# --- libraries unfindable -----------------------------------------------------
if [ "$(id -u)" != 0 ]; then
	reason="hiding the libraries needs root (a mount namespace)"
elif ! unshare --mount true 2>/dev/null; then
	reason="unshare --mount is not permitted here"
else
	reason=""
fi
# hide [KEEP]: run the rest of the line with a tmpfs over every directory
# holding the libraries (KEEP, a file name, copied back in).
cat >"$tmp/hide" <<'EOF'
#!/bin/sh
# hide DIRS KEEP CMD...: over each of DIRS (newline separated) an empty tmpfs,
# KEEP (a file of one of them, or -) copied back first.
dirs=$1 keep=$2
shift 2
set -e
stash=$(mktemp -d)
for d in $dirs; do [ "$keep" != - ] && [ -e "$d/$keep" ] && cp -L "$d/$keep" "$stash/"; done
for d in $dirs; do mount -t tmpfs none "$d"; done
for d in $dirs; do [ "$keep" != - ] && [ -e "$stash/$keep" ] && cp "$stash/$keep" "$d/"; done
rm -rf "$stash"
exec "$@"
EOF
chmod +x "$tmp/hide"
hide=(unshare --mount "$tmp/hide" "$dirs")

if [ -n "$reason" ]; then
	for d in "--backend=nccl: nccl-missing naming libnccl.so.2" "--backend=auto: sockets" \
		"only NCCL missing" "--json: nccl-missing"; do
		tap_skip "libraries unfindable: $d" "$reason"
	done
else
	out=$(one "${hide[@]}" - -- --backend=nccl)
	libdir=$(sed -n 's/^#define DE_NCCL_LIBDIR "\(.*\)"$/\1/p' "$build/config.h" 2>/dev/null)
	if [[ $out == "rc=1"$'\n'"[rank 0/1] node="*" FAIL nccl-missing: --backend=nccl: neither NCCL libnccl.so.2 nor the CUDA runtime libcudart.so."*" (CUDA "*", as the headers this distenv-check was built with) loads here: tried libnccl.so.2 (cannot open shared object file"*" -- the NCCL backend loads libnccl.so.2 and CUDA's runtime when asked for: "* ]] &&
		[[ $out == *", ${libdir:-?}/libnccl.so.2 (cannot open"* ]]; then
		tap_ok "libraries unfindable: --backend=nccl fails with nccl-missing naming libnccl.so.2, libcudart, each place tried (also ${libdir:-?}) and why (exit 1)"
	else
		tap_fail "libraries unfindable: --backend=nccl: nccl-missing" "$out"
	fi
	out=$(one "${hide[@]}" - -- --backend=auto --verbose)
	tap_like "$out" $'^rc=0\n.*backend=socket allreduce=1 \\(expected 1\\) OK.*PASS: 1 rank .*--stderr--\ndistenv-check: rank 0: backend socket \\(auto\\), device cpu; not nccl: --backend=nccl: neither NCCL libnccl.so.2 ' \
		"libraries unfindable: --backend=auto passes on sockets; --verbose says NCCL did not load"
	if [ -n "$cudart" ]; then
		out=$(one "${hide[@]}" "$cudart" -- --backend=nccl)
		msg=${out%% -- *}
		if [[ $msg == "rc=1"$'\n'*"FAIL nccl-missing: --backend=nccl: NCCL libnccl.so.2 does not load here: tried libnccl.so.2 ("* ]] &&
			[[ $msg != *libcudart* ]]; then
			tap_ok "only NCCL unfindable ($cudart kept): nccl-missing names libnccl.so.2 alone"
		else
			tap_fail "only NCCL unfindable ($cudart kept)" "$out"
		fi
	else
		tap_skip "libraries unfindable: only NCCL missing" "no libcudart here to keep"
	fi
	out=$(one "${hide[@]}" - -- --backend=nccl --json)
	tap_like "$out" $'^rc=1\n\\{"rank":0,"world":1,.*"ok":false,"diagnosis":"nccl-missing","message":"--backend=nccl: neither NCCL libnccl.so.2 ' \
		"libraries unfindable: --json says diagnosis nccl-missing"
fi

# --- the stand-in (tests/nccl-standin) -----------------------------------------
# make check builds it; test-nccl-standin.sh runs it on the cluster. Here:
# it exports exactly what distenv-check loads (nccl_lib.h's lists), and
# one rank passes through it, -v naming its files.
si=$build/tests/nccl-standin
if [ ! -e "$si/libnccl.so.2" ]; then
	tap_skip "stand-in exports exactly nccl_lib.h's entry points" "stand-in not built at $si"
	tap_skip "stand-in: one rank passes, -v names it" "stand-in not built at $si"
elif ! command -v nm >/dev/null; then
	tap_skip "stand-in exports exactly nccl_lib.h's entry points" "nm not installed (binutils)"
else
	want=$(grep -oE 'X\((cuda|nccl)[A-Za-z]+\)' "$here/../../src/check/nccl_lib.h" | tr -d 'X()' | sort)
	got=$(nm -D --defined-only "$si/libnccl.so.2" "$si"/libcudart.so.[0-9]* |
		awk '$2 == "T" { print $3 }' | grep -v '^distenv_standin_' | sort)
	tap_is "$got" "$want" "stand-in exports exactly nccl_lib.h's entry points (besides its own distenv_standin_*)"
	one_env=(LD_LIBRARY_PATH="$si")
	out=$(one -- --backend=nccl -v)
	one_env=()
	re='^rc=0'$'\n''.*backend=nccl allreduce=1 \(expected 1\) OK.*--stderr--'$'\n''distenv-check: rank 0: backend nccl, device cuda:0, NCCL [0-9.]+ \('
	re+="$si/libnccl\\.so\\.2\\), CUDA runtime $si/libcudart\\.so\\.[0-9]+\$"
	tap_like "$out" "$re" \
		"stand-in on LD_LIBRARY_PATH: one rank passes on NCCL, -v names the stand-in's files"
fi

# --- the verbose line on a named backend -------------------------------------------
out=$(one -- --backend=socket -v)
tap_like "$out" $'^rc=0\n.*--stderr--\ndistenv-check: rank 0: backend socket, device cpu$' \
	"--backend=socket -v: names the backend and device, no auto reason"
tap_done
