/**
 * The HTML page's script (src/report/html.ts writes the page): it reads the page's data block (one type with the
 * writer, ../page-data.ts) and renders on demand: a filtered, paged list of rollouts and one rollout at a time.
 * It only ever writes data into the document with `textContent`, never as markup.
 *
 * Browser code: type-checked with the DOM's types (tsconfig.page.json), bundled by esbuild into one classic
 * script (scripts/build-page.js writes it into src/report/page-script.ts, which html.ts inlines under the page's
 * Content-Security-Policy hash). Tested in Chromium (test/browser/report.test.ts).
 */
import type { PageData, PageRollout } from '../page-data.ts';

const PAGE = 100;
const BLOCK = 1500;

interface Kind { action: boolean; tag: string }
interface Span { index: number; kind: Kind; start: number; end: number; attrs?: Record<string, string> }
interface Run { index: number; cls: string; start: number; end: number; given: 0 | 1; protocol: 0 | 1; direction: string; words: string; parts: string[] }
interface Diagnostic { severity: string; code: string; token: number; message: string }
type Column = 'given' | 'protocol';

/** Everything the view needs about one rollout, built when it is shown. */
interface Expanded {
  r: PageRollout;
  side: string;
  n: number;
  /** Per token, its index into PageData.pieces. */
  pieces: number[];
  /** Per token, its text (a character split across tokens appears at the token that completes it). */
  texts: string[];
  spans: Span[];
  /** Per token, the index of its span (-1: none). */
  spanOf: Int32Array;
  /** Per token, the audited mask's value (-1: none, the first token of a target-space mask); null when not audited. */
  given: Int8Array | null;
  runs: Run[];
  /** Per token, the index of its disagreement run (-1: none). */
  runOf: Int32Array;
  diagnostics: Diagnostic[];
  diagsAt: Map<number, Diagnostic[]>;
  action: number;
}

/** The page's own elements (html.ts writes them); the script cannot run without them. */
function required<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}

const holder = required<HTMLScriptElement>('tagmask-data');
const nav = required<HTMLElement>('rollouts');
const view = required<HTMLElement>('view');
const tip = required<HTMLElement>('tip');

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
function fail(message: string): void { view.textContent = `This report could not be read: ${message}`; }

