/** The benchmark corpus as CLI input (JSONL), and a check of the CLI's output against the constructed masks. */
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import type { Corpus } from './corpus.ts';

/**
 * Write `{"id","tokens","prompt_length"?}` lines (what `tagmask mask` reads; no "mask", no "note").
 * Returns the file size in bytes.
 */
export function writeCorpusJsonl(corpus: Corpus, path: string, rollouts = corpus.rollouts): number {
  const fd = openSync(path, 'w');
  let parts: string[] = [];
  let pending = 0;
  let size = 0;
  const flush = () => {
    const buffer = Buffer.from(parts.join(''));
    writeSync(fd, buffer);
    size += buffer.length;
    parts = [];
    pending = 0;
  };
  for (let r = 0; r < rollouts; r++) {
    const sample = corpus.samples[corpus.source[r]];
    const ids = corpus.ids.subarray(corpus.starts[r], corpus.starts[r + 1]);
    const prompt = corpus.promptLengths[r] >= 0 ? `,"prompt_length":${corpus.promptLengths[r]}` : '';
    const line = `{"id":${JSON.stringify(`${sample.id}/${r}`)},"tokens":[${ids.join(',')}]${prompt}}\n`;
    parts.push(line);
    pending += line.length;
    if (pending > 1 << 23) flush();
  }
  flush();
  closeSync(fd);
  return size;
}

/** Compare every output line's "mask" with the corpus' constructed masks (line r = rollout r). */
export async function checkCliOutput(corpus: Corpus, path: string): Promise<{ lines: number; badRollouts: number; badTokens: number; errors: number }> {
  let pending: Buffer | undefined;
  let r = 0;
  let badRollouts = 0;
  let badTokens = 0;
  let errors = 0;
  const check = (text: string) => {
    const value = JSON.parse(text) as { mask?: number[]; error?: string };
    if (!value.mask) { errors++; r++; return; }
    const start = corpus.starts[r];
    const n = corpus.starts[r + 1] - start;
    let bad = value.mask.length === n ? 0 : Math.max(n, value.mask.length);
    if (!bad) for (let i = 0; i < n; i++) if (value.mask[i] !== corpus.expected[start + i]) bad++;
    if (bad) { badRollouts++; badTokens += bad; }
    r++;
  };
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 24 }) as AsyncIterable<Buffer>) {
    const buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
    let start = 0;
    for (let newline = buffer.indexOf(10, start); newline >= 0; newline = buffer.indexOf(10, start)) {
      if (newline > start) check(buffer.toString('utf8', start, newline));
      start = newline + 1;
    }
    pending = start < buffer.length ? buffer.subarray(start) : undefined;
  }
  if (pending?.length) check(pending.toString('utf8'));
  return { lines: r, badRollouts, badTokens, errors };
}
