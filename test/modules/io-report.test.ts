/**
 * Readers share one token-id check; reports lay out records (no I/O). Hand-made records, hand-written words.
 */
import { describe, expect, it } from 'vitest';
import { MAX_TOKEN_ID, tokenArray } from '../../src/io/json.ts';
import { readRecord } from '../../src/io/records.ts';
import { parseTrajectoryLine } from '../../src/io/trajectory.ts';
import { conformanceRecords } from '../../src/report/json.ts';
import { formatDiagnostic, formatRunSummary } from '../../src/report/text.ts';
import type { SuiteVerdict } from '../../src/conformance.ts';

describe('one token-id bound for every reader', () => {
  it('mask\'s reader and merge\'s reader accept and reject the same ids', () => {
    // A line's bytes (the byte reader of "tokens") and a parsed row (Parquet: the shape registry) alike.
    const readBytes = (tokens: number[]) => readRecord({ number: 1, bytes: Buffer.from(JSON.stringify({ tokens })) }, undefined, false).line.rollouts[0];
    const readValue = (tokens: number[]) => readRecord({ number: 1, value: { tokens } }, undefined, false).line.rollouts[0];
    for (const id of [0, 7, MAX_TOKEN_ID]) {
      for (const read of [readBytes, readValue]) expect(Array.from((read([id]) as { tokens: ArrayLike<number> }).tokens)).toEqual([id]);
      expect(parseTrajectoryLine({ id: 1, transitions: [{ ob: [id], ac: { tokens: [] } }] }, 'w').trajectory.transitions[0].ob).toEqual([id]);
    }
    for (const id of [-1, 1.5, MAX_TOKEN_ID + 1, 2 ** 53 - 1]) {
      for (const read of [readBytes, readValue]) expect(() => read([id])).toThrow(/tokens\[0\]/);
      expect(() => parseTrajectoryLine({ id: 1, transitions: [{ ob: [id], ac: { tokens: [] } }] }, 'w')).toThrow(/w: transitions\[0\]\.ob\[0\]/);
    }
    expect(() => tokenArray('x', 'f')).toThrow('f: expected an array of token ids');
  });
});

describe('report', () => {
  it('conformance records: one per rollout, re-tokenized rollout, datum, split and error', () => {
    const verdict = {
      suite: { name: 's' },
      rollouts: [{ id: 'r1', tokens: 5, disagreements: [], straddles: 0 }],
      retokenized: [{ id: 'r1', tokens: 4, disagreements: [], straddles: 2 }],
      trajectories: [],
      errors: ['f:3: bad'],
    } as unknown as SuiteVerdict;
    expect(conformanceRecords(verdict)).toEqual([
      { suite: 's', kind: 'rollout', id: 'r1', tokens: 5, agree: true, disagreements: [] },
      { suite: 's', kind: 'retokenized', id: 'r1', tokens: 4, straddles: 2 },
      { suite: 's', kind: 'error', error: 'f:3: bad' },
    ]);
  });

  it('a run summary and a diagnostic in words', () => {
    const summary = { rollouts: 2, failed: 1, tokens: 200, actionTokens: 50, diagnostics: new Map([['nested-tag', 3]]), disagreeing: 0, directions: new Map(), targetFrame: 0 };
    expect(formatRunSummary(summary, 'mask')).toBe('2 rollouts masked (200 tokens, 25.0% action); 1 failed; diagnostics: nested-tag×3');
    expect(formatDiagnostic({ code: 'no-action', severity: 'warning', token: 0, message: 'm' })).toBe('warning no-action at token 0: m');
  });
});
