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
