/** Small timing helpers: wall-clock medians of repeated runs, never assertions. */

export const now = (): number => Number(process.hrtime.bigint()) / 1e6; // ms

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export interface Timed {
  name: string;
  /** Every timed run, wall clock, ms. */
  runs: number[];
  medianMs: number;
  minMs: number;
  /** Million tokens per second at the median wall time. */
  mtoks: number;
  /**
   * Million tokens per second at the median CPU time (user + system of this process). On a shared machine
   * (other processes competing for the cores) wall time includes time spent descheduled; CPU time does not.
   */
  cpuMtoks: number;
  /** Million tokens per second at the fastest run. */
  bestMtoks: number;
}

const cpuMs = (): number => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

/**
 * Time several contenders over the same input, interleaved round by round (so drift, thermal state and
 * GC pressure hit all of them alike), after `warmup` untimed rounds.
 */
export function interleave(contenders: Array<{ name: string; run: () => void }>, tokens: number, rounds: number, warmup: number): Timed[] {
  for (let w = 0; w < warmup; w++) for (const c of contenders) c.run();
  const runs = contenders.map(() => [] as number[]);
  const cpu = contenders.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    contenders.forEach((c, i) => {
      const c0 = cpuMs();
      const t0 = now();
      c.run();
      runs[i].push(now() - t0);
      cpu[i].push(cpuMs() - c0);
    });
  }
  return contenders.map((c, i) => {
    const medianMs = median(runs[i]);
    const minMs = Math.min(...runs[i]);
    return {
      name: c.name,
      runs: runs[i].map((x) => +x.toFixed(2)),
      medianMs: +medianMs.toFixed(2),
      minMs: +minMs.toFixed(2),
      mtoks: +(tokens / medianMs / 1e3).toFixed(1),
      cpuMtoks: +(tokens / median(cpu[i]) / 1e3).toFixed(1),
      bestMtoks: +(tokens / minMs / 1e3).toFixed(1),
    };
  });
}

export const fmt = (x: number, digits = 1): string => x.toFixed(digits);

/** A fixed-width text table. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, c) => Math.max(...cells.map((row) => (row[c] ?? '').length)));
  const line = (row: string[]) => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
