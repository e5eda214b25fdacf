/**
 * The conformance suites, generated from samples/**: every suite.json folder is proved here, as
 * `tagmask conformance` does. Rollouts must equal the masks built by construction, re-tokenized twins
 * must not crash, and every datum of the transition merge must agree with the masker in target space.
 * The tutorial 404 suite must also reproduce the numbers the tutorial prints, through the masker.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findSuites, proveSuite } from '../../src/suites.ts';
import { MaskerPool } from '../../src/masker.ts';
import { loadGrammar, loadTokenizer, Masker } from '../../src/index.ts';
import { trajectoryToData } from '../../src/merge.ts';
import { parseTrajectoryLine } from '../../src/io/trajectory.ts';
import { BUNDLED_SAMPLES } from '../../src/paths.ts';

const suites = findSuites([]);

describe.each(suites.map((suite) => [suite.name, suite] as const))('suite %s', (_, suite) => {
  it('agrees on every token', async () => {
    const verdict = await proveSuite(suite);
    expect(verdict.errors).toEqual([]);
    const disagreeing = verdict.rollouts.filter((item) => item.disagreements.length).map((item) => ({ id: item.id, runs: item.disagreements }));
    expect(disagreeing).toEqual([]);
    const datums = verdict.trajectories.flatMap((trajectory) => trajectory.datums.filter((datum) => !datum.agree).map((datum) => ({ id: trajectory.id, datum })));
    expect(datums).toEqual([]);
    expect(verdict.rollouts.length + verdict.trajectories.length).toBeGreaterThan(0);
  }, 60_000);
});

describe.each(suites.filter((suite) => suite.rollouts && readFileSync(suite.rollouts, 'utf8').includes('"expected_attrs"')).map((suite) => [suite.name, suite] as const))('suite %s: tag attributes', (_, suite) => {
  it('the masker\'s span attributes are the expected_attrs the sample was built with, in order', async () => {
    const pool = await MaskerPool.open(suite.grammar, suite.tokenizer, suite.options);
    let compared = 0;
    for (const text of readFileSync(suite.rollouts!, 'utf8').split('\n').filter(Boolean)) {
      const line = JSON.parse(text) as { id: string; tokens: number[]; prompt_length?: number; options?: Record<string, number>; expected_attrs?: Array<{ tag: string; name: string }> };
      if (!line.expected_attrs) continue;
      const { spans } = pool.get(line.options ?? {}).mask(line.tokens, { promptLength: line.prompt_length });
      const read = spans.filter((span) => span.attrs).map((span) => ({ tag: span.tag, name: span.attrs!.name }));
      expect(read, line.id).toEqual(line.expected_attrs);
      compared++;
    }
    expect(compared).toBeGreaterThan(0);
  });
});

describe('tutorial 404 through the masker', () => {
  const dir = join(BUNDLED_SAMPLES, 'tutorial-404');
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
  const lines = readFileSync(join(dir, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));

  it('walks each datum\'s own token ids and prints the tutorial\'s masks', async () => {
    const tokenizer = await loadTokenizer(join(dir, 'tokenizer.json'));
    const masker = new Masker(loadGrammar('tutorial'), tokenizer.table);
    const masksOf = (id: string) => {
      const { trajectory } = parseTrajectoryLine(lines.find((line) => line.id === id), id);
      return trajectoryToData(trajectory).map((datum) => {
        const stream = datum.sequence;
        // Target space: mask[i] belongs to tokens[i + 1].
        return Array.from(masker.mask(stream, { promptLength: datum.firstObservationLength }).mask.subarray(1));
      });
    };
    const extend = masksOf('extend');
    expect(extend).toHaveLength(expected.extend.datums);
    expect(extend[0]).toHaveLength(expected.extend.total_tokens);
    expect(extend[0]).toEqual(expected.extend.mask);
    expect(extend[0].filter((value) => value === 1)).toHaveLength(expected.extend.action_tokens);
    expect(extend[0].filter((value) => value === 0)).toHaveLength(expected.extend.prompt_tokens);
    const split = masksOf('split');
    expect(split.map((mask) => mask.length)).toEqual(expected.split.datum_lengths);
    expect(split).toEqual(expected.split.masks);
  });
});
