/**
 * Input that tries to be what it is not: prototype names (`constructor`, `toString`, `__proto__`) as
 * options, tags and replies; numbers that do not fit (a budget of 2^32 + 1 in an Int32Array, a default of
 * 2.5, a straddle of 7); tokenizer.json files with string, negative or sparse ids; a byte-table cache that
 * is corrupted or stale; grammar paths that are empty, folders or endless devices. Each gets the same kind
 * of located error as any other wrong name or number, never a crash and never a silent wrong answer.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildByteTable, checkGrammarFile, loadGrammar, loadTokenizer, Masker } from '../../src/index.ts';
import { resolveGrammarPath } from '../../src/grammar/load.ts';
import { LineSplitter, readJsonlGz } from '../../src/io/jsonl.ts';
import { gzipSync } from 'node:zlib';
import { optionSets } from '../../src/commands/args.ts';
import { readOptions } from '../../src/io/shapes.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-hostile-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ROOT = new URL('../../', import.meta.url).pathname;
const searchR1 = JSON.parse(readFileSync(join(ROOT, 'grammars/search-r1.json'), 'utf8'));
const TUTORIAL_TOKENIZER = join(ROOT, 'samples/tutorial-404/tokenizer.json');

let counter = 0;
function grammarFile(edit: (grammar: any) => void): string {
  const grammar = structuredClone(searchR1);
  edit(grammar);
  const file = join(dir, `grammar-${++counter}.json`);
  writeFileSync(file, JSON.stringify(grammar, null, 2));
  return file;
}
const errorsOf = (file: string) => checkGrammarFile(file).issues.filter((issue) => issue.severity === 'error');

/** `body` with a copy of the tutorial's tokenizer.json in a fresh folder and TAGMASK_CACHE a fresh folder, restored after. */
async function withTutorialCopy(body: (file: string, cache: string) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(dir, 'tok-'));
  const cache = mkdtempSync(join(dir, 'cache-'));
  const file = join(folder, 'tokenizer.json');
  copyFileSync(TUTORIAL_TOKENIZER, file);
  const previous = process.env.TAGMASK_CACHE;
  process.env.TAGMASK_CACHE = cache;
  try {
    await body(file, cache);
  } finally {
    if (previous === undefined) delete process.env.TAGMASK_CACHE;
    else process.env.TAGMASK_CACHE = previous;
  }
}

describe('prototype names are names like any other', () => {
  const compiled = loadGrammar('search-r1');
  const table = buildByteTable(JSON.parse(readFileSync(TUTORIAL_TOKENIZER, 'utf8')));

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'])('option %s (from --set or a line) is an unknown option', (name) => {
    expect(() => new Masker(compiled, table, optionSets([`${name}=1`]))).toThrow(`unknown option "${name}"`);
    expect(() => new Masker(compiled, table, readOptions(JSON.parse(`{"${name}": 1}`)))).toThrow(`unknown option "${name}"`);
  });

  it('--set __proto__=1 keeps the name (it is not swallowed as a prototype)', () => {
    expect(Object.keys(optionSets(['__proto__=1']))).toEqual(['__proto__']);
  });

  it('a grammar naming an undeclared constructor / toString / __proto__ gets a located unknown-tag or unknown-reply error', () => {
    const cases: Array<[(grammar: any) => void, string, string]> = [
      [(g) => { g.tags.think.contains = ['constructor']; }, 'unknown-tag', 'tags.think.contains[0]'],
      [(g) => { g.handovers[0].replies = ['toString']; }, 'unknown-reply', 'handovers[0].replies[0]'],
      [(g) => { g.handovers[0] = { after_tag: '__proto__', replies: [] }; }, 'unknown-tag', 'handovers[0].after_tag'],
      [(g) => { g.replies.information.max_tokens = '$constructor'; }, 'unknown-option', 'replies.information.max_tokens'],
    ];
    for (const [edit, code, path] of cases) {
      const errors = errorsOf(grammarFile(edit));
      expect(errors.map((issue) => [issue.code, issue.path])).toEqual([[code, path]]);
      expect(errors[0].place.line).toBeGreaterThan(1);
    }
  });
});

