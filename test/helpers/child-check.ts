/**
 * One named check in a child test process: runs `body` and prints one JSON line
 * (`{"check", "ok", "detail"}`) that the parent test reads (test/cuda/gpu.test.ts). A check passes
 * when `body` returns true or nothing; any other value or a throw fails it with the detail.
 */
import process from "node:process";

export async function check(name: string, body: () => unknown): Promise<void> {
  let detail = "";
  try {
    const r = await body();
    if (r !== true && r !== undefined) detail = `got ${JSON.stringify(r)}`;
  } catch (e) {
    detail = `threw ${(e as Error).stack ?? e}`;
  }
  process.stdout.write(JSON.stringify({ check: name, ok: detail === "", detail }) + "\n");
}
