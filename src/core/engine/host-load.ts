/**
 * Whether this host runs more than its cores can serve: the 1-minute load average above 1.5x
 * the cores, sampled at most once a second (reading it costs a file read on Linux). Spin
 * policies use it to decide how long a spin may grow: on a quiet host a longer spin keeps two
 * peers awake and their round trips short; on an oversubscribed one it takes the core the peer
 * needs (hybrid's 5 ms spin against 1 ms, 2026-11-26, load 6-24 on 2 cores: p99 2-7x worse in 4
 * of 4 alternated runs). The margin above 1.0x lets two processes that spin on their own cores
 * (a load of about one each) still count as quiet.
 */
import { availableParallelism, cpus, loadavg } from "node:os";

const BUSY_LOAD_PER_CORE = 1.5;
const SAMPLE_MS = 1000;

const cores = typeof availableParallelism === "function" ? availableParallelism() : cpus().length;
let sampledAt = -Infinity;
let busy = false;

export function hostOversubscribed(now: number = performance.now()): boolean {
  if (now - sampledAt >= SAMPLE_MS) {
    sampledAt = now;
    busy = (loadavg()[0] ?? 0) > BUSY_LOAD_PER_CORE * Math.max(1, cores);
  }
  return busy;
}
