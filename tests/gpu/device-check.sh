#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The NCCL path on a machine with a GPU, as one prepared TAP script (well
# under 8 minutes): builds the working tree in a build directory of its
# own, then runs distenv-check's NCCL backend on one rank (init, allreduce,
# exact verification, the bench table 8 B..1 GiB), two ranks on one GPU
# (shared-gpu, not an NCCL error dump), LOCAL_RANK=1 with one visible GPU
# (gpu-selection), --backend=auto (NCCL when a GPU is visible, sockets when
# none is), distenv-simulate --nodes 1, the NCCL pair sweep on 2 pseudo-nodes
# (2 GPUs or more), and PyTorch's NCCL path when a CUDA
# torch is there. The TAP log, the build log and the bench table go to $OUT
# (a temporary directory when unset).
#
# Usage:
#   tests/gpu/device-check.sh                 build here, then check
#   tests/gpu/device-check.sh --build-dir DIR check DIR's existing build
#   tests/gpu/device-check.sh --prepare       (on a build machine) write
#       .gpu-deps/: the generated autotools files, Slurm's and libsodium's
#       headers and libsodium, for a GPU machine that has none of them
#       (carry .gpu-deps with the working tree)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
deps=$root/.gpu-deps

# --- --prepare: what a bare GPU machine lacks, from this one -------------------
if [ "${1:-}" = --prepare ]; then
	set -e
	cd "$root"
	for f in configure Makefile.in config.h.in aclocal.m4 build-aux/ltmain.sh build-aux/tap-driver.sh; do
		[ -e "$f" ] || { echo "device-check: --prepare: $f missing: run autoreconf -fi first" >&2; exit 2; }
	done
	for f in configure.ac Makefile.am m4/*.m4; do
		[ configure -nt "$f" ] || [ Makefile.in -nt "$f" ] ||
			{ echo "device-check: --prepare: $f is newer than configure: run autoreconf -fi first" >&2; exit 2; }
	done
	rm -rf "$deps"
	mkdir -p "$deps/include" "$deps/lib" "$deps/slurm/include"
	tar czf "$deps/autotools.tar.gz" configure Makefile.in config.h.in aclocal.m4 build-aux m4/libtool.m4 m4/lt*.m4
	spank=$(echo '#include <slurm/spank.h>' | cpp -H -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -1)
	cp -r "$(dirname "$spank")" "$deps/slurm/include/"
	sodium=$(echo '#include <sodium.h>' | cpp -H -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -1)
	cp -r "$sodium" "$(dirname "$sodium")/sodium" "$deps/include/"
	lib=$(gcc -print-file-name=libsodium.so)
	cp -L "$lib" "$deps/lib/libsodium.so"
	cp -L "$(dirname "$lib")"/libsodium.so.[0-9]* "$deps/lib/" 2>/dev/null || true
	du -sh "$deps"
	exit 0
fi

build=""
if [ "${1:-}" = --build-dir ]; then
	build=$(cd "${2:?--build-dir needs a directory}" && pwd)
fi
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
# Everything on stdout is the TAP log, kept under $OUT as well.
exec > >(tee "$OUT/device-check.tap") 2>&1
# shellcheck source=tests/lib/tap.sh
. "$root/tests/lib/tap.sh"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "# $(date -u +%FT%TZ) on $(hostname): $( (nvidia-smi -L || echo "no nvidia-smi") 2>&1 | head -4 | tr '\n' ' ')"

# --- build ------------------------------------------------------------------------
# NCCL's headers: CUDA's include dir, else the pip wheel PyTorch uses.
nccl_prefix() {
	local d
	for d in /usr/local/cuda /usr; do [ -e "$d/include/nccl.h" ] && { echo "$d"; return; }; done
	python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null
}
if [ -z "$build" ]; then
	t0=$SECONDS
	src=$work/src
	build=$work/build
	# The sources alone, as the device tool copies them: a configured
	# checkout's objects would shadow the build's (VPATH).
	mkdir -p "$src"
	if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -a -t "$src")
	else
		cp -a "$root/." "$src"
	fi
	rm -rf "$src/.gpu-deps"
	(
		set -e
		cd "$src"
		if [ ! -x configure ]; then
			if command -v autoreconf >/dev/null; then
				autoreconf -fi
			elif [ -f "$deps/autotools.tar.gz" ]; then
				tar xzf "$deps/autotools.tar.gz"
			else
				echo "no configure, no autoreconf, no $deps/autotools.tar.gz (tests/gpu/device-check.sh --prepare)"
				exit 1
			fi
		fi
		args=(--disable-werror --without-munge --with-slurm-plugindir="$work/plugins")
		[ -f /usr/include/slurm/spank.h ] || args+=(--with-slurm="$deps/slurm")
		if [ ! -f /usr/include/sodium.h ] && [ -d "$deps/include" ]; then
			args+=(CPPFLAGS="-I$deps/include" LDFLAGS="-L$deps/lib -Wl,-rpath,$deps/lib")
		fi
		cuda=/usr/local/cuda
		[ -e "$cuda/include/cuda_runtime_api.h" ] || ! command -v nvcc >/dev/null ||
			cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
		nccl=$(nccl_prefix)
		args+=(--with-cuda="$cuda" ${nccl:+--with-nccl="$nccl"})
		mkdir -p "$build"
		cd "$build"
		echo "configure ${args[*]}"
		"$src/configure" "${args[@]}"
		make -j"$(nproc)"
	) >"$OUT/build.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		tap_fail "build from the working tree (configure, make)" "exit $rc" "$(tail -30 "$OUT/build.log")"
		tap_done
		exit 1
	fi
	tap_ok "build from the working tree in $build ($((SECONDS - t0)) s)"
	summary=$(sed -n 's/^ *NCCL backend: *//p' "$OUT/build.log" | tail -1)
	tap_like "$summary" '^yes ' "configure: NCCL backend compiled ($summary)"
