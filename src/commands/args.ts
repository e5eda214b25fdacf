/**
 * The CLI's argument parsing, help text and usage errors, on `node:util`'s parseArgs.
 *
 * Each command is one declarative table (see src/cli.ts): its flags with their type and help line, its
 * positionals, examples. Adding a flag to a command is one entry in its `flags`; `--help` / `-h` is added to
 * every command here. A usage error is one line naming the command, with a did-you-mean where a command or
 * flag is misspelled, and a pointer to the command's --help.
 */
import { parseArgs as parseNodeArgs } from 'node:util';
import type { OptionValues } from '../scan/bind.ts';

export interface FlagSpec {
  type: 'string' | 'boolean';
  /** One letter: `-o`. */
  short?: string;
  /** May be given more than once (`--set a=1 --set b=2`); read with `Args.list`. */
  multiple?: boolean;
  /** The value's placeholder in --help (`FILE`, `NAME|PATH`). */
  value?: string;
  /** The values allowed; anything else is a usage error naming them. */
  choices?: readonly string[];
  /** The value when the flag is absent (shown in --help). */
  default?: string;
  /** Must be given: checked before the command runs, shown in the usage line. */
  required?: boolean;
  help: string;
}

export interface CommandSpec {
  /** As typed: `mask`, or `grammar check` for a subcommand. */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** What follows the flags in the usage line: `[IN.jsonl|-]`. */
  positionals: string;
  /** How many positionals are allowed (Infinity for any number). */
  maxPositionals: number;
  minPositionals?: number;
  /** More about the command: input and output shapes. Lines, printed as given. */
  description?: string[];
  flags: Record<string, FlagSpec>;
  examples: string[];
  run(args: Args): Promise<number>;
}

/** A mistake in how the command was called: exit code 2, one line, a pointer to --help. */
export class UsageError extends Error {
  constructor(message: string, readonly command?: string) {
    super(message);
  }
}

/** The flag every command has. */
const HELP_FLAG: FlagSpec = { type: 'boolean', short: 'h', help: 'show this help' };

export class Args {
  constructor(readonly command: CommandSpec, readonly values: Record<string, string | boolean | string[] | undefined>, readonly positionals: string[]) {}

  private spec(name: string): FlagSpec {
    const spec = name === 'help' ? HELP_FLAG : this.command.flags[name];
    // A programming error, not a usage error: the command reads a flag its table does not declare.
    if (!spec) throw new Error(`tagmask ${this.command.name} has no flag --${name} in its table`);
    return spec;
  }

  /** A string flag's value (the last one given), or its default. */
  string(name: string): string | undefined {
    const spec = this.spec(name);
    const value = this.values[name];
    if (Array.isArray(value)) return value.at(-1) ?? spec.default;
    return typeof value === 'string' ? value : spec.default;
  }

  required(name: string): string {
    const value = this.string(name);
    if (value === undefined) throw new UsageError(`--${name} is required`, this.command.name);
    return value;
  }

  /** Every value of a repeatable flag, in order. */
  list(name: string): string[] {
    this.spec(name);
    const value = this.values[name];
    return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  }

  boolean(name: string): boolean {
    this.spec(name);
    return this.values[name] === true;
  }

  /** The one input file, `-` (stdin) when none is given. */
  input(): string {
    return this.positionals[0] ?? '-';
  }
}

/** Parse a command's arguments against its table. Throws UsageError for anything the table does not allow. */
export function parseCommand(command: CommandSpec, argv: string[]): Args {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries({ ...command.flags, help: HELP_FLAG })) {
    options[name] = { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}) };
  }
  let parsed: ReturnType<typeof parseNodeArgs>;
  try {
    parsed = parseNodeArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(explainParseError(error as Error & { code?: string }, command), command.name);
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help === true) return new Args(command, values, parsed.positionals);
  for (const [name, spec] of Object.entries(command.flags)) {
    if (!spec.choices) continue;
    const given = values[name];
    for (const value of Array.isArray(given) ? given : typeof given === 'string' ? [given] : []) {
      if (!spec.choices.includes(value)) throw new UsageError(`--${name} ${value}: expected one of ${spec.choices.join(', ')}${suggest(value, spec.choices)}`, command.name);
    }
  }
  for (const [name, spec] of Object.entries(command.flags)) {
    if (spec.required && values[name] === undefined) throw new UsageError(`--${name} is required`, command.name);
  }
  const { positionals } = parsed;
  if (positionals.length > command.maxPositionals) {
    const extra = positionals[command.maxPositionals];
    throw new UsageError(command.maxPositionals === 0 ? `takes no arguments, got "${extra}"` : `too many arguments: "${extra}" (give ${command.positionals})`, command.name);
  }
  if (positionals.length < (command.minPositionals ?? 0)) throw new UsageError(`missing ${command.positionals}`, command.name);
  return new Args(command, values, positionals);
}

