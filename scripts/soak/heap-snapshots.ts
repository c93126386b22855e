/**
 * `npm run soak -- --heap-snapshots DIR` (Node): V8 heap snapshots of the coordinator at the first
 * at-rest reading, at the first one from 90 % of the run on (both with the peers connected, the
 * lanes paused, nothing in flight) and once every connection is closed, for
 * `node --import tsx scripts/soak/heap-diff.ts DIR/first-rest.heapsnapshot DIR/late-rest.heapsnapshot`:
 * which objects the at-rest JS heap line's growth is, and who holds them. Writing one takes
 * seconds and allocates (the readings after it carry some of that), so a run that writes them is
 * for finding what grows, not for the figures.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import v8 from "node:v8";
import { runtime } from "../../src/index.ts";

/** The DIR of `--heap-snapshots DIR`, if given; throws where it cannot be honoured. */
export function heapSnapshotsOption(argv: readonly string[]): string | undefined {
  const i = argv.indexOf("--heap-snapshots");
  if (i < 0) return undefined;
  const dir = argv[i + 1];
  if (dir === undefined || dir.startsWith("--")) throw new Error("--heap-snapshots needs a directory");
  // Deno's and Bun's node:v8 write other formats, or none; heap-diff.ts reads V8's as Node writes it.
  if (runtime !== "node") throw new Error(`--heap-snapshots needs Node (this is ${runtime})`);
  return dir;
}

export class HeapSnapshots {
  /** Each label once: the first reading that asks for it. */
  readonly written = new Map<string, string>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  write(label: string): void {
    if (this.written.has(label)) return;
    const file = v8.writeHeapSnapshot(join(this.dir, `${label}.heapsnapshot`));
    this.written.set(label, file);
    process.stderr.write(`soak: heap snapshot ${file}\n`);
  }
}
