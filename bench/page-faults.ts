/**
 * Minor page faults of this process, for the benchmark servers' UCX_TS_BENCH_FAULTS=<file>: each
 * receive round appends {label, messages, minflt} as one JSON line, so a row can be checked for
 * first touches of fresh memory inside its timed part (on this VM, a PVM guest, the first write
 * into a page, by the process or by the kernel's cma copy, costs ~15-25 us). Off (no reads of
 * /proc) unless the variable is set. Linux only: field 10 of /proc/self/stat.
 */
import { appendFileSync, readFileSync } from "node:fs";
import process from "node:process";

const file = process.env.UCX_TS_BENCH_FAULTS;

/** This process's minor faults so far (0 where /proc is not there). */
export function minorFaults(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7]);
  } catch {
    return 0;
  }
}

/** A round counter: `start()` before the round, `end(label, messages)` after; no-op when off. */
export function faultLog() {
  let before = 0;
  return {
    start: () => void (file && (before = minorFaults())),
    end: (label: string, messages: number) => {
      if (file) appendFileSync(file, JSON.stringify({ label, messages, minflt: minorFaults() - before }) + "\n");
    },
  };
}
