/**
 * `mask --jobs N` reads JSONL in chunks of whole lines, each in a buffer of its own that a worker thread takes
 * as it is (src/io/chunks.ts). Whatever the buffer size, the chunks' lines are the file's lines as a user counts
 * them (1-based, blank lines counted and skipped, a byte order mark and a CR before the newline dropped), each
 * once and in order; a line split across reads is whole in one chunk; a line of the longest kept or more is its
 * own error, the others go on; and buffers handed back are read into again, so memory stays bounded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ChunkBuffers, chunkLines, readLineChunks, type LineChunk } from '../../src/io/chunks.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-line-chunks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

interface Got { number: number; text: string; error?: string }

/** Every chunk of `text` read with buffers of `size`, and the lines a worker makes of them. */
async function readAll(text: string, size: number, maxLine: number) {
  const buffers = new ChunkBuffers(size);
  const path = join(dir, `in-${++counter}.jsonl`);
  writeFileSync(path, text);
  const chunks: Array<Omit<LineChunk, 'buffer'>> = [];
  const lines: Got[] = [];
  const seen = new Set<ArrayBuffer>();
  for await (const chunk of readLineChunks(path, buffers, maxLine)) {
    const { buffer, ...rest } = chunk;
    if (buffer.byteLength) seen.add(buffer);
    chunks.push(rest);
    for (const line of chunkLines(chunk)) lines.push({ number: line.number, text: line.text, ...(line.error ? { error: line.error } : {}) });
    // Handed back, as a worker hands back the buffer of a chunk it is done with.
    buffers.give(buffer);
  }
  return { chunks, lines, buffers: seen };
}

/** The lines as a user counts them, from the text alone. */
function expectedLines(text: string, maxLine: number): Got[] {
  const pieces = text.split('\n');
  if (pieces.at(-1) === '') pieces.pop();
  const out: Got[] = [];
  pieces.forEach((piece, i) => {
    const bytes = Buffer.byteLength(piece);
    if (bytes >= maxLine) {
      out.push({ number: i + 1, text: '', error: `the line is ${bytes.toLocaleString('en-US')} bytes, longer than the ${maxLine.toLocaleString('en-US')} a line may be: skipped` });
      return;
    }
    const line = piece.replace(/^\uFEFF/, '').replace(/\r$/, '');
    if (line.trim() !== '') out.push({ number: i + 1, text: line });
  });
  return out;
}

describe('reading JSONL in chunks of whole lines', () => {
  it('gives every line once, in order, numbered as in the file, under any buffer size', async () => {
    const lineText = fc.oneof(
      fc.stringMatching(/^[ -~é\t]{0,40}$/),
      fc.constantFrom('', '  ', '\t', '\uFEFF{"id":1}', '{"id":"é"}\r', '\r'),
    );
    await fc.assert(fc.asyncProperty(fc.array(lineText, { maxLength: 30 }), fc.boolean(), fc.integer({ min: 1, max: 64 }), async (lines, lastEnds, size) => {
      const text = lines.join('\n') + (lastEnds && lines.length ? '\n' : '');
      // The longest line kept is far past every line here: none is too long.
      const { chunks, lines: got } = await readAll(text, size, 1 << 20);
      expect(got).toEqual(expectedLines(text, 1 << 20));
      // Chunks follow each other: each starts at the line after the last one before it.
      let next = 1;
      for (const chunk of chunks) {
        expect(chunk.first).toBe(next);
        next += chunk.lines;
      }
      // Their bytes are the whole input.
      expect(chunks.reduce((sum, chunk) => sum + chunk.bytes, 0)).toBe(Buffer.byteLength(text));
    }), { numRuns: 300, seed: 0x6a6f6273 });
  });

  it('a line split across reads is whole in one chunk; long lines grow the buffer', async () => {
    // 10,000-byte lines read 4 KiB at a time: every line spans reads.
    const lines = Array.from({ length: 12 }, (_, i) => `{"id":${i},"pad":"${String(i % 10).repeat(10_000)}"}`);
    const text = `${lines.join('\n')}\n`;
    const { chunks, lines: got } = await readAll(text, 4096, 1 << 16);
    expect(got.map((line) => line.text)).toEqual(lines);
    expect(got.map((line) => line.number)).toEqual(lines.map((_, i) => i + 1));
    expect(chunks.every((chunk) => chunk.lines >= 1)).toBe(true);
  });

  it('a line of the longest kept or more is its own error, named by number; the lines around it go on', async () => {
    const maxLine = 1 << 12;
    const long = `{"id":"long","tokens":[${'1,'.repeat(5000)}1]}`;
    const exact = `{"id":"x","pad":"${'y'.repeat(maxLine - 19)}"}`; // exactly maxLine bytes: too long
    const fits = `{"id":"x","pad":"${'y'.repeat(maxLine - 20)}"}`; // one byte less: kept
    expect(Buffer.byteLength(exact)).toBe(maxLine);
    for (const text of [
      `{"id":1}\n${long}\n{"id":3}\n${exact}\n${fits}\n{"id":6}\n`,
      `${long}\n\n{"id":3}\n${long}`, // first and last (unterminated) lines too long
    ]) {
      for (const size of [64, 1000, 4096]) {
        const { lines: got } = await readAll(text, size, maxLine);
        expect(got).toEqual(expectedLines(text, maxLine));
      }
    }
  });

  it('reads into the buffers handed back: a long file needs only a few', async () => {
    const text = Array.from({ length: 2000 }, (_, i) => `{"id":${i},"tokens":[1,2,3]}`).join('\n');
    const { chunks, lines, buffers } = await readAll(text, 256, 1 << 16);
    expect(lines).toHaveLength(2000);
    expect(chunks.length).toBeGreaterThan(100);
    // One read into, one holding the next read's unfinished line: the same two, over and over.
    expect(buffers.size).toBeLessThanOrEqual(2);
  });
});
