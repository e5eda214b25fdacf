#!/usr/bin/env node
/**
 * The tagmask command line: parse arguments, call the library, print, set the exit code.
 * Exit codes: 0 all good; 1 some rollout failed or disagreed; 2 usage or set-up error.
 */
import { parseArgs, flag, requiredFlag, optionSets, UsageError } from './commands/args.ts';
import { MaskerPool, runRollouts, formatSummary } from './commands/mask.ts';
import { runMerge } from './commands/merge.ts';
import { readJsonl } from './io/jsonl.ts';
import { readRolloutLine } from './io/rollout.ts';
import { showRollout } from './report/show.ts';
import { findSuites, formatSuite, maskSamples, proveSuite, suitePassed } from './commands/suites.ts';
import { checkGrammarFile, formatIssue, GrammarError, resolveGrammarPath } from './grammar/load.ts';
import { lintLiterals } from './grammar/lint.ts';
import { namedSides } from './conformance.ts';
import { loadTokenizer } from './tokenizer/load.ts';

const USAGE = `tagmask: rebuild and audit RL action masks from flat rollout token streams

  tagmask mask --grammar <name|path> --tokenizer <dir|tokenizer.json|package> [--set key=value]… [IN.jsonl|-] [-o OUT.jsonl]
      input lines {"id", "tokens": [ids…], "prompt_length"?, "options"?}
      output lines {"id", "mask": [0|1…], "spans": [{"role","tag","start","end"}…], "diagnostics": [{"code","severity","token","message"}…]}
  tagmask check --grammar … --tokenizer … [--set key=value]… [IN.jsonl|-] [-o OUT.jsonl]
      compare with the mask a rollout brings: {"tokens", "mask"} or verl-style {"prompt_ids", "response_ids", "response_mask"}
  tagmask merge [IN.jsonl|-] [-o OUT.jsonl] [--tokenizer T]
      tinker trajectory_to_data: {"id", "transitions": [{"ob", "ac": {"tokens", "logprobs"}}…], "advantage"?} → one datum per line;
      splits (observations that stop extending) are reported on stderr, decoded with --tokenizer
  tagmask show --grammar … --tokenizer … [--set key=value]… [IN.jsonl|-] [--id ID] [--color|--no-color]
      print rollouts with their action spans marked (green / «…»), straddling tokens (red / ⟦…⟧) and diagnostics
  tagmask conformance [SUITE…] [--json]   prove suites (default: the bundled samples) against construction and the merge;
      --json: one line per rollout, datum and split
  tagmask samples [SUITE…] [-o DIR] mask the bundled samples into DIR (default out/) and prove them
  tagmask grammar check FILE|NAME [--tokenizer T]…   check a grammar; with tokenizers, lint its literals' tokenization
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  switch (command) {
    case 'mask':
    case 'check': {
      const args = parseArgs(rest, ['--grammar', '--tokenizer', '--set', '-o', '--output']);
      const pool = await MaskerPool.open(requiredFlag(args, '--grammar'), requiredFlag(args, '--tokenizer'), optionSets(args));
      if (args.positionals.length > 1) throw new UsageError('give one input file (or - for stdin)');
      const summary = await runRollouts(pool, args.positionals[0] ?? '-', flag(args, '-o') ?? flag(args, '--output'), command, log);
      log(formatSummary(summary, command));
      return summary.failed || summary.disagreeing ? 1 : 0;
    }
    case 'show': {
      const args = parseArgs(rest, ['--grammar', '--tokenizer', '--set', '--id'], ['--color', '--no-color']);
      const pool = await MaskerPool.open(requiredFlag(args, '--grammar'), requiredFlag(args, '--tokenizer'), optionSets(args));
      const input = args.positionals[0] ?? '-';
      const wanted = flag(args, '--id');
      const color = args.flags.has('--color') || (!args.flags.has('--no-color') && process.stdout.isTTY === true);
      let shown = 0;
      for (const line of readJsonl(input)) {
        try {
          const rollout = readRolloutLine(line.text);
          if (wanted !== undefined && String(rollout.id) !== wanted) continue;
          const result = pool.get(rollout.options).mask(rollout.tokens, { promptLength: rollout.promptLength });
          process.stdout.write(`${showRollout(pool.tokenizer.table, rollout.id, rollout.tokens, result, color)}\n\n`);
          shown++;
        } catch (error) {
          log(`${input === '-' ? '<stdin>' : input}:${line.number}: ${(error as Error).message}`);
        }
      }
      if (wanted !== undefined && shown === 0) { log(`no rollout with id ${wanted}`); return 1; }
      return 0;
    }
    case 'merge': {
      const args = parseArgs(rest, ['-o', '--output', '--tokenizer']);
      const tokenizer = flag(args, '--tokenizer');
      const table = tokenizer ? (await loadTokenizer(tokenizer)).table : undefined;
      return runMerge(args.positionals[0] ?? '-', flag(args, '-o') ?? flag(args, '--output'), table, log) ? 1 : 0;
    }
    case 'conformance': {
      const args = parseArgs(rest, [], ['--json']);
      const json = args.flags.has('--json');
      let passed = true;
      for (const suite of findSuites(args.positionals)) {
        const verdict = await proveSuite(suite);
        if (!json) process.stdout.write(`${formatSuite(verdict)}\n`);
        else {
          // One line per rollout and per datum: what a CI job or a notebook reads.
          for (const item of verdict.rollouts) process.stdout.write(`${JSON.stringify({ suite: suite.name, kind: 'rollout', id: item.id, tokens: item.tokens, agree: item.disagreements.length === 0, disagreements: item.disagreements.map((run) => namedSides(run, 'construction')) })}\n`);
          for (const trajectory of verdict.trajectories) {
            for (const datum of trajectory.datums) {
              process.stdout.write(`${JSON.stringify({ suite: suite.name, kind: 'datum', id: trajectory.id, datum: datum.datum, transitions: datum.transitions, tokens: datum.tokens, agree: datum.agree, disagreements: datum.disagreements.map((run) => namedSides(run, 'merge')) })}\n`);
            }
            for (const split of trajectory.splits) process.stdout.write(`${JSON.stringify({ suite: suite.name, kind: 'split', id: trajectory.id, ...split, cost: trajectory.cost })}\n`);
          }
          for (const error of verdict.errors) process.stdout.write(`${JSON.stringify({ suite: suite.name, kind: 'error', error })}\n`);
        }
        if (!suitePassed(verdict)) passed = false;
      }
      if (!json) process.stdout.write(passed ? 'conformance: everything agrees\n' : 'conformance: disagreements found\n');
      return passed ? 0 : 1;
    }
    case 'samples': {
      const args = parseArgs(rest, ['-o', '--output']);
      const passed = await maskSamples(args.positionals, flag(args, '-o') ?? flag(args, '--output') ?? 'out', (line) => process.stdout.write(`${line}\n`));
      return passed ? 0 : 1;
    }
    case 'grammar': {
      const [sub, ...more] = rest;
      if (sub !== 'check') throw new UsageError('usage: tagmask grammar check FILE [--tokenizer T]…');
      const args = parseArgs(more, ['--tokenizer']);
      if (args.positionals.length !== 1) throw new UsageError('usage: tagmask grammar check FILE [--tokenizer T]…');
      const checked = checkGrammarFile(resolveGrammarPath(args.positionals[0]));
      for (const issue of checked.issues) process.stdout.write(`${formatIssue(issue)}\n`);
      const errors = checked.issues.filter((issue) => issue.severity === 'error').length;
      const specs = args.flags.get('--tokenizer') ?? [];
      let lintWarnings = 0;
      if (checked.compiled && specs.length) {
        const tokenizers = await Promise.all(specs.map((spec) => loadTokenizer(spec)));
        for (const finding of await lintLiterals(checked.compiled.grammar, tokenizers)) {
          if (finding.severity === 'warning') lintWarnings++;
          process.stdout.write(`${checked.file}: ${finding.severity} ${finding.code} at ${finding.path}: ${finding.message}\n`);
        }
      }
      const warnings = checked.issues.filter((issue) => issue.severity === 'warning').length + lintWarnings;
      process.stdout.write(`${checked.file}: ${errors} error(s), ${warnings} warning(s)\n`);
      return errors ? 1 : 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`tagmask: ${error.message}\n\n${USAGE}`);
    else if (error instanceof GrammarError) process.stderr.write(`tagmask: ${error.message}\n`);
    else process.stderr.write(`tagmask: ${(error as Error).message ?? String(error)}\n`);
    process.exitCode = 2;
  },
);