/** parseArgs' messages, in the CLI's words and with a did-you-mean for unknown flags. */
function explainParseError(error: Error & { code?: string }, command: CommandSpec): string {
  const quoted = /'([^']+)'/.exec(error.message)?.[1];
  const flagNames = Object.entries(command.flags).flatMap(([name, spec]) => [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])]);
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const given = (quoted ?? '').split('=')[0];
      return `unknown flag ${given}${suggest(given, [...flagNames, '--help'])}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // parseArgs names the flag as '-o, --output <value>' or '--grammar <value>'.
      const name = /--[\w-]+/.exec(quoted ?? '')?.[0] ?? quoted ?? '';
      if (error.message.includes('does not take an argument')) return `${name} takes no value`;
      if (error.message.includes('ambiguous')) return `${name} needs a value (one starting with "-" is written ${name}=-…)`;
      return `${name} needs a value`;
    }
    default:
      return error.message.split('\n')[0];
  }
}

/** Optimal string alignment distance: edits, with a swap of neighbours counting as one. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The closest candidate, if it is close enough to be a likely typo: `, did you mean --grammar?`. */
export function suggest(given: string, candidates: readonly string[]): string {
  const bare = (word: string) => word.replace(/^-+/, '');
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    // An abbreviation (--gram for --grammar) counts as close.
    const distance = bare(given).length >= 2 && bare(candidate).startsWith(bare(given)) ? 1 : editDistance(bare(given), bare(candidate));
    if (distance < bestDistance) { best = candidate; bestDistance = distance; }
  }
  const allowed = Math.max(1, Math.floor(bare(given).length / 3));
  return best !== undefined && bestDistance <= allowed ? `; did you mean ${best}?` : '';
}

/** The usage line: `tagmask mask --grammar NAME|PATH --tokenizer SPEC [options] [IN.jsonl|-]`. */
function usageLine(command: CommandSpec, requiredFlags: string[]): string {
  const required = requiredFlags.map((name) => `--${name} ${command.flags[name].value ?? 'VALUE'}`);
  const optional = Object.keys(command.flags).length > requiredFlags.length ? ['[options]'] : [];
  return ['tagmask', command.name, ...required, ...optional, command.positionals].filter(Boolean).join(' ');
}

export const EXIT_CODES = [
  'Exit codes (every command):',
  '  0  everything passed',
  '  1  some rollout (line, suite, grammar) failed or disagreed, or had a diagnostic at or above --fail-on',
  '  2  usage or set-up error (bad flags, grammar or tokenizer not found); nothing is written',
];

/** `tagmask COMMAND --help`. */
export function commandHelp(command: CommandSpec): string {
  const requiredFlags = Object.entries(command.flags).filter(([, spec]) => spec.required).map(([name]) => name);
  const rows = Object.entries({ ...command.flags, help: HELP_FLAG }).map(([name, spec]) => {
    const left = `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.type === 'string' ? ` ${spec.value ?? 'VALUE'}` : ''}`;
    const extra = [spec.required ? 'required' : '', spec.choices ? `one of ${spec.choices.join(', ')}` : '', spec.default !== undefined ? `default ${spec.default}` : '', spec.multiple ? 'repeatable' : ''].filter(Boolean);
    return [left, `${spec.help}${extra.length ? ` (${extra.join('; ')})` : ''}`];
  });
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  const lines = [
    `tagmask ${command.name}: ${command.summary}`,
    '',
    `Usage: ${usageLine(command, requiredFlags)}`,
    ...(command.description?.length ? ['', ...command.description.map((line) => `  ${line}`)] : []),
    '',
    'Flags:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`),
    '',
    'Examples:',
    ...command.examples.map((example) => `  ${example}`),
    '',
    ...EXIT_CODES,
  ];
  return `${lines.join('\n')}\n`;
}

/** `tagmask --help`: the commands, one line each. */
export function mainHelp(commands: readonly CommandSpec[], version: string): string {
  const width = Math.max(...commands.map((command) => command.name.length)) + 2;
  const lines = [
    `tagmask ${version}: rebuild and audit RL action masks from flat rollout token streams`,
    '',
    'Usage: tagmask COMMAND [flags] [files]',
    '',
    'Commands:',
    ...commands.map((command) => `  ${command.name.padEnd(width)}${command.summary}`),
    '',
    'Flags:',
    '  -h, --help     show help (tagmask COMMAND --help for one command)',
    '  -v, --version  print the version',
    '',
    ...EXIT_CODES,
  ];
  return `${lines.join('\n')}\n`;
}

/** `--set key=value` (value: an integer or `null`). */
export function optionSets(items: string[]): OptionValues {
  // No prototype: `--set __proto__=1` or `constructor=1` is an option name like any other (and unknown).
  const options: OptionValues = Object.create(null);
  for (const item of items) {
    const match = /^([\w-]+)=(.*)$/.exec(item);
    if (!match) throw new UsageError(`--set ${item}: expected key=value`);
    const [, key, raw] = match;
    if (raw === 'null') options[key] = null;
    else if (/^-?\d+$/.test(raw)) options[key] = Number(raw);
    else throw new UsageError(`--set ${key}=${raw}: expected an integer or null`);
  }
  return options;
}
