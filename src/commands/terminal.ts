/**
 * What the CLI does differently on a terminal: colour, a progress line, a word when it waits on stdin.
 * Nothing here changes what is written to files or pipes.
 */

/**
 * Colour for a stream: `--color` / `--no-color` first, then FORCE_COLOR (https://force-color.org: set and
 * not "0"/"false" forces it on), then NO_COLOR (https://no-color.org: set and non-empty turns it off),
 * then whether the stream is a terminal. Node's own util.inspect and chalk rank FORCE_COLOR over NO_COLOR too.
 */
export function useColor(stream: { isTTY?: boolean }, flags: { color?: boolean; noColor?: boolean } = {}, env: NodeJS.ProcessEnv = process.env): boolean {
  if (flags.color) return true;
  if (flags.noColor) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true;
}

/** When stdin is a terminal and no file was given, say what is expected instead of waiting silently. */
export function announceStdin(input: string, command: string, what: string): void {
  if (input !== '-' || process.stdin.isTTY !== true) return;
  process.stderr.write(`tagmask ${command}: reading ${what} from stdin (end with Ctrl-D); give a file instead, or see tagmask ${command} --help\n`);
}

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/**
 * One self-rewriting line on stderr while a long input is read: rollouts, tokens/s and, where the input's size is
 * known, how far and the time left. Only on a terminal, and only once a run has taken a second (a short input
 * shows nothing); erased before the summary is printed. Pipes and files never see it.
 */
export class ProgressLine {
  private readonly enabled: boolean;
  private readonly started: number;
  private lastDrawn = 0;
  private drawn = false;

  constructor(
    /** The input's size in bytes, if known (a file, not stdin or a compressed file). */
    private readonly totalBytes: number | undefined,
    private readonly stream: ProgressStream = process.stderr,
    private readonly now: () => number = () => performance.now(),
    private readonly delay = 1000,
  ) {
    this.enabled = stream.isTTY === true;
    this.started = now();
  }

  update(bytes: number, rollouts: number, tokens: number): void {
    if (!this.enabled) return;
    const now = this.now();
    const elapsed = now - this.started;
    if (elapsed < this.delay || now - this.lastDrawn < 100) return;
    this.lastDrawn = now;
    const seconds = elapsed / 1000;
    const parts = [`${rollouts.toLocaleString('en-US')} rollouts`, `${formatRate(tokens / seconds)} tokens/s`];
    if (this.totalBytes && bytes > 0) {
      const share = Math.min(1, bytes / this.totalBytes);
      parts.push(`${(100 * share).toFixed(0)}%`);
      if (share < 1) parts.push(`ETA ${formatDuration((seconds * (1 - share)) / share)}`);
    }
    const text = `tagmask: ${parts.join(', ')}`.slice(0, Math.max(20, (this.stream.columns || 80) - 1));
    this.stream.write(`\r\u001b[K${text}`);
    this.drawn = true;
  }

  /** Erase the line, so the summary that follows starts clean. */
  done(): void {
    if (this.drawn) this.stream.write('\r\u001b[K');
    this.drawn = false;
  }
}

function formatRate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(1)}M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(0)}k`;
  return perSecond.toFixed(0);
}

export function formatDuration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}
