/**
 * The scanner and binding on a tiny hand-made tokenizer (kit.ts): each protocol step, option binding,
 * maskers used in turn, maskBatch's arguments, a tag's attribute bound, a reply ended by a line-start marker. Expectations by construction: pieces encoded on their own.
 */
import { describe, expect, it } from 'vitest';
import { Masker } from '../../src/masker.ts';
import { bind, grammarTables } from '../../src/scan/bind.ts';
import { MaskerPool } from '../../src/masker.ts';
import { prepareAttributeReader } from '../../src/scan/attributes.ts';
import { Segments } from '../../src/scan/segments.ts';
import { encode, grammarOf, piecewise, SEARCH, table } from './kit.ts';

const PROMPT: [string, 0] = ['Q: who?\nGo:\n', 0];

describe('scanner steps', () => {
  const masker = new Masker(SEARCH, table);

  it('a handover followed by its reply envelope, then the model again, then padding', () => {
    const { tokens, mask } = piecewise([PROMPT, ['<t>hm</t><s>who</s>', 1], ['\n\n<o>doc <s> x</o>\n\n', 0], ['<a>him</a>', 1], ['<|pad|><|pad|>', 0]]);
    const result = masker.mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics).toEqual([]);
    // No text between </t> and <s>: the model's plain-text kind holds no token there, so it has no span.
    expect(result.spans.map((span) => span.tag)).toEqual(['prompt', 't', 's', 'obs', 'a', 'trailing']);
  });

  it('an interrupting fixed text inside a turn is the environment\'s; the same words elsewhere are not', () => {
    const { tokens, mask } = piecewise([PROMPT, ['just words', 1], ['\nBAD ACTION.\n', 0], ['<a>x</a>', 1]]);
    expect(Array.from(masker.mask(tokens).mask)).toEqual(mask);
    const partial = piecewise([PROMPT, ['says BAD ACTION but not all of it <a>x</a>', 1]]);
    expect(Array.from(masker.mask(partial.tokens).mask)).toEqual(partial.mask);
  });

  it('a reply cut by its budget: the model writes again from the next token, noted reply-truncated', () => {
    // The reply "\n\n<o>do" is 7 tokens in this vocabulary: a budget of 7 ends it there.
    const cut = new Masker(SEARCH, table, { obs_budget: 7 });
    const { tokens, mask } = piecewise([PROMPT, ['<s>q</s>', 1], ['\n\n<o>do', 0], ['<a>y</a>', 1]]);
    const result = cut.mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics.map((item) => item.code)).toEqual(['reply-truncated']);
    expect(result.diagnostics[0].message).toContain('obs_budget');
  });

  it('without a budget the same stream is an unclosed reply that names the option to set', () => {
    const { tokens } = piecewise([PROMPT, ['<s>q</s>', 1], ['\n\n<o>do', 0], ['<a>y</a>', 1]]);
    const found = masker.mask(tokens).diagnostics.find((item) => item.code === 'unclosed-reply');
    expect(found?.message).toContain('--set obs_budget=N');
  });

  it('a token holding bytes of both sides straddles, takes the straddle value, and says which sides in order', () => {
    // One piece: "</s>" then "\n\n<o>" encodes ">\n\n" as one token across the handover.
    const tokens = encode('Q: who?\nGo:\n<s>q</s>\n\n<o>doc</o>\n\n<a>z</a>');
    const straddler = tokens.indexOf(encode('>\n\n')[0]);
    for (const straddle of [0, 1] as const) {
      const result = new Masker(SEARCH, table, { straddle }).mask(tokens);
      const found = result.diagnostics.filter((item) => item.code === 'straddling-token');
      expect(found.map((item) => item.token)).toContain(straddler);
      expect(result.mask[straddler]).toBe(straddle);
      expect(found.find((item) => item.token === straddler)!.message).toContain('action then observation');
      // ">" is the model's last byte; the reply's "\n\n" begins at byte 1 of the token.
      expect(found.find((item) => item.token === straddler)!.offset).toBe('>'.length);
    }
  });

  it('a literal the current kind does not take is passed over, and its last bytes can still begin one it does', () => {
    // The model's kinds share one automaton: inside <a>, b's close `b/|` is heard but not taken, and its `|`
    // is also the first byte of a's close `|end`.
    const overlapping = grammarOf({ name: 'overlap', prompt: { ends_after: ['Go:\n'] }, tags: { a: { open: '<a>', close: '|end' }, b: { open: '<b>', close: 'b/|' } } });
    const prompt = encode('Q: who?\nGo:\n').length;
    const inside = encode('<a>x b/|end').length;
    const result = new Masker(overlapping, table).mask(encode('Q: who?\nGo:\n<a>x b/|end more'));
    expect(result.spans.map(({ tag, start, end }) => [tag, start, end])).toEqual([['prompt', 0, prompt], ['a', prompt, prompt + inside], ['text', prompt + inside, prompt + inside + encode(' more').length]]);
  });

  it('no prompt end and no prompt_length: every token is prompt, one no-prompt-end error', () => {
    const result = masker.mask(encode('no header here <a>x</a>'));
    expect(Array.from(result.mask).every((value) => value === 0)).toBe(true);
    expect(result.diagnostics.map((item) => item.code).sort()).toEqual(['no-action', 'no-prompt-end']);
  });

  it('an id outside the vocabulary stops the rollout with its token index', () => {
    const tokens = [...encode('Q\nGo:\nab'), 9999, ...encode('c')];
    expect(() => masker.mask(tokens)).toThrow(/token 8: id 9999/);
  });
});

