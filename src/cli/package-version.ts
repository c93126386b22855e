/**
 * The package's version, for `ucx-ts --version`. A constant rather than a read of package.json
 * because the JSR package ships no package.json; test/cli/args.test.ts keeps it equal to the
 * versions in package.json and deno.json.
 */
export const PACKAGE_VERSION = "0.1.0";
