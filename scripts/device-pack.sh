#!/bin/sh
# Packs what the device machine (a GPU host without Node) needs to run ucx-ts from its build:
# this machine's node binary (xz), dist/, bin/, package.json and koffi, into .device/ (ignored,
# carried with the device tool's `carry: [".device"]`, about 42 MB of its 64 MiB limit).
#   sh scripts/device-pack.sh [node|bun|deno]
# With bun or deno it packs that runtime's binary instead of node's, into .device-bun/ or
# .device-deno/ (39 and 31 MB of xz: each runtime is its own device call, as two would not fit
# the 64 MiB carry), for the GPU tests under that runtime (`run-gpu.sh tests`).
# On the device:   sh .device/run.sh <ucx-ts arguments>
#                  sh .device/run-gpu.sh tests    (GPU tests, issue 25)
#                  sh .device/run-gpu.sh bench    (GPU benchmark)
# (the device tool allows 10 minutes a command: tests and benchmark are one call each)
#   e.g.           sh .device/run.sh perf --mode thread --tests tag_lat,tag_bw --sizes 8,1048576 --compare --error-handling none
set -eu
cd "$(dirname "$0")/.."
rt="${1:-node}"
case "$rt" in
  node) dir=.device; binary="$(command -v node)" ;;
  bun) dir=.device-bun; binary="$(readlink -f node_modules/.bin/bun)" ;;
  deno) dir=.device-deno; binary="$(readlink -f node_modules/.bin/deno)" ;;
  *) echo "usage: sh scripts/device-pack.sh [node|bun|deno]" >&2; exit 2 ;;
esac
npm run build >/dev/null
rm -rf "$dir"
mkdir -p "$dir/pkg/node_modules"
xz -T0 -c "$binary" > "$dir/$rt.xz"
cp -r dist bin package.json "$dir/pkg/"
if [ "$rt" = node ]; then
  cp -r node_modules/koffi "$dir/pkg/node_modules/"
  # koffi's native module lives in a package of its own per platform (x64 glibc: the device's).
  mkdir -p "$dir/pkg/node_modules/@koromix"
  cp -r node_modules/@koromix/koffi-linux-x64 "$dir/pkg/node_modules/@koromix/"
fi
# The runtime's binary is unpacked once per machine; $js is how a plain .mjs file is run with it.
unpack='here="$(cd "$(dirname "$0")" && pwd)"
for rt in node bun deno; do [ -f "$here/$rt.xz" ] && break; done
bin="${TMPDIR:-/tmp}/ucx-ts-$rt"
[ -x "$bin" ] || { xz -dc "$here/$rt.xz" > "$bin.part" && chmod +x "$bin.part" && mv "$bin.part" "$bin"; }
if [ "$rt" = deno ]; then js="$bin run -A"; else js="$bin"; fi'
{
  printf '%s\n' '#!/bin/sh' '# Unpacks the runtime (once) and runs the ucx-ts CLI from the carried build.' 'set -eu' "$unpack"
  printf '%s\n' 'cd "$here/pkg"' 'exec $js bin/ucx-ts.mjs "$@"'
} > "$dir/run.sh"
chmod +x "$dir/run.sh"

# GPU memory (issue 25): the GPU tests and the GPU benchmark, runnable with the bare node binary.
# The tests are bundled into plain JavaScript (esbuild, koffi left external), with the progress
# thread's entry beside them (thread mode loads it by file); the stand-in's C source goes along
# (compiled there if the device has a C compiler, else its variant skips and says why).
mkdir -p "$dir/pkg/test/gpu" "$dir/pkg/test/cuda" "$dir/pkg/bench" "$dir/pkg/bench/results"
for f in test/cuda/gpu.test.ts test/helpers/gpu-peer.ts test/helpers/gpu-api.ts test/helpers/gpu-pipeline.ts src/core/engine/engine-thread.ts; do
  out="$dir/pkg/test/gpu/$(basename "$f" .ts).$( [ "$(basename "$f")" = engine-thread.ts ] && echo js || echo mjs)"
  node_modules/.bin/esbuild "$f" --bundle --platform=node --format=esm --target=node20 --external:koffi --external:bun:ffi --log-level=warning --outfile="$out" \
    --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
