/**
 * Progress of a transfer on stderr: a line redrawn in place on a terminal (bytes, rate, ETA
 * when the total is known), a plain line every few seconds otherwise, nothing with --quiet.
 */
import process from "node:process";
import { formatBytes } from "./format.ts";

export class Progress {
  private done = 0;
  private readonly started = performance.now();
  private lastDraw = 0;
  private readonly tty: boolean;

  constructor(
    private readonly label: string,
    private readonly total: number | null,
    private readonly quiet: boolean,
  ) {
    this.tty = Boolean((process.stderr as { isTTY?: boolean }).isTTY);
  }

  add(bytes: number): void {
    this.done += bytes;
    const now = performance.now();
    if (now - this.lastDraw >= (this.tty ? 100 : 5000)) this.draw(now, false);
  }

  finish(): void {
    this.draw(performance.now(), true);
  }

  private draw(now: number, final: boolean): void {
    this.lastDraw = now;
    if (this.quiet) return;
    const seconds = Math.max((now - this.started) / 1000, 1e-6);
    const rate = this.done / seconds;
    let line = `${this.label}: ${formatBytes(this.done)}`;
    if (this.total !== null) {
      const pct = this.total === 0 ? 100 : (this.done / this.total) * 100;
      line += ` of ${formatBytes(this.total)} (${pct.toFixed(0)} %)`;
    }
    line += `, ${formatBytes(rate)}/s`;
    if (!final && this.total !== null && rate > 0) line += `, ${Math.ceil((this.total - this.done) / rate)} s left`;
    if (final) line += ` in ${seconds.toFixed(1)} s`;
    if (this.tty) process.stderr.write(`\r\x1b[K${line}${final ? "\n" : ""}`);
    else if (final || this.done > 0) process.stderr.write(line + "\n");
  }
}
