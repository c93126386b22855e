#!/bin/sh
# Packs what the device machine (a GPU host without Node) needs to run ucx-ts from its build:
# this machine's node binary (xz), dist/, bin/, package.json and koffi, into .device/ (ignored,
# carried with the device tool's `carry: [".device"]`, about 30 MB of its 64 MiB limit).
# On the device:   sh .device/run.sh <ucx-ts arguments>
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
du -sh .device