done
# The collectives benchmark (issue 23) and its rank, and the channel's round trip against the plain
# one (bench/ucg-rtt.ts), bundled likewise (the engine's thread entry
# beside them), with Open MPI's side: bench/mpi/coll-lat.c built here too, for a device with
# mpirun but no mpicc (UCG_BENCH_MPI_BINARY; Open MPI 4.x keeps libmpi.so.40's ABI).
for f in bench/ucg.ts bench/ucg-rank.ts bench/ucg-rtt.ts bench/ucg-rtt-rank.ts; do
  node_modules/.bin/esbuild "$f" --bundle --platform=node --format=esm --target=node20 --external:koffi --external:bun:ffi --log-level=warning --outfile="$dir/pkg/bench/$(basename "$f" .ts).mjs" \
    --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
done
cp "$dir/pkg/test/gpu/engine-thread.js" "$dir/pkg/bench/"
# The soak (issue 26; `run-gpu.sh soak`: GPU traffic against the real libcudart under faults),
# bundled likewise: main, its peer and its collectives rank side by side (scripts/soak/files.ts
# finds the .mjs peers beside a .mjs main).
mkdir -p "$dir/pkg/scripts/soak"
for f in scripts/soak/main.ts scripts/soak/peer.ts scripts/soak/ucg-rank.ts scripts/soak/cuda-cycles.ts; do
  node_modules/.bin/esbuild "$f" --bundle --platform=node --format=esm --target=node20 --external:koffi --external:bun:ffi --log-level=warning --outfile="$dir/pkg/scripts/soak/$(basename "$f" .ts).mjs" \
    --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
done
cp "$dir/pkg/test/gpu/engine-thread.js" "$dir/pkg/scripts/soak/"
mkdir -p "$dir/pkg/bench/mpi" "$dir/pkg/scripts"
cp bench/mpi/coll-lat.c "$dir/pkg/bench/mpi/"
cp scripts/setup-mpi "$dir/pkg/scripts/"
if command -v mpicc >/dev/null 2>&1; then mpicc -O2 -o "$dir/coll-lat" bench/mpi/coll-lat.c; fi
cp test/cuda/standin-cudart.c "$dir/pkg/test/cuda/"
cp bench/run-gpu.mjs bench/gpu-peer.mjs "$dir/pkg/bench/"
# A fallback UCX: Debian's 1.13 libraries from this machine (about 3 MB), used on the device only
# when its own loader has no libucp (the device image is expected to carry Ubuntu's 1.16).
mkdir -p "$dir/ucx-fallback"
for lib in libucp.so.0 libuct.so.0 libucs.so.0 libucm.so.0 libnuma.so.1; do
  f="$( (ldconfig -p 2>/dev/null | grep -o "/[^ ]*/$lib\$" | head -1) || true)"
  [ -n "$f" ] && cp -L "$f" "$dir/ucx-fallback/"