describe('numbers are what they say', () => {
  const compiled = loadGrammar('search-r1');
  const table = buildByteTable(JSON.parse(readFileSync(TUTORIAL_TOKENIZER, 'utf8')));
  const bind = (options: Record<string, number | null>) => new Masker(compiled, table, options);

  it('budgets fit an Int32Array: 2^31 - 1 is taken, 2^31 and 2^32 + 1 are errors (they used to wrap: 2^32 + 1 acted as 1)', () => {
    expect(bind({ max_obs_tokens: 2 ** 31 - 1 }).bound.budgets[0]).toBe(2 ** 31 - 1);
    for (const value of [2 ** 31, 2 ** 32 + 1, 2.5, 0, -1]) expect(() => bind({ max_obs_tokens: value }), String(value)).toThrow(/max_obs_tokens: expected null or an integer from 1 to 2147483647/);
    for (const value of [7, 2, -1, 0.5]) expect(() => bind({ after_end: value })).toThrow(/after_end: expected 0 or 1/);
  });

  it('grammar defaults and values are checked where they are written', () => {
    const cases: Array<[any, string]> = [
      [{ max_obs_tokens: { default: 2.5 } }, 'options.max_obs_tokens.default'],
      [{ max_obs_tokens: { default: -1 } }, 'options.max_obs_tokens.default'],
      [{ max_obs_tokens: { default: 4294967297 } }, 'options.max_obs_tokens.default'],
      [{ after_end: { default: 7 } }, 'options.after_end.default'],
      [{ straddle: { default: 1, values: [0, 1, 2] } }, 'options.straddle.values[2]'],
      [{ max_obs_tokens: { default: 1, values: [1, 0.5] } }, 'options.max_obs_tokens.values[1]'],
      [{ max_obs_tokens: { default: 1, values: [] } }, 'options.max_obs_tokens.values'],
    ];
    for (const [options, path] of cases) {
      const errors = errorsOf(grammarFile((g) => { g.options = options; }));
      expect(errors.map((issue) => issue.path), JSON.stringify(options)).toEqual([path]);
    }
    const budget = errorsOf(grammarFile((g) => { g.replies.information.max_tokens = 4294967297; }));
    expect(budget.map((issue) => issue.path)).toEqual(['replies.information.max_tokens']);
  });
});

describe('tokenizer.json ids and the byte-table cache', () => {
  const tutorial = () => JSON.parse(readFileSync(TUTORIAL_TOKENIZER, 'utf8'));

  it('string, negative, fractional or sparse ids are rejected with the entry named', () => {
    const bad: Array<[(json: any) => void, RegExp]> = [
      [(json) => { json.model.vocab[Object.keys(json.model.vocab)[1]] = '5'; }, /model\.vocab\[".*"\]: id "5" is not an integer/],
      [(json) => { json.model.vocab[Object.keys(json.model.vocab)[1]] = -3; }, /id -3 is not an integer/],
      [(json) => { json.model.vocab[Object.keys(json.model.vocab)[1]] = 1.5; }, /id 1\.5 is not an integer/],
      [(json) => { json.added_tokens[1].id = '201'; }, /added_tokens\[1\]: id "201" is not an integer/],
      [(json) => { json.model.vocab[Object.keys(json.model.vocab)[1]] = 2_000_000_000; }, /ids are sparse/],
    ];
    for (const [edit, message] of bad) {
      const json = tutorial();
      edit(json);
      expect(() => buildByteTable(json)).toThrow(message);
    }
    // The tutorial's own toy vocabulary (16 tokens over ids 0..601) is sparse but small: built.
    expect(buildByteTable(tutorial()).size).toBe(602);
  });

  it('a corrupted cache is rebuilt, never used; a cache built from other bytes (same size, time and inode) is not used', () => withTutorialCopy(async (file, cache) => {
    const fresh = (await loadTokenizer(file)).table;
    const [cached] = readdirSync(cache);
    const bytes = readFileSync(join(cache, cached));
    // Flip one byte of the pieces (the end of the file).
    bytes[bytes.length - 2] ^= 0xff;
    writeFileSync(join(cache, cached), bytes);
    const again = (await loadTokenizer(file)).table;
    expect(Buffer.from(again.pieces).equals(Buffer.from(fresh.pieces))).toBe(true);
    expect(readFileSync(join(cache, cached)).equals(bytes)).toBe(false); // rewritten

    // Same length, same modification time, same inode: only the bytes differ ("<unk>" → "<UNK>").
    const { mtime, atime } = statSync(file);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"<unk>"', '"<UNK>"'));
    utimesSync(file, atime, mtime);
    const changed = (await loadTokenizer(file)).table;
    expect(new TextDecoder().decode(changed.pieces.subarray(changed.offsets[0], changed.offsets[1]))).toBe('<UNK>');
  }));
});

