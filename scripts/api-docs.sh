#!/bin/sh
# The API reference, generated from the JSDoc of the public entry points by Deno's documentation
# generator (the deno binary is a dev dependency: no other tool). Output: docs/api/index.html,
# or the folder given as $1 (npm test builds it into a temporary folder to check that it builds).
set -eu
cd "$(dirname "$0")/.."
out="${1:-docs/api}"
rm -rf "$out"
node_modules/deno/deno doc --quiet --html --name=ucx-ts --output="$out" src/index.ts
echo "API reference: $out/index.html"
