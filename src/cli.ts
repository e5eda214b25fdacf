#!/usr/bin/env node
/**
 * The tagmask command line: it only dispatches. Each command is one table in src/commands/<name>.ts (flags,
 * help, examples, what it runs), parsed by src/commands/args.ts on node:util's parseArgs. A command returns
 * the exit code: 0 all good; 1 some rollout failed, disagreed or had a diagnostic at or above --fail-on;
 * 2 usage or set-up error.
 *
 * To add a command: a file in src/commands exporting its CommandSpec, and one entry in COMMANDS below.
 * To add a flag: one entry in its `flags`, then read it in its `run` with `args.string('name')`,
 * `args.boolean('name')` or `args.list('name')`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Args, commandHelp, mainHelp, parseCommand, suggest, UsageError, type CommandSpec } from './commands/args.ts';
import { mask } from './commands/mask.ts';
import { check } from './commands/check.ts';
import { merge } from './commands/merge.ts';
import { show } from './commands/show.ts';
import { conformance } from './commands/conformance.ts';
import { samples } from './commands/samples.ts';
import { grammarCheck } from './commands/grammar-check.ts';
import { detect } from './commands/detect.ts';
import { serveCommand } from './commands/serve.ts';
import { log, out } from './commands/shared.ts';
import { InputError, OutputClosed, OutputError, OutputPathError } from './io/jsonl.ts';
import { GrammarError } from './grammar/load.ts';
import { onTableBuild, widenInlineCachesForTemplates } from './tokenizer/load.ts';
import { visibleText } from './report/text.ts';
import { PACKAGE_ROOT } from './paths.ts';

type Command = CommandSpec;

/** Every command, in the order `tagmask --help` lists them. */
const COMMANDS: Command[] = [mask, check, merge, show, detect, conformance, samples, grammarCheck, serveCommand];

function version(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The command an argv names (`grammar check` takes two words), and the arguments after it. */
function findCommand(argv: string[]): { command: Command; rest: string[] } {
  const [first, second] = argv;
  const names = COMMANDS.map((command) => command.name);
  const group = names.filter((name) => name.startsWith(`${first} `));
  if (group.length) {
    const command = COMMANDS.find((item) => item.name === `${first} ${second}`);
    if (command) return { command, rest: argv.slice(2) };
    const subcommands = group.map((name) => name.split(' ')[1]);
    const message = second === undefined || second.startsWith('-') ? `${first} needs a subcommand: ${subcommands.join(', ')}` : `unknown subcommand "${first} ${second}"${suggest(second, subcommands)}`;
    throw new UsageError(message, group.length === 1 ? group[0] : undefined);
  }
  const command = COMMANDS.find((item) => item.name === first);
  if (!command) throw new UsageError(`unknown command "${first}"${suggest(first, [...new Set(names.map((name) => name.split(' ')[0]))])}`);
  return { command, rest: argv.slice(1) };
}

async function main(argv: string[]): Promise<number> {
  const [first] = argv;
  if (first === '--version' || first === '-v') { out(version()); return 0; }
  if (first === undefined) { process.stderr.write(mainHelp(COMMANDS, version())); return 2; }
  if (first === '--help' || first === '-h') { process.stdout.write(mainHelp(COMMANDS, version())); return 0; }
  if (first === 'help') {
    if (argv.length === 1) { process.stdout.write(mainHelp(COMMANDS, version())); return 0; }
    process.stdout.write(commandHelp(findCommand(argv.slice(1)).command));
    return 0;
  }
  if (first.startsWith('-')) throw new UsageError(`unknown flag ${first}${suggest(first, ['--help', '--version']) || '; a command comes first, its flags after it'}`);
  const group = COMMANDS.filter((command) => command.name.startsWith(`${first} `));
  if (group.length && (argv[1] === '--help' || argv[1] === '-h')) {
    process.stdout.write(group.map((command) => commandHelp(command)).join('\n'));
    return 0;
  }
  const { command, rest } = findCommand(argv);
  const args: Args = parseCommand(command, rest);
  // A cold first use of a tokenizer says what it does, on a terminal (steps overwrite each other there).
  if (process.stderr.isTTY) onTableBuild((line, progress) => process.stderr.write(progress ? `\r\u001b[Ktagmask: ${visibleText(line)}` : `\r\u001b[Ktagmask: ${visibleText(line)}\n`));
  // This process is ours: chat templates may render several times faster (a V8 setting, see load.ts).
  widenInlineCachesForTemplates();
  if (args.boolean('help')) { process.stdout.write(commandHelp(command)); return 0; }
  try {
    return await command.run(args);
  } catch (error) {
    // A usage error found while running (a bad --set value) names the command too.
    if (error instanceof UsageError && !error.command) throw new UsageError(error.message, command.name);
    throw error;
  }
}

// A reader that closes stdout early (`tagmask conformance | head`) is not an error: stop quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code === 'EPIPE') process.exit(0); throw error; });

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error: unknown) => {
    if (error instanceof OutputClosed) { process.exitCode = 0; return; }
    if (error instanceof UsageError) {
      const where = error.command ? `tagmask ${error.command}` : 'tagmask';
      log(`${where}: ${error.message} (see ${where} --help)`);
    } else if (error instanceof GrammarError || error instanceof OutputError || error instanceof OutputPathError || error instanceof InputError) log(`tagmask: ${error.message}`);
    else log(`tagmask: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  },
);
