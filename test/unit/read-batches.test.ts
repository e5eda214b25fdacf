/**
 * readJsonlBatches (src/io/jsonl.ts), the CLI's JSONL reader: a read under way while the caller works on the
 * lines before it. What a user relies on: every line of the file, whole and in order, whatever its length
 * against the read size; a line longer than the read grows the buffer and is read to its end, and the lines after
 * it are read too (a read into the outgrown buffer once got 0 bytes, taken for the end of the file: the long
 * line was cut there, named not valid JSON, and the rest of the file was never read).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonlBatches } from '../../src/io/jsonl.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-read-batches-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function readAll(path: string, chunk: number, maxLine?: number): Promise<Array<{ number: number; text: string; error?: string }>> {
  const out: Array<{ number: number; text: string; error?: string }> = [];
  for await (const batch of readJsonlBatches(path, maxLine, chunk)) for (const line of batch) out.push({ number: line.number, text: line.bytes.toString('utf8'), ...(line.error ? { error: line.error } : {}) });
  return out;
}

describe('readJsonlBatches', () => {
  it('reads every line whole and in order when lines are many times longer than a read', async () => {
    // Line lengths from 1 byte to 40 reads' worth, in a seeded order.
    const lines: string[] = [];
    let seed = 7;
    for (let k = 0; k < 300; k++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const length = k % 10 === 0 ? 1 + (seed % 2600) : 1 + (seed % 90);
      lines.push(JSON.stringify({ id: k, pad: 'x'.repeat(length) }));
    }
    const path = join(dir, 'long.jsonl');
    writeFileSync(path, `${lines.join('\n')}\n`);
    for (const chunk of [64, 100, 1000]) {
      const got = await readAll(path, chunk);
      expect(got.map((line) => line.text), `reads of ${chunk} bytes`).toEqual(lines);
      expect(got.map((line) => line.number)).toEqual(lines.map((_, i) => i + 1));
    }
  });

  it('a line past the longest kept is that line\'s error; the lines after it are read', async () => {
    const lines = ['{"id":1}', `{"id":2,"pad":"${'y'.repeat(5000)}"}`, '{"id":3}', `{"id":4,"pad":"${'z'.repeat(300)}"}`, '{"id":5}'];
    const path = join(dir, 'too-long.jsonl');
    writeFileSync(path, lines.join('\n'));
    const got = await readAll(path, 64, 1024);
    expect(got.map((line) => line.number)).toEqual([1, 2, 3, 4, 5]);
    expect(got[1].error).toMatch(/longer than the 1,024 a line may be/);
    expect(got.filter((line) => !line.error).map((line) => line.text)).toEqual([lines[0], lines[2], lines[3], lines[4]]);
  });
});