function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function load(): Promise<PageData> {
  const text = holder.textContent ?? '';
  if (holder.getAttribute('data-encoding') === 'gzip-base64') {
    const stream = new Blob([base64Bytes(text.trim())]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then((json) => JSON.parse(json) as PageData);
  }
  return Promise.resolve(JSON.parse(text) as PageData);
}
load().then(start, (error: unknown) => { fail(String(error)); });

function start(data: PageData): void {
  const side = data.side;
  const digit = new Int16Array(128).fill(-1);
  for (let d = 0; d < data.alphabet.length; d++) digit[data.alphabet.charCodeAt(d)] = d;
  const special = new Set(data.special);
  const unknown = new Set(data.unknown);
  const kinds: Kind[] = data.kinds.map((key) => ({ action: key[0] === 'a', tag: key.slice(2) }));
  const codes = data.codes.map((key) => { const at = key.indexOf(':'); return { severity: key.slice(0, at), code: key.slice(at + 1) }; });
  const rollouts = data.rollouts;
  const audited = rollouts.some((r) => r.m !== undefined);
  const anyError = rollouts.some((r) => r.e !== undefined);
  const pieceCache = new Map<number, Uint8Array>();
  const [UP, DOWN] = data.directions;

  function pieceBytes(index: number): Uint8Array {
    let bytes = pieceCache.get(index);
    if (!bytes) {
      bytes = base64Bytes(data.pieces[index]);
      pieceCache.set(index, bytes);
    }
    return bytes;
  }
  function decodeTokens(code: string): number[] {
    const out: number[] = [];
    let value = 0;
    let scale = 1;
    for (let i = 0; i < code.length; i++) {
      const v = digit[code.charCodeAt(i)];
      value += (v & 31) * scale;
      if (v & 32) { scale *= 32; continue; }
      out.push(value);
      value = 0;
      scale = 1;
    }
    return out;
  }
  const directionOf = (given: 0 | 1): string => (given === 1 ? UP : DOWN);
  function countRuns(r: PageRollout, direction: string): number {
    if (!r.x) return 0;
    let n = 0;
    for (const run of r.x) if (directionOf(run[3]) === direction) n++;
    return n;
  }

  function expand(r: PageRollout): Expanded {
    const pieces = decodeTokens(r.t);
    const n = pieces.length;
    const texts: string[] = new Array(n);
    const decoder = new TextDecoder('utf-8');
    // A character split across tokens appears at the token that completes it.
    for (let i = 0; i < n; i++) texts[i] = decoder.decode(pieceBytes(pieces[i]), { stream: true });
    if (n) texts[n - 1] += decoder.decode();
    const spans: Span[] = [];
    const spanOf = new Int32Array(n).fill(-1);
    let at = 0;
    if (r.s) {
      for (let s = 0; s < r.s.length; s += 2) {
        const span: Span = { index: s / 2, kind: kinds[r.s[s]], start: at, end: at + r.s[s + 1], attrs: r.a ? r.a[s / 2] : undefined };
        for (let t = span.start; t < span.end && t < n; t++) spanOf[t] = spans.length;
        spans.push(span);
        at = span.end;
      }
    }
    let given: Int8Array | null = null;
    if (r.m) {
      given = new Int8Array(n).fill(-1);
      let p = r.f ? 1 : 0;
      let value = 0;
      for (const length of r.m) {
        for (let j = 0; j < length && p < n; j++) given[p++] = value;
        value = 1 - value;
      }
    }
    const runs: Run[] = (r.x ?? []).map((x, index) => ({
      index, cls: data.classes[x[0]], start: x[1], end: x[2], given: x[3], protocol: x[3] === 1 ? 0 : 1, direction: directionOf(x[3]),
      // What the run does, named by its parts (and its cause), as stderr says it; older data has the direction only.
      words: x[4] ?? directionOf(x[3]), parts: x[5] ?? [],
    }));
    const runOf = new Int32Array(n).fill(-1);
    runs.forEach((run, index) => { for (let t = run.start; t < run.end && t < n; t++) runOf[t] = index; });
    const diagnostics: Diagnostic[] = (r.d ?? []).map((x) => ({ severity: codes[x[0]].severity, code: codes[x[0]].code, token: x[1], message: x[2] }));
    const diagsAt = new Map<number, Diagnostic[]>();
    for (const item of diagnostics) {
      const list = diagsAt.get(item.token) ?? [];
      list.push(item);
      diagsAt.set(item.token, list);
    }
    let action = 0;
    for (const span of spans) if (span.kind.action) action += span.end - span.start;
    return { r, side: r.sd || data.side, n, pieces, texts, spans, spanOf, given, runs, runOf, diagnostics, diagsAt, action };
  }

  // ---- the list of rollouts: filters, pages, selection ----
  const filters = { diag: false, disagree: false, error: false, code: '', direction: '', pattern: '', part: '', group: '', id: '' };
  type Flag = 'diag' | 'disagree' | 'error';
  type Choice = 'code' | 'direction' | 'pattern' | 'part' | 'group';
  let matching: number[] = [];
  let page = 0;
  let current = -1;

  nav.textContent = '';
  nav.appendChild(el('h2', '', 'Rollouts'));
  const form = el('form', 'filters');
  form.setAttribute('role', 'search');
  form.setAttribute('aria-label', 'Filter rollouts');
  form.addEventListener('submit', (event) => { event.preventDefault(); });
  function checkbox(key: Flag, label: string): HTMLInputElement {
    const wrap = el('label');
    const box = el('input');
    box.type = 'checkbox';
    box.id = `filter-${key}`;
    box.addEventListener('change', () => { filters[key] = box.checked; apply(true); });
    wrap.appendChild(box);
    wrap.appendChild(document.createTextNode(label));
    form.appendChild(wrap);
    return box;
  }
  function select(key: Choice, label: string, options: Array<[value: string, text: string]>): HTMLSelectElement {
    const wrap = el('label', '', `${label} `);
    const menu = el('select');
    menu.id = `filter-${key}`;
    for (const [value, text] of options) { const item = el('option', '', text); item.value = value; menu.appendChild(item); }
    menu.addEventListener('change', () => { filters[key] = menu.value; apply(true); });
    wrap.appendChild(menu);
    form.appendChild(wrap);
    return menu;
  }
  checkbox('diag', 'has diagnostics');
  if (audited) checkbox('disagree', `disagrees (${side} vs protocol)`);
  if (anyError) checkbox('error', 'could not be masked');
  const codeNames = Array.from(new Set(codes.map((c) => c.code))).sort();
  const codeMenu = select('code', 'code', [['', 'any code'] as [string, string]].concat(codeNames.map((c): [string, string] => [c, c])));
  if (audited) select('direction', 'direction', [['', 'any direction'], [UP, `▲ ${side} ${UP}`], [DOWN, `▽ ${side} ${DOWN}`]]);
  // The patterns whole masks follow and the parts disagreeing runs hold, as found in this page's rollouts.
  const patternNames = Array.from(new Set(rollouts.flatMap((r) => (r.p ? [r.p[0]] : [])))).sort();
  const partNames = Array.from(new Set(rollouts.flatMap((r) => (r.x ?? []).flatMap((x) => x[5] ?? [])))).sort();
  const patternMenu = patternNames.length ? select('pattern', 'pattern', [['', 'any pattern'] as [string, string]].concat(patternNames.map((c): [string, string] => [c, c]))) : null;
  const partMenu = partNames.length ? select('part', 'part', [['', 'any part'] as [string, string]].concat(partNames.map((c): [string, string] => [c, c]))) : null;
  if (data.groups.length > 1) select('group', 'group', [['', 'all groups'] as [string, string]].concat(data.groups.map((g, i): [string, string] => [String(i), g])));
  const idWrap = el('label', '', 'id ');
  const idInput = el('input');
  idInput.type = 'search';
  idInput.id = 'filter-id';
  idInput.placeholder = 'contains…';
  idInput.addEventListener('input', () => { filters.id = idInput.value; apply(true); });
  idInput.addEventListener('keydown', (event) => { if (event.key === 'Enter' && matching.length) show(matching[0]); });
  idWrap.appendChild(idInput);
  form.appendChild(idWrap);
  nav.appendChild(form);
  const count = el('p');
  count.id = 'count';
  count.setAttribute('aria-live', 'polite');
  nav.appendChild(count);
  const list = el('ol');
  list.id = 'list';
  nav.appendChild(list);
  const pager = el('div', 'pager');
  const previousPage = el('button', '', '◀ page');
  previousPage.type = 'button';
  const pageLabel = el('span');
  const nextPage = el('button', '', 'page ▶');
  nextPage.type = 'button';
  previousPage.addEventListener('click', () => { if (page > 0) { page--; drawList(); } });
  nextPage.addEventListener('click', () => { if ((page + 1) * PAGE < matching.length) { page++; drawList(); } });
  pager.appendChild(previousPage);
  pager.appendChild(pageLabel);
  pager.appendChild(nextPage);
  nav.appendChild(pager);
  nav.appendChild(el('p', 'hint', 'Keys: j / k next / previous rollout; in the text, ← → Home End move between tokens.'));

  for (const [selector, key, menu] of [['.pattern-filter', 'pattern', patternMenu], ['.part-filter', 'part', partMenu]] as const) {
    for (const button of document.querySelectorAll<HTMLElement>(selector)) {
      button.addEventListener('click', () => {
        filters[key] = button.getAttribute(`data-${key}`) ?? '';
        if (menu) menu.value = filters[key];
        apply(true);
        nav.scrollIntoView({ block: 'start' });
      });
    }
  }
  for (const button of document.querySelectorAll<HTMLElement>('.code-filter')) {
    button.addEventListener('click', () => {
      filters.code = button.getAttribute('data-code') ?? '';
      codeMenu.value = filters.code;
      apply(true);
      nav.scrollIntoView({ block: 'start' });
    });
  }

  function passes(r: PageRollout): boolean {
    if (filters.diag && !(r.d && r.d.length)) return false;
    if (filters.disagree && !(r.x && r.x.length)) return false;
    if (filters.error && r.e === undefined) return false;
    if (filters.code && !(r.d && r.d.some((x) => codes[x[0]].code === filters.code))) return false;
    if (filters.direction && !countRuns(r, filters.direction)) return false;
    if (filters.pattern && !(r.p && r.p[0] === filters.pattern)) return false;
    if (filters.part && !(r.x && r.x.some((x) => (x[5] ?? []).includes(filters.part)))) return false;
    if (filters.group && String(r.g) !== filters.group) return false;
    if (filters.id && r.i.toLowerCase().indexOf(filters.id.toLowerCase()) < 0) return false;
    return true;
  }
  function apply(resetPage: boolean): void {
    matching = [];
    for (let i = 0; i < rollouts.length; i++) if (passes(rollouts[i])) matching.push(i);
    if (resetPage) page = Math.max(0, Math.floor(Math.max(0, matching.indexOf(current)) / PAGE));
    if (matching.indexOf(current) < 0) page = 0;
    drawList();
  }
  function badges(r: PageRollout): HTMLElement {
    const box = el('span', 'badges');
    if (r.e !== undefined) box.appendChild(el('span', 'b-err', '✖ error'));
    if (r.d && r.d.length) { const b = el('span', 'b-diag', ` ⚑${r.d.length}`); b.title = `${r.d.length} diagnostic(s)`; box.appendChild(b); }
    const up = countRuns(r, UP);
    const down = countRuns(r, DOWN);
    const named = r.sd || side;
    if (up) { const u = el('span', 'b-up', ` ▲${up}`); u.title = `${up} run(s): the ${named} mask ${UP}`; box.appendChild(u); }
    if (down) { const w = el('span', 'b-down', ` ▽${down}`); w.title = `${down} run(s): the ${named} mask ${DOWN}`; box.appendChild(w); }
    if (r.p) { const p = el('span', 'b-pattern', ` ${r.p[0]}`); p.title = `the ${named} mask follows a pattern: ${r.p[1]}`; box.appendChild(p); }
    return box;
  }
  function drawList(): void {
    list.textContent = '';
    const from = page * PAGE;
    const to = Math.min(matching.length, from + PAGE);
    list.start = from + 1;
    for (let k = from; k < to; k++) {
      const index = matching[k];
      const r = rollouts[index];
      const item = el('li');
      const button = el('button');
      button.type = 'button';
      button.setAttribute('data-index', String(index));
      if (index === current) button.setAttribute('aria-current', 'true');
      const name = el('span', 'rid', r.i === '' ? '(no id)' : r.i);
      if (r.g !== undefined && data.groups.length > 1) {
        // the same id can come from several suites: say which
        const label = el('span', 'rlabel');
        label.appendChild(name);
        label.appendChild(el('span', 'grp', data.groups[r.g]));
        button.appendChild(label);
      } else button.appendChild(name);
      button.appendChild(badges(r));
      button.addEventListener('click', onPick);
      item.appendChild(button);
      list.appendChild(item);
    }
    count.textContent = `${matching.length} of ${rollouts.length} rollouts`;
    const pages = Math.max(1, Math.ceil(matching.length / PAGE));
    pageLabel.textContent = `page ${page + 1} of ${pages}`;
    previousPage.disabled = page === 0;
    nextPage.disabled = page + 1 >= pages;
  }
  function onPick(event: Event): void { show(Number((event.currentTarget as HTMLElement).getAttribute('data-index'))); }
  function step(delta: number): void {
    const at = matching.indexOf(current);
    const next = at < 0 ? matching[0] : matching[at + delta];
    if (next !== undefined) show(next);
  }

  // ---- one rollout ----
  let shown: Expanded | null = null;
  function show(index: number): void {
    if (!(index >= 0 && index < rollouts.length)) return;
    current = index;
    if (location.hash !== `#rollout=${index}`) history.replaceState(null, '', `#rollout=${index}`);
    const at = matching.indexOf(index);
    if (at >= 0) page = Math.floor(at / PAGE);
    drawList();
    shown = expand(rollouts[index]);
    drawRollout(shown);
  }

  function legend(x: Expanded): HTMLElement {
    const side = x.side;
    const box = el('div', 'legend');
    box.setAttribute('aria-label', 'Legend');
    function item(className: string, sample: string, text: string): void {
      const wrap = el('span');
      const sw = el('span', `k sw ${className}`, sample);
      sw.setAttribute('aria-hidden', 'true');
      wrap.appendChild(sw);
      wrap.appendChild(document.createTextNode(text));
      box.appendChild(wrap);
    }
    item('a', 'abc', 'action (model, trained; underlined)');
    item('o', 'abc', 'observation (prompt, environment; not trained)');
    item('a sp', '<|x|>', 'special token');
    item('a st', 'a|b', 'straddling token (hatched)');
    item('a dg', 'abc', 'diagnostic (wavy underline)');
    if (x.given) {
      item('o up first', 'abc', `${side} 1, protocol 0: ${UP} (solid outline)`);
      item('a dn first', 'abc', `${side} 0, protocol 1: ${DOWN} (dashed outline)`);
    }
    return box;
  }

  function drawRollout(x: Expanded): void {
    const r = x.r;
    const side = x.side;
    view.textContent = '';
    const head = el('div', 'rollnav');
    const back = el('button', '', '◀ previous');
    back.type = 'button';
    back.addEventListener('click', () => { step(-1); });
    const forward = el('button', '', 'next ▶');
    forward.type = 'button';
    forward.addEventListener('click', () => { step(1); });
    const at = matching.indexOf(current);
    back.disabled = at <= 0;
    forward.disabled = at < 0 || at + 1 >= matching.length;
    head.appendChild(back);
    head.appendChild(forward);
    head.appendChild(el('span', 'hint', at >= 0 ? `${at + 1} of ${matching.length} shown by the filters` : 'not among the filtered rollouts'));
    view.appendChild(head);
    const title = el('h2', '', `Rollout ${r.i === '' ? '(no id)' : r.i}`);
    title.id = 'rollout-title';
    view.appendChild(title);
    const meta: string[] = [];
    if (r.g !== undefined) meta.push(data.groups[r.g]);
    if (r.src) meta.push(r.src);
    meta.push(`${x.n} tokens`);
    if (r.s) meta.push(`${x.action} action (${x.n ? ((100 * x.action) / x.n).toFixed(1) : '0.0'}%)`, `${x.spans.length} spans`);
    if (r.d) meta.push(`${r.d.length} diagnostic(s)`);
    if (x.given) meta.push(x.runs.length ? `${x.runs.length} disagreement(s) with the ${side} mask` : `agrees with the ${side} mask`);
    view.appendChild(el('p', 'meta', meta.join(' · ')));
    if (r.e !== undefined) {
      const error = el('p', 'error', `Could not be masked: ${r.e}`);
      error.setAttribute('role', 'note');
      view.appendChild(error);
    }
    for (const note of r.n ?? []) view.appendChild(el('p', 'note', note));
    if (r.p) view.appendChild(el('p', 'note pattern', `The ${side} mask follows a pattern (${r.p[0]}): ${r.p[1]}`));
    if (r.h) view.appendChild(el('p', 'note option-hint', `With ${r.h.map((flag) => `--set ${flag}`).join(' or ')} these masks agree.`));
    if (!x.n) return;
    view.appendChild(legend(x));

    const columns: HTMLElement[] = [];
    if (x.given) {
      if (r.f) view.appendChild(el('p', 'note', `The ${side} mask has ${x.n - 1} values for ${x.n} tokens: it is read in target space (frame "targets": value i is for token i + 1), so token 0 has no ${side} value. Token ranges count tokens.`));
      view.appendChild(el('h3', '', `Disagreements: ${side} vs protocol (${x.runs.length})`));
      if (!x.runs.length) view.appendChild(el('p', 'hint', `The ${side} mask equals the protocol's on every token.`));
      else {
        const jumps = el('ul', 'jumps disagreement-list');
        for (const run of x.runs) {
          const li = el('li');
          const button = el('button', `jump dir-${run.given === 1 ? 'up' : 'down'}`);
          button.type = 'button';
          button.setAttribute('data-direction', run.direction);
          button.textContent = `${run.given === 1 ? '▲ ' : '▽ '}tokens [${run.start}, ${run.end}) ${run.cls}: ${side} ${run.given}, protocol ${run.protocol}: the ${side} mask ${run.words} · ${JSON.stringify(textOf(x, run.start, run.end, 60))}`;
          button.addEventListener('click', () => { focusToken(Math.min(run.start, x.n - 1), 'protocol'); });
          li.appendChild(button);
          jumps.appendChild(li);
        }
        view.appendChild(jumps);
      }
    }
    if (x.diagnostics.length) {
      view.appendChild(el('h3', '', `Diagnostics (${x.diagnostics.length})`));
      const diagList = el('ul', 'jumps diagnostic-list');
      for (const item of x.diagnostics) {
        const li = el('li');
        const button = el('button', 'jump');
        button.type = 'button';
        button.setAttribute('data-code', item.code);
        button.textContent = `⚑ ${item.severity} ${item.code} at token ${item.token}: ${item.message}`;
        button.addEventListener('click', () => { focusToken(Math.min(item.token, x.n - 1), 'protocol'); });
        li.appendChild(button);
        diagList.appendChild(li);
      }
      view.appendChild(diagList);
    }
    const box = el('div', x.given ? 'columns' : 'single');
    if (x.given) columns.push(drawColumn(x, 'given'));
    if (r.s) columns.push(drawColumn(x, 'protocol'));
    for (const column of columns) box.appendChild(column);
    view.appendChild(box);
  }

  function textOf(x: Expanded, start: number, end: number, limit: number): string {
    const text = x.texts.slice(start, end).join('');
    return text.length > limit ? `${text.slice(0, limit)}…` : text;
  }
  const attributesText = (attrs: Record<string, string>): string => Object.keys(attrs).map((key) => `${key}=${JSON.stringify(attrs[key])}`).join(' ');

  /** The rollout's text with one mask on it: the protocol's spans (with their tags) or the audited mask. */
  function drawColumn(x: Expanded, which: Column): HTMLElement {
    const side = x.side;
    const column = el('section', `column column-${which}`);
    const label = which === 'given' ? `${side} mask (under audit)` : 'protocol mask (tagmask: roles and tags)';
    const heading = el('h3', '', x.given ? label : 'Text, roles and tags');
    heading.id = `heading-${which}`;
    column.appendChild(heading);
    const text = el('div', 'text');
    text.setAttribute('role', 'group');
    text.setAttribute('aria-labelledby', `heading-${which}`);
    text.setAttribute('data-column', which);
    // Long texts go into blocks that end at a line break, each laid out only when near the viewport
    // (content-visibility): a rollout of 60,000 tokens then costs little more than building its elements.
    const fragment = document.createDocumentFragment();
    let block = el('div', 'block');
    let inBlock = 0;
    let lastValue = -2;
    for (let i = 0; i < x.n; i++) {
      let action: 'a' | 'o' | 'n';
      if (which === 'given') {
        const value = x.given![i];
        if (value !== lastValue) {
          block.appendChild(el('span', `lab ${value === 1 ? 'a' : 'o'}`, value < 0 ? `no ${side} value` : `${side} ${value}`));
          lastValue = value;
        }
        action = value === 1 ? 'a' : value === 0 ? 'o' : 'n';
      } else {
        const span = x.spans[x.spanOf[i]] as Span | undefined;
        if (span && span.start === i) {
          let tag = span.kind.tag;
          if (span.attrs) tag += ` ${attributesText(span.attrs)}`;
          block.appendChild(el('span', `lab ${span.kind.action ? 'a' : 'o'}`, `${span.kind.action ? 'action' : 'observation'} · ${tag}`));
        }
        action = span ? (span.kind.action ? 'a' : 'o') : 'n';
      }
      block.appendChild(tokenElement(x, i, action));
      inBlock++;
      const tokenText = x.texts[i];
      if ((inBlock >= BLOCK && tokenText.charCodeAt(tokenText.length - 1) === 10) || inBlock >= 4 * BLOCK) {
        fragment.appendChild(block);
        block = el('div', 'block');
        inBlock = 0;
      }
    }
    if (inBlock || !fragment.childNodes.length) fragment.appendChild(block);
    text.appendChild(fragment);
    const first = text.querySelector<HTMLElement>('.k');
    if (first) first.tabIndex = 0;
    text.addEventListener('mouseover', onHover);
    text.addEventListener('mouseout', onLeave);
    text.addEventListener('focusin', onFocus);
    text.addEventListener('focusout', onLeave);
    text.addEventListener('keydown', onKey);
    column.appendChild(text);
    return column;
  }

  function tokenElement(x: Expanded, i: number, role: 'a' | 'o' | 'n'): HTMLElement {
    const piece = x.pieces[i];
    let className = `k ${role}`;
    if (special.has(piece)) className += ' sp';
    const diagnostics = x.diagsAt.get(i);
    if (diagnostics) {
      className += ' dg';
      if (diagnostics.some((d) => d.code === 'straddling-token')) className += ' st';
    }
    const run = x.runOf[i];
    if (run >= 0) {
      className += x.runs[run].given === 1 ? ' up' : ' dn';
      if (x.runs[run].start === i) className += ' first';
    }
    const text = x.texts[i];
    if (text === '') className += ' empty';
    const node = el('span', className);
    node.setAttribute('data-i', String(i));
    node.tabIndex = -1;
    if (text === '') { node.textContent = unknown.has(piece) ? '�' : '·'; return node; }
    const lines = text.split('\n');
    for (let l = 0; l < lines.length; l++) {
      if (l > 0) { node.appendChild(el('span', 'nl', '↵')); node.appendChild(document.createTextNode('\n')); }
      if (lines[l]) node.appendChild(document.createTextNode(lines[l]));
    }
    return node;
  }

  function hex(bytes: Uint8Array): string {
    const out: string[] = [];
    for (let i = 0; i < bytes.length && i < 48; i++) out.push((bytes[i] < 16 ? '0' : '') + bytes[i].toString(16));
    return out.join(' ') + (bytes.length > 48 ? ' …' : '');
  }
  function describe(x: Expanded, i: number): HTMLElement {
    const side = x.side;
    const list = el('dl');
    function row(term: string, value: string, className?: string): void {
      list.appendChild(el('dt', '', term));
      list.appendChild(el('dd', className ?? '', value));
    }
    const piece = x.pieces[i];
    const bytes = pieceBytes(piece);
    row('token', `${i} of ${x.n} · id ${data.ids[piece]}${special.has(piece) ? ' · special' : ''}${unknown.has(piece) ? ' · not in the vocabulary' : ''}`);
    row('piece', JSON.stringify(new TextDecoder('utf-8').decode(bytes)));
    row('bytes', `${hex(bytes)} (${bytes.length})`);
    const span = x.spans[x.spanOf[i]] as Span | undefined;
    if (span) {
      const attrs = span.attrs ? ` ${attributesText(span.attrs)}` : '';
      row('span', `${span.kind.action ? 'action' : 'observation'} · ${span.kind.tag}${attrs} · tokens [${span.start}, ${span.end})`);
    }
    if (x.given) {
      const value = x.given[i];
      row('masks', `${side} ${value < 0 ? '–' : value} · protocol ${span ? (span.kind.action ? 1 : 0) : '–'}`);
      const run = x.runs[x.runOf[i]] as Run | undefined;
      if (run) row('disagreement', `${run.given === 1 ? '▲ ' : '▽ '}the ${side} mask ${run.words} (${run.cls}, tokens [${run.start}, ${run.end}))`, run.given === 1 ? 'dir-up' : 'dir-down');
    }
    for (const item of x.diagsAt.get(i) ?? []) row('diagnostic', `⚑ ${item.severity} ${item.code}: ${item.message}`);
    return list;
  }

  let hovered: HTMLElement | null = null;
  function tokenAt(target: EventTarget | null): HTMLElement | null {
    return target instanceof Element ? target.closest<HTMLElement>('.k[data-i]') : null;
  }
  /** The text column a token is in. */
  const textOfToken = (node: HTMLElement): HTMLElement => node.closest<HTMLElement>('.text')!;
  function place(node: HTMLElement): void {
    const rect = node.getBoundingClientRect();
    tip.hidden = false;
    const width = tip.offsetWidth;
    const height = tip.offsetHeight;
    const left = Math.min(Math.max(4, rect.left), window.innerWidth - width - 4);
    let top = rect.bottom + 6;
    if (top + height > window.innerHeight - 4) top = Math.max(4, rect.top - height - 6);
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }
  function inspect(node: HTMLElement): void {
    if (!shown) return;
    tip.textContent = '';
    tip.appendChild(describe(shown, Number(node.getAttribute('data-i'))));
    place(node);
    if (hovered && hovered !== node) hovered.classList.remove('hover');
    hovered = node;
    node.classList.add('hover');
    node.setAttribute('aria-describedby', 'tip');
  }
  function onHover(event: MouseEvent): void { const node = tokenAt(event.target); if (node) inspect(node); }
  function onFocus(event: FocusEvent): void {
    const node = tokenAt(event.target);
    if (!node) return;
    const old = textOfToken(node).querySelector<HTMLElement>('.k[tabindex="0"]');
    if (old && old !== node) old.tabIndex = -1;
    node.tabIndex = 0;
    inspect(node);
  }
  function onLeave(event: MouseEvent | FocusEvent): void {
    const node = tokenAt(event.target);
    if (!node) return;
    const next = event.relatedTarget && tokenAt(event.relatedTarget);
    if (next) return;
    const active = tokenAt(document.activeElement);
    if (event.type === 'mouseout' && active) { inspect(active); return; }
    node.classList.remove('hover');
    node.removeAttribute('aria-describedby');
    tip.hidden = true;
  }
  function onKey(event: KeyboardEvent): void {
    const node = tokenAt(event.target);
    if (!node) return;
    let target: HTMLElement | null = null;
    if (event.key === 'ArrowRight' || event.key === 'ArrowDown') target = nextToken(node, 1);
    else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') target = nextToken(node, -1);
    else if (event.key === 'Home') target = textOfToken(node).querySelector<HTMLElement>('.k');
    else if (event.key === 'End') { const all = textOfToken(node).querySelectorAll<HTMLElement>('.k'); target = all[all.length - 1]; }
    else if (event.key === 'Escape') { tip.hidden = true; return; }
    if (target) { event.preventDefault(); target.focus(); }
  }
  function nextToken(node: HTMLElement, delta: number): HTMLElement | null {
    const i = Number(node.getAttribute('data-i')) + delta;
    return textOfToken(node).querySelector<HTMLElement>(`.k[data-i="${i}"]`);
  }
  function focusToken(i: number, which: Column): void {
    let focusNode: HTMLElement | null = null;
    for (const text of view.querySelectorAll<HTMLElement>('.text')) {
      const node = text.querySelector<HTMLElement>(`.k[data-i="${i}"]`);
      if (!node) continue;
      node.classList.remove('flash');
      void node.offsetWidth; // a reflow between removing and adding the class restarts its animation
      node.classList.add('flash');
      if (text.getAttribute('data-column') === which || !focusNode) focusNode = node;
    }
    if (focusNode) { focusNode.scrollIntoView({ block: 'center' }); focusNode.focus({ preventScroll: true }); }
  }

  document.addEventListener('keydown', (event) => {
    const tag = event.target instanceof Element ? event.target.tagName : undefined;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === 'j') step(1);
    else if (event.key === 'k') step(-1);
  });
  window.addEventListener('scroll', () => { if (!tip.hidden && hovered) place(hovered); }, { passive: true });
  window.addEventListener('hashchange', fromHash);
  function fromHash(): boolean {
    const match = /^#rollout=(\d+)$/.exec(location.hash);
    if (!match) return false;
    show(Number(match[1]));
    return true;
  }
  apply(true);
  if (!fromHash() && matching.length) show(matching[0]);
  document.documentElement.setAttribute('data-ready', 'true');
}