describe('issue 20: tokenizer paths and a cache someone else could write', () => {
  it('a tokenizer.json that is a folder is named, never a bare EISDIR', async () => {
    const model = mkdtempSync(join(dir, 'model-'));
    mkdirSync(join(model, 'tokenizer.json'));
    await expect(loadTokenizer(model)).rejects.toThrow(`${join(model, 'tokenizer.json')}: is a folder`);
  });

  it('the cache is named by the content digest of the tokenizer files, and a cache file others may write is never read', () => withTutorialCopy(async (file, cache) => {
    const fresh = (await loadTokenizer(file)).table;
    const [cached] = readdirSync(cache);
    // The name is the SHA-256 of tokenizer.json's bytes and a marker for "no tokenizer_config.json" (independently computed).
    expect(cached).toBe(`${createHash('sha256').update(readFileSync(file)).update('-').digest('hex').slice(0, 40)}.bin`);
    expect(statSync(join(cache, cached)).mode & 0o022).toBe(0);
    // Forge it: other pieces for token 0, with every digest made consistent again, as a writer of a shared cache could.
    const bytes = readFileSync(join(cache, cached));
    const headerLength = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8'));
    let at = 4 + headerLength;
    at += (4 - (at % 4)) % 4;
    const payload = bytes.subarray(at);
    const offsetsBytes = (header.size + 1) * 4;
    const pieces = payload.subarray(offsetsBytes + header.size);
    pieces[0] ^= 0x20; // "<unk>" → "\x1cunk>"
    header.payload = createHash('sha256').update(payload.subarray(0, offsetsBytes)).update(payload.subarray(offsetsBytes, offsetsBytes + header.size)).update(pieces).digest('hex');
    const newHeader = Buffer.from(JSON.stringify(header));
    const length = Buffer.alloc(4);
    length.writeUInt32LE(newHeader.length);
    const pad = Buffer.alloc((4 - ((4 + newHeader.length) % 4)) % 4);
    const forged = Buffer.concat([length, newHeader, pad, payload]);
    writeFileSync(join(cache, cached), forged, { mode: 0o666 });
    chmodSync(join(cache, cached), 0o666);
    const again = (await loadTokenizer(file)).table;
    expect(Buffer.from(again.pieces).equals(Buffer.from(fresh.pieces))).toBe(true);
    // A link planted in the cache, pointing at the forged bytes, is not read either.
    const elsewhere = join(dir, `forged-${++counter}.bin`);
    writeFileSync(elsewhere, forged, { mode: 0o644 });
    rmSync(join(cache, cached));
    symlinkSync(elsewhere, join(cache, cached));
    const linked = (await loadTokenizer(file)).table;
    expect(Buffer.from(linked.pieces).equals(Buffer.from(fresh.pieces))).toBe(true);
    expect(readFileSync(elsewhere).equals(forged)).toBe(true); // the link's target is never written either
  }));
});

describe('issue 20: a line longer than a line may be is that line\'s error, never held', () => {
  const line = (id: number) => JSON.stringify({ id, tokens: [1, 2, 3] });
  const huge = `{"id":"huge","tokens":[${'1,'.repeat(50_000)}1]}`;
  const lines = [line(1), huge, line(3), huge, line(5)];
  const expectRead = (got: Array<{ number: number; error?: string; text: string }>) => {
    expect(got.map((item) => item.number)).toEqual([1, 2, 3, 4, 5]);
    expect(got.filter((item) => item.error).map((item) => item.number)).toEqual([2, 4]);
    expect(got[1].error).toMatch(/^the line is 100,\d{3} bytes, longer than the 65,536 a line may be: skipped$/);
    expect(got.filter((item) => !item.error).map((item) => item.text)).toEqual([line(1), line(3), line(5)]);
  };

  it('plain JSONL, in every chunking: the lines before and after go on', () => {
    for (const chunk of [7, 1000, 1 << 12, 1 << 16]) {
      const splitter = new LineSplitter(chunk, 1 << 16);
      const data = Buffer.from(`${lines.join('\n')}\n`);
      const got: Array<{ number: number; error?: string; text: string }> = [];
      let at = 0;
      for (;;) {
        splitter.release();
        const into = splitter.space();
        const read = Math.min(data.length - at, splitter.buffer.length - into, chunk);
        data.copy(splitter.buffer, into, at, at + read);
        at += read;
        for (const item of splitter.lines(read)) got.push({ number: item.number, error: item.error, text: item.text });
        if (read === 0) break;
        expect(splitter.buffer.length).toBeLessThanOrEqual(Math.max(chunk, 1 << 16));
      }
      expectRead(got);
    }
  });

  it('gzip: the same, whether the long line ends the file or not', async () => {
    for (const text of [`${lines.join('\n')}\n`, `${lines.join('\n')}\n${huge}`]) {
      const path = join(dir, `long-${++counter}.jsonl.gz`);
      writeFileSync(path, gzipSync(text));
      const got: Array<{ number: number; error?: string; text: string }> = [];
      for await (const item of readJsonlGz(path, 1 << 16)) got.push({ number: item.number, error: item.error, text: item.text });
      expectRead(got.slice(0, 5));
      if (text.endsWith(huge)) expect(got[5].error).toMatch(/longer than the 65,536/);
    }
  });
});

describe('grammar paths', () => {
  it("'' , a folder and /dev/zero are clear errors, never EISDIR and never a hang", () => {
    expect(() => resolveGrammarPath('')).toThrow(/no grammar given/);
    expect(() => resolveGrammarPath(dir)).toThrow(/is a folder/);
    expect(() => resolveGrammarPath('/dev/zero')).toThrow(/not a regular file/);
  });
});
