/**
 * A least-squares line through readings with how sure it is: the soak's leak figure. Four
 * readings over 35k operations could not say whether RSS grows by less than 1 MiB per 100k
 * operations (they moved by +-3 MiB around a flat line); a slope over tens of readings, with its
 * standard error and a 95 % interval, says how far the data go, and the verdict claims "under
 * the target" only where the whole interval is under it.
 *
 * Readings taken one after another are not independent: glibc's and V8's retention makes
 * neighbours alike (positively autocorrelated residuals), and the textbook standard error then
 * claims more than the data hold. The error is widened by the usual AR(1) factor
 * sqrt((1 + r) / (1 - r)) from the residuals' lag-1 autocorrelation r (never narrowed: r < 0
 * counts as 0), and the interval uses the effective number of readings n (1 - r) / (1 + r) for
 * its degrees of freedom.
 */

export interface Fit {
  /** Readings used. */
  n: number;
  /** Slope of y per unit of x, and y at the mean x. */
  slope: number;
  intercept: number;
  /** Textbook standard error of the slope (independent residuals). */
  stdErr: number;
  /** Lag-1 autocorrelation of the residuals (readings in x order). */
  lag1: number;
  /** The standard error widened for that autocorrelation; what the interval uses. */
  adjustedStdErr: number;
  /** Degrees of freedom of the interval (from the effective number of readings). */
  dof: number;
  /** 95 % confidence interval of the slope. */
  low: number;
  high: number;
}

/** Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom. */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

/** t(0.975, dof), dof rounded down; beyond the table the Cornish-Fisher expansion (under 0.1 % off there). */
export function t975(dof: number): number {
  if (!(dof >= 1)) return Infinity;
  const d = Math.floor(dof);
  if (d <= T975.length) return T975[d - 1]!;
  const z = 1.959964;
  return z + (z ** 3 + z) / (4 * d) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * d * d);
}

/**
 * The least-squares line of y over x: its slope, the means it passes through and the spread of x;
 * undefined with no points or no spread in x. The one computation behind fitLine and the soak's
 * plain slopes (samples.ts).
 */
export function leastSquares(points: readonly (readonly [number, number])[]): { slope: number; mx: number; my: number; sxx: number } | undefined {
  const n = points.length;
  if (n === 0) return undefined;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  return sxx === 0 ? undefined : { slope: sxy / sxx, mx, my, sxx };
}

/** The fit of y over x; undefined with fewer than three readings or no spread in x. */
export function fitLine(points: readonly (readonly [number, number])[]): Fit | undefined {
  const n = points.length;
  if (n < 3) return undefined;
  // Sorted by x: the residuals' lag-1 correlation below is between neighbours in x.
  const sorted = [...points].sort((a, b) => a[0] - b[0]);
  const line = leastSquares(sorted);
  if (!line) return undefined;
  const { slope, mx, my, sxx } = line;
  const residuals = sorted.map(([x, y]) => y - my - slope * (x - mx));
  const ssr = residuals.reduce((s, e) => s + e * e, 0);
  const stdErr = Math.sqrt(ssr / (n - 2) / sxx);
  let num = 0;
  for (let i = 1; i < n; i++) num += residuals[i]! * residuals[i - 1]!;
  const lag1 = ssr === 0 ? 0 : num / ssr;
  const r = Math.min(0.95, Math.max(0, lag1));
  const adjustedStdErr = stdErr * Math.sqrt((1 + r) / (1 - r));
  const dof = Math.max(1, (n * (1 - r)) / (1 + r) - 2);
  const half = t975(dof) * adjustedStdErr;
  return { n, slope, intercept: my, stdErr, lag1, adjustedStdErr, dof, low: slope - half, high: slope + half };
}

/**
 * What a fit (in units per 100k operations) says against a bound: "under" only if the interval's
 * top is below it, "over" only if its bottom is above, else "not resolved".
 */
export type Verdict = "under" | "over" | "not resolved" | "too few readings";
export function verdict(fit: Fit | undefined, bound: number): Verdict {
  if (!fit) return "too few readings";
  if (fit.high < bound) return "under";
  if (fit.low > bound) return "over";
  return "not resolved";
}
