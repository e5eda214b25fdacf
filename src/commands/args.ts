/** Argument parsing for the CLI: flags with values, repeatable `--set`, positionals. */
import type { OptionValues } from '../scan.ts';

export interface Args {
  positionals: string[];
  flags: Map<string, string[]>;
}

export class UsageError extends Error {}

/** `valueFlags` take a value (`--grammar x` or `--grammar=x`); others are booleans. */
export function parseArgs(argv: string[], valueFlags: string[], booleanFlags: string[] = []): Args {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-' || !arg.startsWith('-')) { positionals.push(arg); continue; }
    if (arg === '--') { positionals.push(...argv.slice(i + 1)); break; }
    const [name, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (valueFlags.includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new UsageError(`${name} needs a value`);
      flags.set(name, [...(flags.get(name) ?? []), value]);
    } else if (booleanFlags.includes(name) && inline === undefined) {
      flags.set(name, ['true']);
    } else {
      throw new UsageError(`unknown option ${name}`);
    }
  }
  return { positionals, flags };
}

export function flag(args: Args, name: string): string | undefined {
  return args.flags.get(name)?.at(-1);
}

export function requiredFlag(args: Args, name: string): string {
  const value = flag(args, name);
  if (value === undefined) throw new UsageError(`${name} is required`);
  return value;
}

/** `--set key=value` (value: an integer or `null`). */
export function optionSets(args: Args): OptionValues {
  const options: OptionValues = {};
  for (const item of args.flags.get('--set') ?? []) {
    const match = /^([\w-]+)=(.*)$/.exec(item);
    if (!match) throw new UsageError(`--set ${item}: expected key=value`);
    const [, key, raw] = match;
    if (raw === 'null') options[key] = null;
    else if (/^-?\d+$/.test(raw)) options[key] = Number(raw);
    else throw new UsageError(`--set ${key}=${raw}: expected an integer or null`);
  }
  return options;
}
