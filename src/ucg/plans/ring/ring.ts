/**
 * The ring: each member sends to its right neighbour and receives from its left one, n - 1 times.
 * Bandwidth-optimal for large vectors (each member sends 2 (n-1)/n of the vector in allreduce).
 * Blocks are the vector split into n nearly equal parts (plan_base.ts blockCount/blockOffset).
 */
import { mod } from "../base/plan_base.ts";

export function ringNeighbours(rank: number, size: number): { left: number; right: number } {
  return { left: mod(rank - 1, size), right: mod(rank + 1, size) };
}