fi
CHECK=$build/src/distenv-check
SIM=$root/scripts/distenv-simulate
[ -x "$CHECK" ] || { tap_fail "distenv-check built at $CHECK"; tap_done; exit 1; }
needed=$(readelf -d "$CHECK" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if [ -z "$needed" ]; then
	tap_skip "no libnccl/libcudart in DT_NEEDED" "readelf not installed"
elif [[ $needed == *libnccl* || $needed == *libcudart* ]]; then
	tap_fail "distenv-check links libnccl/libcudart: $needed"
else
	tap_ok "distenv-check's DT_NEEDED has no libnccl/libcudart: $needed"
fi

# free_port: a port nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# ranks N PORT [VAR=VALUE...] -- ARGS...: N ranks of distenv-check on
# 127.0.0.1 (only the torchrun variables, plus the VARs), each one's stdout
# and stderr in $work/r.I, their exit statuses space separated in $work/rc.
ranks() {
	local n=$1 port=$2 vars=() r
	shift 2
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	pids=()
	for ((r = 0; r < n; r++)); do
		env -i PATH="$PATH" DISTENV_SECRET="$secret" RANK=$r WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 \
			MASTER_PORT="$port" "${vars[@]}" timeout 180 "$CHECK" --timeout=60 "$@" >"$work/r.$r" 2>&1 &
		pids+=($!)
	done
	: >"$work/rc"
	for r in "${pids[@]}"; do
		wait "$r"
		printf '%s ' "$?" >>"$work/rc"
	done
	pids=()
}
allout() { cat "$work"/r.* 2>/dev/null; }

# --- one rank --------------------------------------------------------------------
ranks 1 "$(free_port)" -- --backend=nccl -v
out=$(allout)
tap_like "$(cat "$work/rc")$out" $'^0 .*\\[rank 0/1\\] node=[^ ]+ local_rank=0/1 device=cuda:0 backend=nccl allreduce=1 \\(expected 1\\) OK' \
	"--backend=nccl, 1 rank: NCCL init, allreduce of 262147 float32, verified exactly"
tap_like "$out" 'distenv-check: rank 0: backend nccl, device cuda:0, NCCL [0-9]+\.[0-9]+\.[0-9]+ \(/[^)]*libnccl\.so\.2\), CUDA runtime /[^ ]*libcudart\.so' \
	"-v: NCCL's version and the library files it loaded at run time"
grep -h 'backend nccl' "$work"/r.* | sed 's/^/# /'
for t in int32 float64 int64; do
	ranks 1 "$(free_port)" -- --backend=nccl --dtype=$t --count=1000003 --quiet
	tap_like "$(cat "$work/rc")$(allout)" $'^0 .*PASS: 1 rank .*allreduce of 1000003 '"$t"' verified on every rank' \
		"--backend=nccl --dtype=$t, 1000003 elements: verified"
done

# The bench table, nccl-tests' sizes 8 B .. 1 GiB (28 rows).
t0=$SECONDS
ranks 1 "$(free_port)" -- --backend=nccl --bench -b 8 -e 1G -f 2 -n 5 -w 1 --timeout=120
cp "$work/r.0" "$OUT/bench-nccl-1rank.txt"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' "$work/r.0" || true)
if [ "$(cat "$work/rc")" = "0 " ] && [ "$rows" = 28 ] && grep -q '^ *1073741824 ' "$work/r.0"; then
	tap_ok "--bench -b 8 -e 1G: 28 sizes, 8 B to 1 GiB, no wrong values ($((SECONDS - t0)) s; table in bench-nccl-1rank.txt)"
else
	tap_fail "--bench -b 8 -e 1G on NCCL (rc $(cat "$work/rc"), $rows rows)" "$(tail -40 "$work/r.0")"
fi
sed 's/^/# /' "$work/r.0" | tail -34

# --- two ranks on one GPU ----------------------------------------------------------
# No LOCAL_RANK: each rank takes device 0, the one GPU; NCCL refuses the
# duplicate. distenv-check names it: shared-gpu, on every rank.
ranks 2 "$(free_port)" CUDA_VISIBLE_DEVICES=0 -- --backend=nccl
out=$(allout)
if [[ $(cat "$work/rc") == "1 1 " ]] && [[ $out == *"[rank 0/2] node="*" FAIL shared-gpu: ranks 0 and 1 on "*" both use the GPU at "* ]] &&
	grep -q 'FAIL .*shared-gpu' "$work/r.1" && [[ $out != *"NCCL WARN"* ]]; then
	tap_ok "two ranks on one GPU: shared-gpu naming both ranks and the GPU, on every rank (exit 1), no NCCL dump"
else
	tap_fail "two ranks on one GPU: shared-gpu (rc $(cat "$work/rc"))" "$out"
fi

# --- LOCAL_RANK=1 with one visible GPU -----------------------------------------------
ranks 1 "$(free_port)" CUDA_VISIBLE_DEVICES=0 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 -- --backend=nccl
tap_like "$(cat "$work/rc")$(allout)" $'^1 \\[rank 0/1\\] node=[^ ]+ FAIL gpu-selection: LOCAL_RANK=1 but only 1 visible GPU \\(CUDA_VISIBLE_DEVICES=0\\): one GPU per task' \
	"LOCAL_RANK=1, one visible GPU: gpu-selection (use device 0, not cuda:LOCAL_RANK)"

# --- auto ------------------------------------------------------------------------------
ranks 1 "$(free_port)" -- --backend=auto -v
out=$(allout)
tap_like "$(cat "$work/rc")$out" $'^0 .*device=cuda:0 backend=nccl allreduce=1 \\(expected 1\\) OK' \
	"--backend=auto with a GPU visible: NCCL"
tap_like "$out" 'rank 0: backend nccl \(auto\), device cuda:0' "-v: auto picked nccl"
ranks 1 "$(free_port)" CUDA_VISIBLE_DEVICES= -- --backend=auto -v
out=$(allout)
tap_like "$(cat "$work/rc")$out" $'^0 .*device=cpu backend=socket .*OK' "--backend=auto, CUDA_VISIBLE_DEVICES=\"\": sockets"
tap_like "$out" 'backend socket \(auto\), device cpu; not nccl: (no CUDA device visible|cudaGetDeviceCount: )' \
	"-v: why not NCCL (no device visible)"

# --- distenv-simulate ----------------------------------------------------------------
out=$(cd "$work" && timeout 180 "$SIM" --nodes 1 --timeout 150 -- "$CHECK" --timeout=60 2>&1) && rc=0 || rc=$?
tap_like "$rc $out" $'^0 .*\\[node0/rank0\\] \\[rank 0/1\\] node=[^ ]+ local_rank=0/1 device=cuda:0 backend=nccl allreduce=1 \\(expected 1\\) OK' \
	"distenv-simulate --nodes 1 -- distenv-check: the pseudo-node's GPU, NCCL"

# --- the NCCL pair sweep ------------------------------------------------------------------
# Two pseudo-nodes, one GPU each: their pair over NCCL as well as TCP. A
# pair needs two GPUs (NCCL refuses two ranks of a communicator on one).
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${ngpu:-0}" -ge 2 ]; then
	out=$(cd "$work" && timeout 180 "$SIM" --nodes 2 --timeout 150 -- "$CHECK" --pairs --timeout=60 2>&1) && rc=0 || rc=$?
	tap_like "$rc $out" $'^0 .*\nNCCL pairs: 1 of 1 measured \\(a 2-rank allreduce of [0-9]+ bytes each\\), 0 failed, median [0-9.]+ GB/s\n' \
		"--pairs on 2 pseudo-nodes of one GPU each: the NCCL pair measured and verified"
	grep -h '^NCCL pairs' <<<"$out" | sed 's/^/# /'
else
	tap_skip "--pairs over NCCL on 2 pseudo-nodes" "${ngpu:-0} GPU here: a pair needs two (NCCL refuses two ranks on one GPU)"
fi

# --- PyTorch --------------------------------------------------------------------------
if torch=$(python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA in torch " + torch.__version__; print(torch.__version__, torch.cuda.nccl.version())' 2>&1); then
	out=$(cd "$work" && timeout 240 "$SIM" --nodes 1 --timeout 200 -- python3 "$root/scripts/torch-allreduce-check.py" 2>&1) && rc=0 || rc=$?
	tap_like "$rc $out" $'^0 .*device=cuda:0 backend=nccl allreduce=1 \\(expected 1\\) OK' \
		"PyTorch $torch: init_process_group(nccl) under distenv-simulate --nodes 1, all_reduce verified"
else
	tap_skip "PyTorch's NCCL path" "no CUDA torch here: ${torch##*$'\n'}"
fi
tap_done
