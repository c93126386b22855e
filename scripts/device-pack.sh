#!/bin/sh
# Packs what the device machine (a GPU host without Node) needs to run ucx-ts from its build:
# this machine's node binary (xz), dist/, bin/, package.json and koffi, into .device/ (ignored,
# carried with the device tool's `carry: [".device"]`, about 30 MB of its 64 MiB limit).
# On the device:   sh .device/run.sh <ucx-ts arguments>
#                  sh .device/run-gpu.sh tests    (GPU tests, issue 25)
#                  sh .device/run-gpu.sh bench    (GPU benchmark)
# (the device tool allows 10 minutes a command: tests and benchmark are one call each)
#   e.g.           sh .device/run.sh perf --mode thread --tests tag_lat,tag_bw --sizes 8,1048576 --compare --error-handling none
set -eu
cd "$(dirname "$0")/.."
npm run build >/dev/null
rm -rf .device
mkdir -p .device/pkg/node_modules
xz -T0 -c "$(command -v node)" > .device/node.xz
cp -r dist bin package.json .device/pkg/
cp -r node_modules/koffi .device/pkg/node_modules/
# koffi's native module lives in a package of its own per platform (x64 glibc: the device's).
mkdir -p .device/pkg/node_modules/@koromix
cp -r node_modules/@koromix/koffi-linux-x64 .device/pkg/node_modules/@koromix/
cat > .device/run.sh <<'RUN'
#!/bin/sh
# Unpacks node (once) and runs the ucx-ts CLI from the carried build.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
node="${TMPDIR:-/tmp}/ucx-ts-node"
[ -x "$node" ] || { xz -dc "$here/node.xz" > "$node.part" && chmod +x "$node.part" && mv "$node.part" "$node"; }
cd "$here/pkg"
exec "$node" bin/ucx-ts.mjs "$@"
RUN
chmod +x .device/run.sh

# GPU memory (issue 25): the GPU tests and the GPU benchmark, runnable with the bare node binary.
# The tests are bundled into plain JavaScript (esbuild, koffi left external), with the progress
# thread's entry beside them (thread mode loads it by file); the stand-in's C source goes along
# (compiled there if the device has a C compiler, else its variant skips and says why).
mkdir -p .device/pkg/test/gpu .device/pkg/test/cuda .device/pkg/bench
for f in test/cuda/gpu.test.ts test/helpers/gpu-peer.ts test/helpers/gpu-api.ts test/helpers/gpu-pipeline.ts src/core/engine/progress-thread.ts; do
  out=".device/pkg/test/gpu/$(basename "$f" .ts).$( [ "$(basename "$f")" = progress-thread.ts ] && echo js || echo mjs)"
  node_modules/.bin/esbuild "$f" --bundle --platform=node --format=esm --target=node20 --external:koffi --external:bun:ffi --log-level=warning --outfile="$out" \
    --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
done
cp test/cuda/standin-cudart.c .device/pkg/test/cuda/
cp bench/run-gpu.mjs bench/gpu-peer.mjs .device/pkg/bench/
cat > .device/run-gpu.sh <<'RUN'
#!/bin/sh
# On the device machine: the GPU tests (the stand-in at the usual sizes, to show the bundle works
# there; the real libcudart from 1 B to 1 GiB), then the GPU benchmark against the real libcudart.
# Logs go to $OUT when it is set (the device tool brings $OUT back), else /tmp.
#   sh .device/run-gpu.sh            both
#   sh .device/run-gpu.sh tests      tests only
#   sh .device/run-gpu.sh bench      benchmark only
# The exit status is non-zero when a test or the benchmark failed. Output is written to the log
# first and then shown: a pipe into tee would report tee's status and hide failures.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
node="${TMPDIR:-/tmp}/ucx-ts-node"
[ -x "$node" ] || { xz -dc "$here/node.xz" > "$node.part" && chmod +x "$node.part" && mv "$node.part" "$node"; }
cd "$here/pkg"
what="${1:-all}"
logs="${OUT:-/tmp}"
status=0
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
run() { # run <log name> <command...>
  name="$1"
  shift
  "$@" > "$logs/$name.log" 2>&1 || { echo "FAILED ($?): $*" >> "$logs/$name.log"; status=1; }
  cat "$logs/$name.log"
}
if [ "$what" != bench ]; then
  run gpu-tests-standin env UCX_TS_GPU_BUNDLE=1 UCX_TS_GPU_ONLY=stand-in "$node" test/gpu/gpu.test.mjs
  run gpu-tests-real env UCX_TS_GPU_BUNDLE=1 UCX_TS_GPU_ONLY=real UCX_TS_GPU_FULL=1 "$node" test/gpu/gpu.test.mjs
fi
if [ "$what" != tests ]; then
  run gpu-bench "$node" bench/run-gpu.mjs ${GPU_BENCH_ARGS:-}
  if [ -n "${OUT:-}" ]; then cp bench/results/gpu-*.json "$OUT/" 2>/dev/null || true; fi
fi
exit $status
RUN
chmod +x .device/run-gpu.sh
du -sh .device
cat <<'NEXT'
Packed. On the device machine, one call of the device tool each, carrying .device:
  run(command: "sh .device/run-gpu.sh tests", carry: [".device"])
  run(command: "sh .device/run-gpu.sh bench", carry: [".device"])
Logs and bench/results/gpu-*.json come back under $OUT.
NEXT