describe('segments', () => {
  // Spans tile because no state begins before the one it follows. A scanner step that broke this would be a
  // bug; under tests (NODE_ENV=test) it fails where it happens instead of being moved forward unseen.
  it('a state that would begin before the one it follows fails, naming both positions; the same position or later is taken', () => {
    const out = new Segments();
    out.push(0, 0, 0);
    out.push(3, 2, 1);
    out.push(3, 2, 2);
    out.push(4, 0, 3);
    expect(Array.from(out.token.subarray(0, out.count))).toEqual([0, 3, 3, 4]);
    expect(() => out.push(4, 0, 5)).not.toThrow();
    expect(() => out.push(3, 5, 6)).toThrow(/state 6 would begin at token 3 byte 5, before state 5 at token 4 byte 0/);
    expect(() => out.push(4, -1, 7)).toThrow(/before state 5/);
  });
});

describe('binding', () => {
  it('option sets share the grammar × tokenizer tables; only small arrays differ', () => {
    const a = bind(SEARCH, table, { obs_budget: 5 });
    const b = bind(SEARCH, table, { obs_budget: 7 });
    expect(a.skip).toBe(b.skip);
    expect(a.memo).toBe(b.memo);
    expect(a.isPadding).toBe(grammarTables(SEARCH, table).isPadding);
    expect(Array.from(a.budgets)).not.toEqual(Array.from(b.budgets));
  });

  it('rejects an unknown option or a value it does not take', () => {
    expect(() => bind(SEARCH, table, { obs_budjet: 5 })).toThrow(/unknown option "obs_budjet"/);
    expect(() => bind(SEARCH, table, { obs_budget: -1 })).toThrow(/obs_budget/);
  });

  it('MaskerPool keeps at most MAX_OPTION_SETS option sets, the most recently used', () => {
    const pool = new MaskerPool(SEARCH, { table } as never, {});
    const first = pool.get({ obs_budget: 1 });
    expect(pool.get({ obs_budget: 1 })).toBe(first);
    for (let budget = 2; budget <= MaskerPool.MAX_OPTION_SETS + 1; budget++) pool.get({ obs_budget: budget });
    // The oldest was dropped: asking again binds a new masker.
    expect(pool.get({ obs_budget: 1 })).not.toBe(first);
  });
});

