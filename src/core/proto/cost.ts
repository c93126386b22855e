/**
 * A protocol's cost on one buffer type: the time to move a message of `size` bytes, modelled as
 * a line, time(size) = c + m * size (UCX protocols v2). `c` is in microseconds, `m` in
 * microseconds per byte (1 / bandwidth).
 */
export interface Cost {
  /** Fixed time per message (µs). */
  readonly c: number;
  /** Time per byte (µs/B): 1e-4 is 10 GB/s. */
  readonly m: number;
}

export function timeAt(cost: Cost, size: number): number {
  return cost.c + cost.m * size;
}

/** Bandwidth in MB/s (10^6 bytes per second) of a message of `size` bytes at this cost. */
export function bandwidthAt(cost: Cost, size: number): number {
  const t = timeAt(cost, size);
  return t > 0 ? size / t : Infinity;
}

export function isCost(x: unknown): x is Cost {
  const o = x as Cost;
  return typeof o === "object" && o !== null && Number.isFinite(o.c) && Number.isFinite(o.m) && o.c >= 0 && o.m >= 0;
}

/**
 * The least-squares line through measured (size, time) points, each point weighted by 1/time^2
 * (relative error): small messages' microseconds count as much as large messages' milliseconds.
 * Negative coefficients, which noise can produce, are clamped to 0 and the other refitted.
 */
export function fitCost(points: readonly { size: number; time: number }[]): Cost {
  const pts = points.filter((p) => Number.isFinite(p.time) && p.time > 0);
  if (pts.length === 0) throw new RangeError("fitCost needs at least one measured point");
  let sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const { size: x, time: y } of pts) {
    const w = 1 / (y * y);
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
  }
  const det = sw * sxx - sx * sx;
  let m = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  let c = (sy - m * sx) / sw;
  if (m < 0) {
    m = 0;
    c = sy / sw;
  }
  if (c < 0) {
    c = 0;
    m = sxx > 0 ? sxy / sxx : 0;
  }
  return { c, m };
}
