/**
 * The rollout reader's fast path (src/io/records.ts: a flat line's "tokens" array read straight from its bytes)
 * must agree with the plain one (JSON.parse, then the shape registry) on every line: same lines accepted,
 * same values read, same message for a rejected line. Lines are random JSON objects written in many ways and
 * then mutated the ways that fooled the fast reader before: leading zeros (`[007]`), a "tokens" key nested
 * in another object or spelled with escapes (`"\u0074okens"`), duplicated keys, a byte order mark, random bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdArena, readPlainLine, readRecord, type PlainLine } from '../../src/io/records.ts';
import { idJson } from '../../src/io/lines.ts';
import { readShaped, type ShapedLine } from '../../src/io/shapes.ts';

type Outcome = { ok: true; value: unknown } | { ok: false; message: string };

function outcome(read: () => ShapedLine): Outcome {
  try {
    const line = read();
    // Copied at once: the fast reader's tokens are a view into a buffer the next line reuses.
    return { ok: true, value: { shape: line.shape, rollouts: line.rollouts.map((rollout) => ({ ...rollout, tokens: 'tokens' in rollout ? Array.from(rollout.tokens) : undefined })) } };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** The plain reader, written out here: JSON.parse, then the shape the keys say. */
function plain(text: string): ShapedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`);
  }
  const { shape, rollouts } = readShaped(value);
  return { shape, rollouts };
}

const both = (text: string) => ({ fast: outcome(() => readRecord({ number: 1, bytes: Buffer.from(text, 'utf8') }, undefined, false).line), slow: outcome(() => plain(text)) });

const tokenId = fc.oneof(fc.nat(200_000), fc.constantFrom(0, 7, 4294967295, 4294967296, -1, 1.5, 1e3));
const tokens = fc.array(tokenId, { maxLength: 12 });
const rollout = fc.record({
  id: fc.oneof(fc.string(), fc.integer(), fc.jsonValue({ maxDepth: 3 })),
  tokens,
  prompt_length: fc.nat(15),
  options: fc.dictionary(fc.constantFrom('max_obs_tokens', 'straddle', 'constructor'), fc.oneof(fc.nat(10), fc.constant(null))),
  mask: fc.array(fc.constantFrom(0, 1), { maxLength: 12 }),
  meta: fc.record({ tokens, note: fc.string() }, { requiredKeys: [] }),
  note: fc.constantFrom('tokens', '"tokens":[1]', 'a\\"tokens\\"', '\u0000', 'é'),
}, { requiredKeys: [] });

/** Ways to write the same object: spacing, key order. */
const written = fc.tuple(rollout, fc.constantFrom('', ' ', '\t', '  '), fc.boolean()).map(([value, space, reverse]) => {
  const entries = Object.entries(value);
  if (reverse) entries.reverse();
  return JSON.stringify(Object.fromEntries(entries), null, space).replaceAll('\n', space ? ' ' : '');
});

/** The mutations that fooled the fast reader, and random edits. */
const mutation = fc.oneof(
  fc.constant((text: string) => text.replace(/\[(\d)/, '[00$1')),
  fc.constant((text: string) => text.replace(/,(\d)/, ',0$1')),
  fc.constant((text: string) => text.replace('"tokens"', '"\\u0074okens"')),
  fc.constant((text: string) => text.replace(/"tokens"(?![\s\S]*"tokens")/, '"\\u0074okens"')),
  fc.constant((text: string) => text.replace(/}$/, ',"\\u0074okens":[]}')),
  fc.constant((text: string) => text.replace(/}$/, ',"tokens":[3]}')),
  fc.constant((text: string) => text.replace(/^{/, '{"x":{"tokens":[1,2]},')),
  fc.constant((text: string) => `\uFEFF${text}`),
  fc.constant((text: string) => text.replace(/\]/, ' ]')),
  fc.tuple(fc.nat(), fc.constantFrom('[', ']', '{', '}', ',', ':', '"', '0', '9', ' ', '-', '.', 'e', '\\', 'u')).map(([at, char]) => (text: string) => {
    const i = at % (text.length + 1);
    return text.slice(0, i) + char + text.slice(i);
  }),
  fc.nat().map((at) => (text: string) => {
    const i = at % Math.max(1, text.length);
    return text.slice(0, i) + text.slice(i + 1);
  }),
  // A line cut short (the reader then runs into the end of the bytes, inside the array or after it).
  fc.nat().map((at) => (text: string) => text.slice(0, at % (text.length + 1))),
);
const line = fc.tuple(written, fc.array(mutation, { maxLength: 3 })).map(([text, edits]) => edits.reduce((t, edit) => edit(t), text));

describe('the byte reader of "tokens" and JSON.parse', () => {
  it('accept and reject the same lines and read the same values (random lines and mutations)', () => {
    fc.assert(fc.property(line, (text) => {
      const { fast, slow } = both(text);
      expect(fast).toEqual(slow);
    }), { numRuns: 3000 });
  });

  it('the audit\'s lines: [007] rejected, an escaped or nested "tokens" never taken for the real one, a line cut inside its array rejected', () => {
    const cases: Array<[string, 'reject' | number[]]> = [
      ['{"id":1,"tokens":[007]}', 'reject'],
      ['{"id":1,"tokens":[1,00]}', 'reject'],
      ['{"id":1,"meta":{"tokens":[1,2,3]},"\\u0074okens":[4,5]}', [4, 5]],
      ['{"id":1,"x":{"tokens":[1,2,3]},"\\u0074okens":[]}', []],
      ['{"id":1,"tokens":[1,2,3],"\\u0074okens":[9]}', [9]],
      ['{"id":1,"meta":{"tokens":[1,2,3]}}', 'reject'],
      // Cut inside the array: the reader meets the end of the line in a number, after a comma, after a space.
      ['{"id":1,"tokens":[1,2', 'reject'],
      ['{"id":1,"tokens":[151644', 'reject'],
      ['{"id":1,"tokens":[0', 'reject'],
      ['{"id":1,"tokens":[1, ', 'reject'],
      ['{"id":1,"tokens":[1 ', 'reject'],
      ['{"id":1,"tokens":[', 'reject'],
      ['{"id":1,"tokens":[ ', 'reject'],
      ['{"id":1,"tokens":[1,2]', 'reject'],
    ];
    for (const [text, expected] of cases) {
      const { fast, slow } = both(text);
      expect(fast, text).toEqual(slow);
      if (expected === 'reject') expect(fast.ok, text).toBe(false);
      else expect(fast.ok && (fast.value as { rollouts: Array<{ tokens: number[] }> }).rollouts[0].tokens, text).toEqual(expected);
    }
  });
});

/**
 * The batched mask path's quickest reader (readPlainLine: `{"id", "tokens", "prompt_length"?}` read with no
 * JSON.parse) takes a line only where the plain reader reads a flat rollout from it with no options and no mask,
 * and then gives the same ids, prompt length and id JSON (idJson, what the output line writes).
 */
describe('readPlainLine and the plain reader', () => {
  const plainOf = (text: string) => {
    const arena = new IdArena();
    const into: PlainLine = { idText: '', promptLength: -2 };
    return readPlainLine(Buffer.from(text, 'utf8'), arena, into) ? { ids: Array.from(arena.ids.subarray(0, arena.used)), idText: into.idText, promptLength: into.promptLength } : undefined;
  };
  const agrees = (text: string) => {
    const quick = plainOf(text);
    if (!quick) return false;
    const slow = outcome(() => plain(text));
    expect(slow.ok, text).toBe(true);
    const value = JSON.parse(text);
    const line = plain(text);
    expect(line.shape, text).toBe('flat');
    const [rollout] = line.rollouts as Array<{ id: unknown; tokens: ArrayLike<number>; promptLength: number; options: object; given?: unknown }>;
    expect(quick.ids, text).toEqual(Array.from(rollout.tokens));
    expect(quick.promptLength, text).toBe(rollout.promptLength);
    expect(quick.idText, text).toBe(idJson(value.id));
    expect(Object.keys(rollout.options), text).toEqual([]);
    expect(rollout.given, text).toBeUndefined();
    return true;
  };

  it('takes the lines writers write (JSON.stringify, json.dumps) and reads them as the plain reader does', () => {
    const taken = [
      '{"id":"realistic-343/0","tokens":[151644,872,198],"prompt_length":2}',
      '{"id": "a b", "tokens": [1, 22, 333], "prompt_length": 3}',
      '{"id":0,"tokens":[]}',
      '{"id":123456789012345,"tokens":[0,4294967295]}',
      '{"id":"","tokens":[5],"prompt_length":0}',
      '{"id":"x/y\'z<>","tokens":[ 1 , 2 ]}',
    ];
    for (const text of taken) expect(agrees(text), text).toBe(true);
    // Left to the general path, which reads (or rejects) them: other keys or orders, escapes, non-ASCII ids,
    // ids the plain integers do not cover, a prompt_length past the tokens or not a plain integer, cut lines.
    const left = [
      '{"tokens":[1],"id":"a"}', '{"id":"a","tokens":[1],"mask":[1]}', '{"id":"a","tokens":[1],"options":{}}',
      '{"id":"a\\"b","tokens":[1]}', '{"id":"é","tokens":[1]}', '{"id":"\\u0041","tokens":[1]}', '{"id":-1,"tokens":[1]}',
      '{"id":1.5,"tokens":[1]}', '{"id":01,"tokens":[1]}', '{"id":1234567890123456,"tokens":[1]}', '{"id":null,"tokens":[1]}',
      '{"id":"a","tokens":[1],"prompt_length":2}', '{"id":"a","tokens":[1],"prompt_length":-1}', '{"id":"a","tokens":[1],"prompt_length":01}',
      '{"id":"a","tokens":[1],"prompt_length":1.0}', '{"id":"a","tokens":[1],"prompt_length":null}', '{"id":"a","tokens":[1] }',
      '{"id":"a","tokens":[1]', '{"id":"a","tokens":[1,', '{"id":"a","tokens":[007]}', '{"id":"a","tokens":[1]}x', ' {"id":"a","tokens":[1]}',
    ];
    for (const text of left) expect(plainOf(text), text).toBeUndefined();
  });

  it('never takes a line the plain reader reads otherwise (random lines and mutations)', () => {
    const simple = fc.record({
      id: fc.oneof(fc.string(), fc.integer(), fc.nat(), fc.constantFrom('a/1', 'x y', '', 'é', '"', '\\')),
      tokens: fc.array(fc.nat(200_000), { maxLength: 12 }),
      prompt_length: fc.nat(15),
    }, { requiredKeys: ['id', 'tokens'] });
    const spacing = fc.constantFrom(['', ''], [' ', ''], ['', ' ']);
    const writtenSimple = fc.tuple(simple, spacing).map(([value, [afterColon, afterComma]]) => JSON.stringify(value).replaceAll('":', `":${afterColon}`).replaceAll(',"', `,${afterComma}"`));
    let taken = 0;
    fc.assert(fc.property(fc.oneof(line, fc.tuple(writtenSimple, fc.array(mutation, { maxLength: 2 })).map(([text, edits]) => edits.reduce((t, edit) => edit(t), text))), (text) => {
      if (agrees(text)) taken++;
    }), { numRuns: 4000 });
    expect(taken).toBeGreaterThan(200);
  });
});