describe('line starts and attribute bounds', () => {
  // ReAct's shape (grammars/react.json): the observation ends before the model's next `T:` line.
  const REACT = grammarOf({
    name: 'mini-react',
    prompt: { ends_after: ['Go:\n'] },
    tags: { T: { open: 'T:', line_start: true }, A: { open: 'A:', close: '\n', line_start: true } },
    handovers: [{ after_tag: 'A', replies: ['obs'] }],
    replies: { obs: { open: 'O:', ends_before: 'T:' } },
  });

  it('a reply that ends before a line-start marker ends only where the marker starts a line, not mid-line', () => {
    const stream = piecewise([PROMPT, ['T: x\nA: q\n', 1], ['O: he wrote T: here\n', 0], ['T: done', 1]]);
    expect(Array.from(new Masker(REACT, table).mask(stream.tokens).mask)).toEqual(stream.mask);
  });

  it('a tag\'s attributes may take 4,096 bytes before its ">"; at 4,097 the literal is not the tag', async () => {
    await prepareAttributeReader();
    const calls = grammarOf({
      name: 'mini-attrs',
      prompt: { ends_after: ['Go:\n'] },
      tags: { c: { open: '<c', close: '</c>', attributes: true } },
      handovers: [],
      replies: {},
    });
    const masker = new Masker(calls, table);
    const opens = (bytes: number) => {
      const { tokens } = piecewise([PROMPT, [`<c ${'a'.repeat(bytes - 1)}>x</c>`, 1]]);
      return masker.mask(tokens).spans.some((span) => span.tag === 'c');
    };
    expect(opens(4096)).toBe(true);
    expect(opens(4097)).toBe(false);
  });
});

describe('maskers in turn', () => {
  it('two maskers of one grammar, used one after the other, each give what a fresh masker gives', () => {
    const one = piecewise([PROMPT, ['<t>a</t><s>b</s>', 1], ['\n\n<o>c</o>\n\n', 0], ['<a>d</a>', 1]]);
    const two = piecewise([PROMPT, ['x', 1], ['\nBAD ACTION.\n', 0], ['<a>e</a>', 1]]);
    const alone = [new Masker(SEARCH, table).mask(one.tokens), new Masker(SEARCH, table).mask(two.tokens)];
    const a = new Masker(SEARCH, table);
    const b = new Masker(SEARCH, table);
    const first = a.mask(one.tokens.slice());
    const second = b.mask(two.tokens.slice());
    expect(first).toEqual(alone[0]);
    expect(second).toEqual(alone[1]);
    expect(Array.from(first.mask)).toEqual(one.mask);
    expect(Array.from(second.mask)).toEqual(two.mask);
  });
});

describe('maskBatch', () => {
  const masker = new Masker(SEARCH, table);
  const one = piecewise([PROMPT, ['<a>x</a>', 1]]);
  const none = piecewise([PROMPT]);
  const ids = Uint32Array.from([...one.tokens, ...none.tokens]);
  const starts = Uint32Array.of(0, one.tokens.length, ids.length);

  it('masks rollouts back to back and counts the diagnostics mask() gives, no-action included', () => {
    const mask = new Uint8Array(ids.length);
    const raised = masker.maskBatch(ids, starts, undefined, mask);
    expect(Array.from(mask)).toEqual([...one.mask, ...none.mask]);
    const single = masker.mask(none.tokens).diagnostics;
    expect(single.map((item) => item.code)).toEqual(['no-action']);
    expect(raised).toBe(single.length + masker.mask(one.tokens).diagnostics.length);
  });

  it('throws instead of truncating when the arrays do not fit together', () => {
    expect(() => masker.maskBatch(ids, starts, undefined, new Uint8Array(ids.length - 1))).toThrow(RangeError);
    expect(() => masker.maskBatch(ids, Uint32Array.of(0, ids.length + 1), undefined, new Uint8Array(ids.length + 1))).toThrow(/past the/);
    expect(() => masker.maskBatch(ids, Uint32Array.of(0, 5, 3), undefined, new Uint8Array(ids.length))).toThrow(RangeError);
    expect(() => masker.maskBatch(ids, starts, Int32Array.of(-1), new Uint8Array(ids.length))).toThrow(/prompt lengths/);
  });
});