done
[ -d /usr/lib/x86_64-linux-gnu/ucx ] && cp -rL /usr/lib/x86_64-linux-gnu/ucx "$dir/ucx-fallback/"
{
printf '%s\n' '#!/bin/sh'
cat <<'RUN'
# On the device machine: what the machine has (env.log), the GPU tests (the stand-in at the usual
# sizes, to show the bundle works there; the real libcudart from 1 B to 1 GiB), the GPU benchmark
# against the real libcudart, and a short point-to-point perf run against ucx_perftest.
# Logs go to $OUT when it is set (the device tool brings $OUT back), else /tmp.
#   sh .device/run-gpu.sh            all four
#   sh .device/run-gpu.sh tests      environment and tests only
#   sh .device/run-gpu.sh bench      environment and benchmark only
#   sh .device/run-gpu.sh p2p        environment and the perf run only
#   sh .device/run-gpu.sh ucg        environment and the collectives benchmark against Open MPI
#   sh .device/run-gpu.sh soak       environment and the soak with GPU traffic (real libcudart)
# Each step has its own time limit (GPU_TESTS_TIMEOUT, GPU_BENCH_TIMEOUT, P2P_TIMEOUT, seconds),
# so that one hang cannot spend the whole device call. The exit status is non-zero when a step
# failed. Output is written to the log first and then shown: a pipe into tee would report tee's
# status and hide failures.
# The runtime is whichever was packed (node, bun or deno: scripts/device-pack.sh [runtime]).
set -u
RUN
printf '%s\n' "$unpack"
cat <<'RUN'
cd "$here/pkg"
what="${1:-all}"
logs="${OUT:-/tmp}"
status=0
if ! ldconfig -p 2>/dev/null | grep -q 'libucp\.so\.0 '; then
  echo "no libucp on the loader path: using the carried UCX ($here/ucx-fallback)"
  export UCX_TS_LIBDIR="$here/ucx-fallback" LD_LIBRARY_PATH="$here/ucx-fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
{
  date -u; uname -r; nproc; "$bin" --version
  nvidia-smi -L 2>&1 || echo "nvidia-smi: not found"
  ls -l /dev/nvidia* 2>&1 | head -5
  ldconfig -p 2>/dev/null | grep -E 'libuc[pst]\.so|libcudart' || echo "ldconfig: no libucp/libcudart"
  command -v ucx_info >/dev/null && { ucx_info -v; ucx_info -d | grep -iE 'memory domain|transport|memory types' | sort | uniq -c | head -40; } || echo "ucx_info: not found"
  command -v cc gcc ucx_perftest 2>&1
  $js "$here/pkg/bin/ucx-ts.mjs" info 2>&1 | head -40
} > "$logs/env.log" 2>&1
cat "$logs/env.log"
run() { # run <log name> <seconds> <command...>
  name="$1"
  limit="$2"
  shift 2
  timeout -k 5 "$limit" "$@" > "$logs/$name.log" 2>&1 || { echo "FAILED ($?, 124 = over ${limit} s): $*" >> "$logs/$name.log"; status=1; }
  cat "$logs/$name.log"
}
if [ "$what" = all ] || [ "$what" = tests ]; then
  run gpu-tests-standin 120 env UCX_TS_GPU_BUNDLE=1 UCX_TS_GPU_ONLY=stand-in $js test/gpu/gpu.test.mjs
  run gpu-tests-real "${GPU_TESTS_TIMEOUT:-300}" env UCX_TS_GPU_BUNDLE=1 UCX_TS_GPU_ONLY=real UCX_TS_GPU_FULL=1 $js test/gpu/gpu.test.mjs
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  run gpu-bench "${GPU_BENCH_TIMEOUT:-180}" $js bench/run-gpu.mjs ${GPU_BENCH_ARGS:-}
  if [ -n "${OUT:-}" ]; then cp bench/results/gpu-*.json "$OUT/" 2>/dev/null || true; fi
fi
if [ "$what" = ucg ]; then
  # Collectives against Open MPI, same run (not in "all": minutes). UCG_ARGS picks ranks/sizes.
  command -v mpicc >/dev/null 2>&1 || export UCG_BENCH_MPI_BINARY="$here/coll-lat"
  run ucg-bench "${UCG_TIMEOUT:-400}" $js bench/ucg.mjs --compare-mpi ${UCG_ARGS:---ranks 2,4,8 --sizes 8,1048576}
  if [ -n "${OUT:-}" ]; then cp bench/results/ucg-*.json "$OUT/" 2>/dev/null || true; fi
fi
if [ "$what" = soak ]; then
  # GPU traffic under the soak's faults against the real libcudart (not in "all": minutes).
  # As `npm run soak`: glibc's per-thread caches off, so malloc in use counts live blocks only (allocator.ts).
  run soak "${SOAK_TIMEOUT:-300}" env GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.tcache_count=0}" $js --expose-gc --min-semi-space-size=1 --max-semi-space-size=1 scripts/soak/main.mjs ${SOAK_ARGS:---minutes 2 --gpu real}
fi
if [ "$what" = all ] || [ "$what" = p2p ]; then
  run p2p-perf "${P2P_TIMEOUT:-90}" $js bin/ucx-ts.mjs perf --tests tag_lat,tag_bw,am_bw,put_bw --sizes 8,65536,1048576 --mode polling --error-handling none --compare
fi
exit $status
RUN
} > "$dir/run-gpu.sh"
chmod +x "$dir/run-gpu.sh"
du -sh "$dir"
cat <<'NEXT'
Packed. On the device machine, one call of the device tool (node: tests, bench and p2p fit one
call of a few minutes; bun and deno: tests), carrying the folder:
  run(command: "sh DIR/run-gpu.sh", carry: ["DIR"])        (DIR: .device, .device-bun, .device-deno)
Logs and bench/results/gpu-*.json come back under $OUT.
NEXT
