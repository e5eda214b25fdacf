/**
 * The byte-table cache is named by the digest of the tokenizer files' content; a warm start remembers that digest
 * for files whose stat (device, inode, size, modification and change times) is unchanged, so it need not read
 * and hash an 11-26 MB tokenizer.json every run. What a user relies on: a changed file is never served the old
 * table, whatever its size and times say, and a file changed moments ago is hashed every time.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../src/index.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const TUTORIAL_TOKENIZER = join(ROOT, 'samples/tutorial-404/tokenizer.json');
const dir = mkdtempSync(join(tmpdir(), 'tagmask-digest-memo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pieceOf = (table: { pieces: Uint8Array; offsets: Uint32Array }, id: number) => new TextDecoder().decode(table.pieces.subarray(table.offsets[id], table.offsets[id + 1]));
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).update('-').digest('hex');
const digestFiles = (cache: string) => readdirSync(cache).filter((name) => name.startsWith('digest-'));

async function withCache<T>(cache: string, body: () => Promise<T>): Promise<T> {
  const previous = process.env.TAGMASK_CACHE;
  process.env.TAGMASK_CACHE = cache;
  try {
    return await body();
  } finally {
    if (previous === undefined) delete process.env.TAGMASK_CACHE;
    else process.env.TAGMASK_CACHE = previous;
  }
}

describe('the remembered digest of a tokenizer file', () => {
  it('is remembered only for settled files, used while stat is unchanged, and not used once the content changed under the same size and times', { timeout: 30_000 }, async () => {
    const folder = mkdtempSync(join(dir, 'tok-'));
    const cache = mkdtempSync(join(dir, 'cache-'));
    const file = join(folder, 'tokenizer.json');
    copyFileSync(TUTORIAL_TOKENIZER, file);
    // A modification time in whole seconds, so that setting it back later gives exactly the same one.
    const mtime = new Date('2025-06-01T12:00:00Z');
    utimesSync(file, mtime, mtime);
    await withCache(cache, async () => {
      // Just written: its digest is computed, never remembered (it may change again within the timestamps' granularity).
      expect(pieceOf((await loadTokenizer(file)).table, 0)).toBe('<unk>');
      expect(digestFiles(cache)).toEqual([]);

      // Settled (changed more than 2 s ago): remembered, with the digest of the bytes (computed here independently).
      await new Promise((resolve) => setTimeout(resolve, 2100));
      expect(pieceOf((await loadTokenizer(file)).table, 0)).toBe('<unk>');
      const [memoName] = digestFiles(cache);
      expect(memoName).toBeDefined();
      const memo = JSON.parse(readFileSync(join(cache, memoName), 'utf8'));
      expect(memo.source).toBe(sha(readFileSync(file)));
      expect(statSync(join(cache, memoName)).mode & 0o022).toBe(0);

      // Used while stat is unchanged: a memo pointing at another table (as a writer of the cache could plant) is
      // believed, which shows the file is not read again. (The cache is trusted: README, "A cache is trusted".)
      const otherJson = readFileSync(file, 'utf8').replace('"<unk>"', '"<UNK>"');
      const otherSource = sha(Buffer.from(otherJson));
      // Build the other content's table into the cache under its own digest (a copy of it, loaded once).
      const otherFolder = mkdtempSync(join(dir, 'tok-'));
      writeFileSync(join(otherFolder, 'tokenizer.json'), otherJson);
      expect(pieceOf((await loadTokenizer(join(otherFolder, 'tokenizer.json'))).table, 0)).toBe('<UNK>');
      writeFileSync(join(cache, memoName), JSON.stringify({ ...memo, source: otherSource }), { mode: 0o644 });
      expect(pieceOf((await loadTokenizer(file)).table, 0)).toBe('<UNK>');
      writeFileSync(join(cache, memoName), JSON.stringify(memo), { mode: 0o644 });
      expect(pieceOf((await loadTokenizer(file)).table, 0)).toBe('<unk>');

      // The content changes, same length, modification time set back, and settles: the change time moved (a
      // user cannot set it), so the remembered digest is not used; the new content's table is.
      const before = statSync(file, { bigint: true });
      writeFileSync(file, otherJson);
      utimesSync(file, mtime, mtime);
      const after = statSync(file, { bigint: true });
      expect([after.ino, after.size, after.mtimeNs]).toEqual([before.ino, before.size, before.mtimeNs]);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      expect(pieceOf((await loadTokenizer(file)).table, 0)).toBe('<UNK>');
      expect(JSON.parse(readFileSync(join(cache, memoName), 'utf8')).source).toBe(otherSource);
    });
  });
});
