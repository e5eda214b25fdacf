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
import { ID_RUN_MODULE, idRunModuleBytes, useIdRun } from '../../src/io/id-run.ts';
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

/**
 * The plain run of ids (src/io/id-run.ts: `123,45,6789,` read eight bytes at a time in WebAssembly) stops before
 * anything unusual and leaves it to the byte loop. Long arrays written every way JSON allows, then mutated inside
 * the array (a sign, a fraction, an exponent, a leading zero, other spacing, a byte that is no digit, a cut), must
 * read as JSON.parse reads them, the same with the run and without it (`useIdRun(false)`: the byte loop alone).
 */
describe('the plain run of ids and JSON.parse', () => {
  const withRun = <T>(on: boolean, read: () => T): T => {
    useIdRun(on);
    try {
      return read();
    } finally {
      useIdRun(true);
    }
  };
  const plainIds = (text: string) => {
    const arena = new IdArena();
    const into: PlainLine = { idText: '', promptLength: -2 };
    return readPlainLine(Buffer.from(text, 'utf8'), arena, into) ? { ids: Array.from(arena.ids.subarray(0, arena.used)), promptLength: into.promptLength } : undefined;
  };
  /** Every reader on `text`, with the run and without: all must agree with JSON.parse. */
  const check = (text: string) => {
    const slow = outcome(() => plain(text));
    const fast = withRun(true, () => outcome(() => readRecord({ number: 1, bytes: Buffer.from(text, 'utf8') }, undefined, false).line));
    const loop = withRun(false, () => outcome(() => readRecord({ number: 1, bytes: Buffer.from(text, 'utf8') }, undefined, false).line));
    expect(fast, text).toEqual(slow);
    expect(loop, text).toEqual(slow);
    const quick = withRun(true, () => plainIds(text));
    expect(quick, text).toEqual(withRun(false, () => plainIds(text)));
    if (quick) {
      expect(slow.ok, text).toBe(true);
      expect(quick.ids, text).toEqual((JSON.parse(text) as { tokens: number[] }).tokens);
    }
    return slow;
  };

  // Ids of every length the run reads (1-7 digits) and past it (8-10 digits; past 2^32 - 1 is an edit below).
  const id = fc.oneof(
    { arbitrary: fc.nat(9), weight: 2 }, { arbitrary: fc.nat(999), weight: 4 }, { arbitrary: fc.nat(200_000), weight: 4 },
    { arbitrary: fc.nat(9_999_999), weight: 1 }, { arbitrary: fc.constantFrom(0, 9999999, 10000000, 12345678, 99999999, 4294967295), weight: 1 },
  );
  const separator = fc.constantFrom(',', ', ', ',', ', ', ' ,', ',  ', ',\t', ',\n', ' , ');
  const array = fc.tuple(fc.array(id, { maxLength: 300, size: 'max' }), fc.array(separator, { minLength: 1, maxLength: 4 }), fc.nat()).map(([ids, separators, pick]) => {
    // Mostly one spacing for the whole array (as writers do), sometimes mixed.
    const mixed = pick % 4 === 0;
    return ids.map((value, i) => (i === 0 ? '' : mixed ? separators[(pick + i) % separators.length] : separators[0]) + value).join('');
  });
  const arrayEdit = fc.oneof(
    fc.tuple(fc.nat(), fc.constantFrom('-', '.', '.5', 'e3', 'E+1', '0', '00', ' ', '\t', '\r\n', ',', ']', '[', '"', 'é', '\u0000', 'x', '9', '1', '/', ':', '4294967296', ',4294967296')).map(([at, insert]) => (text: string) => {
      const i = at % (text.length + 1);
      return text.slice(0, i) + insert + text.slice(i);
    }),
    fc.nat().map((at) => (text: string) => {
      const i = at % Math.max(1, text.length);
      return text.slice(0, i) + text.slice(i + 1);
    }),
    // Something valid the run does not read, after some comma: the byte loop must take over there and the rest
    // still be read (whitespace, JSON numbers that are ids written otherwise, an id of eight digits).
    fc.tuple(fc.nat(), fc.constantFrom(' ', '\t', '\n ', '1.0,', '1e3,', '-0,', '12345678,', '4294967295,', '0,')).map(([at, insert]) => (text: string) => {
      const commas = [...text.matchAll(/,/g)].map((m) => m.index!);
      if (commas.length === 0) return text;
      const i = commas[at % commas.length] + 1;
      return text.slice(0, i) + insert + text.slice(i);
    }),
    // A leading zero before some id.
    fc.nat().map((at) => (text: string) => {
      const starts = [...text.matchAll(/(?<![\d.eE+-])\d/g)].map((m) => m.index!);
      if (starts.length === 0) return text;
      const i = starts[at % starts.length];
      return `${text.slice(0, i)}0${text.slice(i)}`;
    }),
  );
  const spaced = fc.constantFrom(['', ''], [' ', ' ']);
  const longLine = fc.tuple(fc.oneof(fc.string({ maxLength: 8 }), fc.nat()), array, fc.array(arrayEdit, { maxLength: 2 }), spaced, fc.option(fc.nat(20)), fc.constantFrom('', ']', ']}', '] ', ']}x')).map(
    ([name, ids, edits, [afterColon, afterComma], promptLength, end]) => {
      const body = edits.reduce((t, edit) => edit(t), ids);
      const tail = promptLength === null ? '' : `,${afterComma}"prompt_length":${afterColon}${promptLength}`;
      // Mostly whole lines; sometimes the array is left open or the line cut after it.
      return end === '' || end === ']}' ? `{"id":${afterColon}${JSON.stringify(name)},${afterComma}"tokens":${afterColon}[${body}]${tail}}` : `{"id":${JSON.stringify(name)},"tokens":[${body}${end}`;
    },
  );

  it('runs the module its assembler writes (ID_RUN_MODULE is idRunModuleBytes() written out)', () => {
    // On a change to the assembler, this prints the text to put in ID_RUN_MODULE.
    expect(ID_RUN_MODULE).toBe(Buffer.from(idRunModuleBytes()).toString('base64'));
  });

  it('reads long arrays written and mutated every way as JSON.parse does, with the run and without', () => {
    let read = 0;
    fc.assert(fc.property(longLine, (text) => {
      if (check(text).ok) read++;
    }), { numRuns: 800 });
    expect(read).toBeGreaterThan(60);
  }, 60_000);

  it('leading zeros, signs, fractions, exponents, long ids and odd spacing deep inside a long array', () => {
    const head = Array.from({ length: 40 }, (_, i) => (i * 7919) % 151_669).join(',');
    const cases: Array<[string, 'reject' | number[]]> = [
      ['0123', 'reject'], ['00', 'reject'], ['-5', 'reject'], ['-0', [-0]], ['1.5', 'reject'], ['1.0', [1]], ['1e3', [1000]], ['1E+3', [1000]], ['15e-1', 'reject'],
      ['9999999', [9999999]], ['12345678', [12345678]], ['4294967295', [4294967295]], ['4294967296', 'reject'], ['99999999999', 'reject'],
      ['0', [0]], ['0,0', [0, 0]], ['1 ,2', [1, 2]], ['1,\t2', [1, 2]], ['1,  2', [1, 2]], ['1,\n2', [1, 2]], ['1 , 2', [1, 2]],
      ['1,,2', 'reject'], ['1,', 'reject'], ['1, ', 'reject'], ['1,2,', 'reject'], ['é', 'reject'], ['1a', 'reject'], ['"1"', 'reject'], ['1/2', 'reject'],
    ];
    for (const [spacing, join] of [[',', ','], [', ', ', ']] as const) {
      const before = head.replaceAll(',', join);
      for (const [middle, expected] of cases) {
        for (const after of ['', `${spacing}${head.replaceAll(',', join)}`]) {
          const text = `{"id":"deep","tokens":[${before}${spacing}${middle}${after}]}`;
          const slow = check(text);
          if (expected === 'reject') expect(slow.ok, text).toBe(false);
          else expect(slow.ok && (slow.value as { rollouts: Array<{ tokens: number[] }> }).rollouts[0].tokens.slice(40, 40 + expected.length), text).toEqual(expected);
        }
      }
    }
  });

  it('a line longer than the run\'s window (32 KiB) is read whole, with an odd byte anywhere near the windows\' edges', () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => (i * 104_729) % 151_669);
    const array = ids.join(',');
    const start = '{"id":"long","tokens":['.length;
    const text = `{"id":"long","tokens":[${array}]}`;
    expect(check(text).ok).toBe(true);
    for (const edge of [32_768, 65_536]) {
      for (let at = edge - 10; at <= edge + 10; at++) {
        for (const insert of edge === 32_768 ? [' ', '-', '0'] : ['x']) {
          const i = start + at;
          check(text.slice(0, i) + insert + text.slice(i));
        }
      }
    }
  }, 60_000);
});
