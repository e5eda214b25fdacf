/**
 * The style and script of the HTML report (src/report/html.ts), kept as strings so the page is one file
 * and the package ships no asset to locate at run time. The script reads the page's data block and renders
 * on demand: a filtered, paged list of rollouts and one rollout at a time. It only ever writes data into the
 * document with `textContent`, never as markup. It is tested in Chromium (test/browser/report.test.ts).
 */

export const PAGE_STYLE = String.raw`
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1d1f23; --muted: #5b6168; --line: #c9d1d9; --panel: #f5f7f9; --focus: #1a5fb4;
  --act-bg: #d5e8fa; --act-line: #005a9c; --act-fg: #0b2540;
  --obs-bg: #f7ead2; --obs-fg: #4a3b1d;
  --none-bg: #e6e6e6;
  --up: #b3420b; --down: #6d3fc0; --diag: #8a6100; --strad: rgba(0, 0, 0, 0.28);
  --chip-bg: rgba(255, 255, 255, 0.65); --chip-line: #6b7280;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #16181c; --fg: #e6e8eb; --muted: #a2a9b1; --line: #3a4048; --panel: #1f2328; --focus: #8cc4ff;
    --act-bg: #12395c; --act-line: #6cb6ff; --act-fg: #e3f0ff;
    --obs-bg: #3b2f17; --obs-fg: #f1e2c4;
    --none-bg: #333;
    --up: #ff9a62; --down: #c4a6ff; --diag: #f2cc4d; --strad: rgba(255, 255, 255, 0.3);
    --chip-bg: rgba(0, 0, 0, 0.35); --chip-line: #9aa3ad;
  }
}
* { box-sizing: border-box; }
body { margin: 0; padding: 0 1rem 2rem; background: var(--bg); color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 1.3rem; margin: 0.8rem 0 0.2rem; }
h2 { font-size: 1.1rem; margin: 0.6rem 0; }
h3 { font-size: 1rem; margin: 0.8rem 0 0.3rem; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.command { margin: 0 0 0.5rem; color: var(--muted); overflow-wrap: anywhere; }
button { font: inherit; color: inherit; background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: 0.15rem 0.5rem; cursor: pointer; }
button:hover { border-color: var(--focus); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
#summary .tables { display: flex; flex-wrap: wrap; gap: 0.8rem 2rem; align-items: flex-start; }
#summary .totals td:last-child { max-width: 24rem; }
#summary caption { white-space: nowrap; }
table { border-collapse: collapse; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.2rem; }
th, td { border-bottom: 1px solid var(--line); padding: 0.2rem 0.6rem 0.2rem 0; text-align: left; vertical-align: top; }
td:nth-child(n+2) { font-variant-numeric: tabular-nums; }
.layout { display: grid; grid-template-columns: minmax(15rem, 21rem) minmax(0, 1fr); gap: 1.2rem; margin-top: 1rem; }
@media (max-width: 800px) { .layout { grid-template-columns: 1fr; } }
#rollouts { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto; padding: 0.5rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
.filters { display: grid; gap: 0.3rem; margin-bottom: 0.5rem; }
.filters label { display: flex; gap: 0.4rem; align-items: center; min-width: 0; }
.filters select, .filters input[type=search] { font: inherit; flex: 1 1 auto; width: 0; min-width: 0; background: var(--bg); color: var(--fg); border: 1px solid var(--line); border-radius: 4px; }
#count { color: var(--muted); margin: 0.3rem 0; }
#list { list-style: none; padding: 0; margin: 0; }
#list li button { width: 100%; text-align: left; display: flex; justify-content: space-between; gap: 0.5rem; border: 1px solid transparent; background: transparent; }
#list li button[aria-current=true] { background: var(--act-bg); border-color: var(--act-line); }
#list .rid, #list .grp { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#list .rlabel { min-width: 0; }
#list .grp { font-size: 0.8em; color: var(--muted); }
.badges { white-space: nowrap; color: var(--muted); }
.b-up { color: var(--up); } .b-down { color: var(--down); } .b-diag { color: var(--diag); } .b-err { color: var(--up); font-weight: 700; }
.pager { display: flex; justify-content: space-between; align-items: center; margin-top: 0.4rem; gap: 0.3rem; }
.rollnav { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
.meta { color: var(--muted); margin: 0.2rem 0 0.5rem; }
.error { border-left: 4px solid var(--up); padding: 0.3rem 0.6rem; background: var(--panel); }
.note { border-left: 4px solid var(--line); padding: 0.2rem 0.6rem; margin: 0.3rem 0; }
.legend { display: flex; flex-wrap: wrap; gap: 0.4rem 1rem; margin: 0.5rem 0; font-size: 0.9rem; }
.legend > span { display: inline-flex; gap: 0.3rem; align-items: center; }
.jumps { list-style: none; padding: 0; margin: 0; max-height: 14rem; overflow: auto; }
.jumps li { margin: 0.15rem 0; }
.jumps button { text-align: left; width: 100%; }
.columns { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; }
@media (max-width: 1100px) { .columns { grid-template-columns: 1fr; } }
.column h3 { position: sticky; top: 0; background: var(--bg); padding: 0.2rem 0; z-index: 1; }
.text { font: 13px/1.9 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: anywhere; border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem; }
.text .block { content-visibility: auto; contain-intrinsic-size: auto 30em; }
.k { border-radius: 2px; cursor: default; }
.k.a { background-color: var(--act-bg); color: var(--act-fg); box-shadow: inset 0 -2px 0 var(--act-line); }
.k.o { background-color: var(--obs-bg); color: var(--obs-fg); }
.k.n { background-color: var(--none-bg); }
.k.sp { border: 1px solid var(--chip-line); border-radius: 0.4em; padding: 0 0.2em; margin: 0 0.05em; font-size: 0.85em; background-image: linear-gradient(var(--chip-bg), var(--chip-bg)); }
.k.st { background-image: repeating-linear-gradient(135deg, transparent 0 3px, var(--strad) 3px 5px); outline: 1px dotted var(--fg); }
.k.dg { text-decoration: underline wavy var(--diag); text-decoration-thickness: 1.5px; text-underline-offset: 4px; }
.k.up { outline: 2px solid var(--up); outline-offset: -1px; }
.k.dn { outline: 2px dashed var(--down); outline-offset: -1px; }
.k.up.first::before { content: "▲"; color: var(--up); font-size: 0.75em; vertical-align: super; }
.k.dn.first::before { content: "▽"; color: var(--down); font-size: 0.75em; vertical-align: super; }
.k.flash { animation: flash 1.2s ease-out 1; }
@keyframes flash { from { box-shadow: 0 0 0 4px var(--focus); } to { box-shadow: 0 0 0 0 transparent; } }
.k:focus, .k.hover { outline: 3px solid var(--focus); outline-offset: 1px; position: relative; z-index: 2; }
.k .nl { opacity: 0.55; }
.k.empty { opacity: 0.6; }
.lab { font: 600 10px/1 system-ui, sans-serif; border-radius: 3px; padding: 1px 4px; margin: 0 2px 0 6px; vertical-align: 2px; border: 1px solid; white-space: nowrap; }
.lab.a { color: var(--act-line); border-color: var(--act-line); }
.lab.o { color: var(--muted); border-color: var(--line); border-style: dashed; }
.lab.a::before { content: "▶ "; }
.lab.o::before { content: "◇ "; }
.sw { display: inline-block; min-width: 2.2em; text-align: center; font: 12px/1.6 ui-monospace, monospace; }
.dir-up { color: var(--up); } .dir-down { color: var(--down); }
#tip { position: fixed; z-index: 10; max-width: min(34rem, 92vw); background: var(--panel); color: var(--fg); border: 1px solid var(--line); border-radius: 6px; box-shadow: 0 4px 16px rgba(0, 0, 0, 0.25); padding: 0.5rem 0.7rem; font-size: 13px; pointer-events: none; }
#tip dl { display: grid; grid-template-columns: auto 1fr; gap: 0.1rem 0.7rem; margin: 0; }
#tip dt { color: var(--muted); }
#tip dd { margin: 0; overflow-wrap: anywhere; }
.hint { color: var(--muted); font-size: 0.9rem; }
`;

export const PAGE_SCRIPT = String.raw`(function () {
  'use strict';
  var holder = document.getElementById('tagmask-data');
  var nav = document.getElementById('rollouts');
  var view = document.getElementById('view');
  var tip = document.getElementById('tip');
  var PAGE = 100;
  var BLOCK = 1500;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fail(message) { view.textContent = 'This report could not be read: ' + message; }

  function load() {
    if (holder.getAttribute('data-encoding') === 'gzip-base64') {
      var binary = atob(holder.textContent.trim());
      var bytes = new Uint8Array(binary.length);
      for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      return new Response(stream).text().then(JSON.parse);
    }
    return Promise.resolve(JSON.parse(holder.textContent));
  }
  load().then(start, function (error) { fail(String(error)); });

  function start(data) {
    var side = data.side;
    var digit = new Int16Array(128).fill(-1);
    for (var d = 0; d < data.alphabet.length; d++) digit[data.alphabet.charCodeAt(d)] = d;
    var special = new Set(data.special);
    var unknown = new Set(data.unknown);
    var kinds = data.kinds.map(function (key) { return { action: key[0] === 'a', tag: key.slice(2) }; });
    var codes = data.codes.map(function (key) { var at = key.indexOf(':'); return { severity: key.slice(0, at), code: key.slice(at + 1) }; });
    var rollouts = data.rollouts;
    var audited = rollouts.some(function (r) { return r.m !== undefined; });
    var anyError = rollouts.some(function (r) { return r.e !== undefined; });
    var pieceCache = new Map();
    var UP = data.directions[0];
    var DOWN = data.directions[1];

    function pieceBytes(index) {
      var bytes = pieceCache.get(index);
      if (!bytes) {
        var binary = atob(data.pieces[index]);
        bytes = new Uint8Array(binary.length);
        for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
        pieceCache.set(index, bytes);
      }
      return bytes;
    }
    function decodeTokens(code) {
      var out = [];
      var value = 0;
      var scale = 1;
      for (var i = 0; i < code.length; i++) {
        var v = digit[code.charCodeAt(i)];
        value += (v & 31) * scale;
        if (v & 32) { scale *= 32; continue; }
        out.push(value);
        value = 0;
        scale = 1;
      }
      return out;
    }
    function countRuns(r, direction) {
      if (!r.x) return 0;
      var n = 0;
      for (var i = 0; i < r.x.length; i++) if ((r.x[i][3] === 1 ? UP : DOWN) === direction) n++;
      return n;
    }

    /** Everything the view needs about one rollout, built when it is shown. */
    function expand(r) {
      var pieces = decodeTokens(r.t);
      var n = pieces.length;
      var texts = new Array(n);
      var decoder = new TextDecoder('utf-8');
      // A character split across tokens appears at the token that completes it.
      for (var i = 0; i < n; i++) texts[i] = decoder.decode(pieceBytes(pieces[i]), { stream: true });
      if (n) texts[n - 1] += decoder.decode();
      var spans = [];
      var spanOf = new Int32Array(n).fill(-1);
      var at = 0;
      if (r.s) {
        for (var s = 0; s < r.s.length; s += 2) {
          var span = { index: s / 2, kind: kinds[r.s[s]], start: at, end: at + r.s[s + 1], attrs: r.a ? r.a[s / 2] : undefined };
          for (var t = span.start; t < span.end && t < n; t++) spanOf[t] = spans.length;
          spans.push(span);
          at = span.end;
        }
      }
      var given = null;
      if (r.m) {
        given = new Int8Array(n).fill(-1);
        var p = r.f ? 1 : 0;
        var value = 0;
        for (var k = 0; k < r.m.length; k++) {
          for (var j = 0; j < r.m[k] && p < n; j++) given[p++] = value;
          value = 1 - value;
        }
      }
      var runs = (r.x || []).map(function (x, index) {
        return { index: index, cls: data.classes[x[0]], start: x[1], end: x[2], given: x[3], protocol: 1 - x[3], direction: x[3] === 1 ? UP : DOWN };
      });
      var runOf = new Int32Array(n).fill(-1);
      runs.forEach(function (run, index) { for (var t = run.start; t < run.end && t < n; t++) runOf[t] = index; });
      var diagnostics = (r.d || []).map(function (x) { return { severity: codes[x[0]].severity, code: codes[x[0]].code, token: x[1], message: x[2] }; });
      var diagsAt = new Map();
      diagnostics.forEach(function (item) { var list = diagsAt.get(item.token) || []; list.push(item); diagsAt.set(item.token, list); });
      var action = 0;
      spans.forEach(function (span) { if (span.kind.action) action += span.end - span.start; });
      return { r: r, side: r.sd || data.side, n: n, pieces: pieces, texts: texts, spans: spans, spanOf: spanOf, given: given, runs: runs, runOf: runOf, diagnostics: diagnostics, diagsAt: diagsAt, action: action };
    }

    // ---- the list of rollouts: filters, pages, selection ----
    var filters = { diag: false, disagree: false, error: false, code: '', direction: '', group: '', id: '' };
    var matching = [];
    var page = 0;
    var current = -1;

    nav.textContent = '';
    nav.appendChild(el('h2', '', 'Rollouts'));
    var form = el('form', 'filters');
    form.setAttribute('role', 'search');
    form.setAttribute('aria-label', 'Filter rollouts');
    form.addEventListener('submit', function (event) { event.preventDefault(); });
    function checkbox(key, label) {
      var wrap = el('label');
      var box = el('input');
      box.type = 'checkbox';
      box.id = 'filter-' + key;
      box.addEventListener('change', function () { filters[key] = box.checked; apply(true); });
      wrap.appendChild(box);
      wrap.appendChild(document.createTextNode(label));
      form.appendChild(wrap);
      return box;
    }
    function select(key, label, options) {
      var wrap = el('label', '', label + ' ');
      var menu = el('select');
      menu.id = 'filter-' + key;
      options.forEach(function (option) { var item = el('option', '', option[1]); item.value = option[0]; menu.appendChild(item); });
      menu.addEventListener('change', function () { filters[key] = menu.value; apply(true); });
      wrap.appendChild(menu);
      form.appendChild(wrap);
      return menu;
    }
    checkbox('diag', 'has diagnostics');
    if (audited) checkbox('disagree', 'disagrees (' + side + ' vs protocol)');
    if (anyError) checkbox('error', 'could not be masked');
    var codeNames = Array.from(new Set(codes.map(function (c) { return c.code; }))).sort();
    var codeMenu = select('code', 'code', [['', 'any code']].concat(codeNames.map(function (c) { return [c, c]; })));
    if (audited) select('direction', 'direction', [['', 'any direction'], [UP, '▲ ' + side + ' ' + UP], [DOWN, '▽ ' + side + ' ' + DOWN]]);
    if (data.groups.length > 1) select('group', 'group', [['', 'all groups']].concat(data.groups.map(function (g, i) { return [String(i), g]; })));
    var idWrap = el('label', '', 'id ');
    var idInput = el('input');
    idInput.type = 'search';
    idInput.id = 'filter-id';
    idInput.placeholder = 'contains…';
    idInput.addEventListener('input', function () { filters.id = idInput.value; apply(true); });
    idInput.addEventListener('keydown', function (event) { if (event.key === 'Enter' && matching.length) show(matching[0]); });
    idWrap.appendChild(idInput);
    form.appendChild(idWrap);
    nav.appendChild(form);
    var count = el('p');
    count.id = 'count';
    count.setAttribute('aria-live', 'polite');
    nav.appendChild(count);
    var list = el('ol');
    list.id = 'list';
    nav.appendChild(list);
    var pager = el('div', 'pager');
    var previousPage = el('button', '', '◀ page');
    previousPage.type = 'button';
    var pageLabel = el('span');
    var nextPage = el('button', '', 'page ▶');
    nextPage.type = 'button';
    previousPage.addEventListener('click', function () { if (page > 0) { page--; drawList(); } });
    nextPage.addEventListener('click', function () { if ((page + 1) * PAGE < matching.length) { page++; drawList(); } });
    pager.appendChild(previousPage);
    pager.appendChild(pageLabel);
    pager.appendChild(nextPage);
    nav.appendChild(pager);
    nav.appendChild(el('p', 'hint', 'Keys: j / k next / previous rollout; in the text, ← → Home End move between tokens.'));

    Array.prototype.forEach.call(document.querySelectorAll('.code-filter'), function (button) {
      button.addEventListener('click', function () {
        filters.code = button.getAttribute('data-code');
        codeMenu.value = filters.code;
        apply(true);
        nav.scrollIntoView({ block: 'start' });
      });
    });

    function passes(r) {
      if (filters.diag && !(r.d && r.d.length)) return false;
      if (filters.disagree && !(r.x && r.x.length)) return false;
      if (filters.error && r.e === undefined) return false;
      if (filters.code && !(r.d && r.d.some(function (x) { return codes[x[0]].code === filters.code; }))) return false;
      if (filters.direction && !countRuns(r, filters.direction)) return false;
      if (filters.group && String(r.g) !== filters.group) return false;
      if (filters.id && r.i.toLowerCase().indexOf(filters.id.toLowerCase()) < 0) return false;
      return true;
    }
    function apply(resetPage) {
      matching = [];
      for (var i = 0; i < rollouts.length; i++) if (passes(rollouts[i])) matching.push(i);
      if (resetPage) page = Math.max(0, Math.floor(Math.max(0, matching.indexOf(current)) / PAGE));
      if (matching.indexOf(current) < 0) page = 0;
      drawList();
    }
    function badges(r) {
      var box = el('span', 'badges');
      if (r.e !== undefined) box.appendChild(el('span', 'b-err', '✖ error'));
      if (r.d && r.d.length) { var b = el('span', 'b-diag', ' ⚑' + r.d.length); b.title = r.d.length + ' diagnostic(s)'; box.appendChild(b); }
      var up = countRuns(r, UP);
      var down = countRuns(r, DOWN);
      var named = r.sd || side;
      if (up) { var u = el('span', 'b-up', ' ▲' + up); u.title = up + ' run(s): the ' + named + ' mask ' + UP; box.appendChild(u); }
      if (down) { var w = el('span', 'b-down', ' ▽' + down); w.title = down + ' run(s): the ' + named + ' mask ' + DOWN; box.appendChild(w); }
      return box;
    }
    function drawList() {
      list.textContent = '';
      var from = page * PAGE;
      var to = Math.min(matching.length, from + PAGE);
      list.start = from + 1;
      for (var k = from; k < to; k++) {
        var index = matching[k];
        var r = rollouts[index];
        var item = el('li');
        var button = el('button');
        button.type = 'button';
        button.setAttribute('data-index', String(index));
        if (index === current) button.setAttribute('aria-current', 'true');
        var name = el('span', 'rid', r.i === '' ? '(no id)' : r.i);
        if (r.g !== undefined && data.groups.length > 1) {
          // the same id can come from several suites: say which
          var label = el('span', 'rlabel');
          label.appendChild(name);
          label.appendChild(el('span', 'grp', data.groups[r.g]));
          button.appendChild(label);
        } else button.appendChild(name);
        button.appendChild(badges(r));
        button.addEventListener('click', onPick);
        item.appendChild(button);
        list.appendChild(item);
      }
      count.textContent = matching.length + ' of ' + rollouts.length + ' rollouts';
      var pages = Math.max(1, Math.ceil(matching.length / PAGE));
      pageLabel.textContent = 'page ' + (page + 1) + ' of ' + pages;
      previousPage.disabled = page === 0;
      nextPage.disabled = page + 1 >= pages;
    }
    function onPick(event) { show(Number(event.currentTarget.getAttribute('data-index'))); }
    function step(delta) {
      var at = matching.indexOf(current);
      var next = at < 0 ? matching[0] : matching[at + delta];
      if (next !== undefined) show(next);
    }

    // ---- one rollout ----
    var shown = null;
    function show(index) {
      if (!(index >= 0 && index < rollouts.length)) return;
      current = index;
      if (location.hash !== '#rollout=' + index) history.replaceState(null, '', '#rollout=' + index);
      var at = matching.indexOf(index);
      if (at >= 0) page = Math.floor(at / PAGE);
      drawList();
      shown = expand(rollouts[index]);
      drawRollout(shown);
    }

    function legend(x) {
      var side = x.side;
      var box = el('div', 'legend');
      box.setAttribute('aria-label', 'Legend');
      function item(className, sample, text) {
        var wrap = el('span');
        var sw = el('span', 'k sw ' + className, sample);
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
        item('o up first', 'abc', side + ' 1, protocol 0: ' + UP + ' (solid outline)');
        item('a dn first', 'abc', side + ' 0, protocol 1: ' + DOWN + ' (dashed outline)');
      }
      return box;
    }

    function drawRollout(x) {
      var r = x.r;
      var side = x.side;
      view.textContent = '';
      var head = el('div', 'rollnav');
      var back = el('button', '', '◀ previous');
      back.type = 'button';
      back.addEventListener('click', function () { step(-1); });
      var forward = el('button', '', 'next ▶');
      forward.type = 'button';
      forward.addEventListener('click', function () { step(1); });
      var at = matching.indexOf(current);
      back.disabled = at <= 0;
      forward.disabled = at < 0 || at + 1 >= matching.length;
      head.appendChild(back);
      head.appendChild(forward);
      head.appendChild(el('span', 'hint', at >= 0 ? (at + 1) + ' of ' + matching.length + ' shown by the filters' : 'not among the filtered rollouts'));
      view.appendChild(head);
      var title = el('h2', '', 'Rollout ' + (r.i === '' ? '(no id)' : r.i));
      title.id = 'rollout-title';
      view.appendChild(title);
      var meta = [];
      if (r.g !== undefined) meta.push(data.groups[r.g]);
      if (r.src) meta.push(r.src);
      meta.push(x.n + ' tokens');
      if (r.s) meta.push(x.action + ' action (' + (x.n ? (100 * x.action / x.n).toFixed(1) : '0.0') + '%)', x.spans.length + ' spans');
      if (r.d) meta.push(r.d.length + ' diagnostic(s)');
      if (x.given) meta.push(x.runs.length ? x.runs.length + ' disagreement(s) with the ' + side + ' mask' : 'agrees with the ' + side + ' mask');
      view.appendChild(el('p', 'meta', meta.join(' · ')));
      if (r.e !== undefined) {
        var error = el('p', 'error', 'Could not be masked: ' + r.e);
        error.setAttribute('role', 'note');
        view.appendChild(error);
      }
      (r.n || []).forEach(function (note) { view.appendChild(el('p', 'note', note)); });
      if (!x.n) return;
      view.appendChild(legend(x));

      var columns = [];
      if (x.given) {
        if (r.f) view.appendChild(el('p', 'note', 'The ' + side + ' mask has ' + (x.n - 1) + ' values for ' + x.n + ' tokens: it is read in target space (frame "targets": value i is for token i + 1), so token 0 has no ' + side + ' value. Token ranges count tokens.'));
        var jumpHead = el('h3', '', 'Disagreements: ' + side + ' vs protocol (' + x.runs.length + ')');
        view.appendChild(jumpHead);
        if (!x.runs.length) view.appendChild(el('p', 'hint', 'The ' + side + ' mask equals the protocol\'s on every token.'));
        else {
          var jumps = el('ul', 'jumps disagreement-list');
          x.runs.forEach(function (run) {
            var li = el('li');
            var button = el('button', 'jump dir-' + (run.given === 1 ? 'up' : 'down'));
            button.type = 'button';
            button.setAttribute('data-direction', run.direction);
            button.textContent = (run.given === 1 ? '▲ ' : '▽ ') + 'tokens [' + run.start + ', ' + run.end + ') ' + run.cls + ': ' + side + ' ' + run.given + ', protocol ' + run.protocol + ': the ' + side + ' mask ' + run.direction + ' · ' + JSON.stringify(textOf(x, run.start, run.end, 60));
            button.addEventListener('click', function () { focusToken(run.start, 'protocol'); });
            li.appendChild(button);
            jumps.appendChild(li);
          });
          view.appendChild(jumps);
        }
      }
      if (x.diagnostics.length) {
        view.appendChild(el('h3', '', 'Diagnostics (' + x.diagnostics.length + ')'));
        var diagList = el('ul', 'jumps diagnostic-list');
        x.diagnostics.forEach(function (item) {
          var li = el('li');
          var button = el('button', 'jump');
          button.type = 'button';
          button.setAttribute('data-code', item.code);
          button.textContent = '⚑ ' + item.severity + ' ' + item.code + ' at token ' + item.token + ': ' + item.message;
          button.addEventListener('click', function () { focusToken(Math.min(item.token, x.n - 1), 'protocol'); });
          li.appendChild(button);
          diagList.appendChild(li);
        });
        view.appendChild(diagList);
      }
      var box = el('div', x.given ? 'columns' : 'single');
      if (x.given) columns.push(drawColumn(x, 'given'));
      if (r.s) columns.push(drawColumn(x, 'protocol'));
      columns.forEach(function (column) { box.appendChild(column); });
      view.appendChild(box);
    }

    function textOf(x, start, end, limit) {
      var text = x.texts.slice(start, end).join('');
      return text.length > limit ? text.slice(0, limit) + '…' : text;
    }

    /** The rollout's text with one mask on it: the protocol's spans (with their tags) or the audited mask. */
    function drawColumn(x, which) {
      var side = x.side;
      var column = el('section', 'column column-' + which);
      var label = which === 'given' ? side + ' mask (under audit)' : 'protocol mask (tagmask: roles and tags)';
      var heading = el('h3', '', x.given ? label : 'Text, roles and tags');
      heading.id = 'heading-' + which;
      column.appendChild(heading);
      var text = el('div', 'text');
      text.setAttribute('role', 'group');
      text.setAttribute('aria-labelledby', 'heading-' + which);
      text.setAttribute('data-column', which);
      // Long texts go into blocks that end at a line break, each laid out only when near the viewport
      // (content-visibility): a rollout of 60,000 tokens then costs little more than building its elements.
      var fragment = document.createDocumentFragment();
      var block = el('div', 'block');
      var inBlock = 0;
      var lastValue = -2;
      for (var i = 0; i < x.n; i++) {
        var action;
        if (which === 'given') {
          var value = x.given[i];
          if (value !== lastValue) {
            var mark = el('span', 'lab ' + (value === 1 ? 'a' : 'o'), value < 0 ? 'no ' + side + ' value' : side + ' ' + value);
            block.appendChild(mark);
            lastValue = value;
          }
          action = value === 1 ? 'a' : value === 0 ? 'o' : 'n';
        } else {
          var span = x.spans[x.spanOf[i]];
          if (span && span.start === i) {
            var tag = span.kind.tag;
            if (span.attrs) tag += ' ' + Object.keys(span.attrs).map(function (key) { return key + '=' + JSON.stringify(span.attrs[key]); }).join(' ');
            var lab = el('span', 'lab ' + (span.kind.action ? 'a' : 'o'), (span.kind.action ? 'action' : 'observation') + ' · ' + tag);
            block.appendChild(lab);
          }
          action = span ? (span.kind.action ? 'a' : 'o') : 'n';
        }
        block.appendChild(tokenElement(x, i, action));
        inBlock++;
        var tokenText = x.texts[i];
        if ((inBlock >= BLOCK && tokenText.charCodeAt(tokenText.length - 1) === 10) || inBlock >= 4 * BLOCK) {
          fragment.appendChild(block);
          block = el('div', 'block');
          inBlock = 0;
        }
      }
      if (inBlock || !fragment.childNodes.length) fragment.appendChild(block);
      text.appendChild(fragment);
      var first = text.querySelector('.k');
      if (first) first.tabIndex = 0;
      text.addEventListener('mouseover', onHover);
      text.addEventListener('mouseout', onLeave);
      text.addEventListener('focusin', onFocus);
      text.addEventListener('focusout', onLeave);
      text.addEventListener('keydown', onKey);
      column.appendChild(text);
      return column;
    }

    function tokenElement(x, i, role) {
      var piece = x.pieces[i];
      var className = 'k ' + role;
      if (special.has(piece)) className += ' sp';
      if (x.diagsAt.has(i)) {
        className += ' dg';
        if (x.diagsAt.get(i).some(function (d) { return d.code === 'straddling-token'; })) className += ' st';
      }
      var run = x.runOf[i];
      if (run >= 0) {
        className += x.runs[run].given === 1 ? ' up' : ' dn';
        if (x.runs[run].start === i) className += ' first';
      }
      var text = x.texts[i];
      if (text === '') className += ' empty';
      var node = el('span', className);
      node.setAttribute('data-i', String(i));
      node.tabIndex = -1;
      if (text === '') { node.textContent = unknown.has(piece) ? '�' : '·'; return node; }
      var lines = text.split('\n');
      for (var l = 0; l < lines.length; l++) {
        if (l > 0) { node.appendChild(el('span', 'nl', '↵')); node.appendChild(document.createTextNode('\n')); }
        if (lines[l]) node.appendChild(document.createTextNode(lines[l]));
      }
      return node;
    }

    function hex(bytes) {
      var out = [];
      for (var i = 0; i < bytes.length && i < 48; i++) out.push((bytes[i] < 16 ? '0' : '') + bytes[i].toString(16));
      return out.join(' ') + (bytes.length > 48 ? ' …' : '');
    }
    function describe(x, i, which) {
      var side = x.side;
      var list = el('dl');
      function row(term, value, className) {
        list.appendChild(el('dt', '', term));
        list.appendChild(el('dd', className || '', value));
      }
      var piece = x.pieces[i];
      var bytes = pieceBytes(piece);
      row('token', i + ' of ' + x.n + ' · id ' + data.ids[piece] + (special.has(piece) ? ' · special' : '') + (unknown.has(piece) ? ' · not in the vocabulary' : ''));
      row('piece', JSON.stringify(new TextDecoder('utf-8').decode(bytes)));
      row('bytes', hex(bytes) + ' (' + bytes.length + ')');
      var span = x.spans[x.spanOf[i]];
      if (span) {
        var attrs = span.attrs ? ' ' + Object.keys(span.attrs).map(function (key) { return key + '=' + JSON.stringify(span.attrs[key]); }).join(' ') : '';
        row('span', (span.kind.action ? 'action' : 'observation') + ' · ' + span.kind.tag + attrs + ' · tokens [' + span.start + ', ' + span.end + ')');
      }
      if (x.given) {
        var value = x.given[i];
        row('masks', side + ' ' + (value < 0 ? '–' : value) + ' · protocol ' + (span ? (span.kind.action ? 1 : 0) : '–'));
        var run = x.runs[x.runOf[i]];
        if (run) row('disagreement', (run.given === 1 ? '▲ ' : '▽ ') + 'the ' + side + ' mask ' + run.direction + ' (' + run.cls + ', tokens [' + run.start + ', ' + run.end + '))', run.given === 1 ? 'dir-up' : 'dir-down');
      }
      (x.diagsAt.get(i) || []).forEach(function (item) { row('diagnostic', '⚑ ' + item.severity + ' ' + item.code + ': ' + item.message); });
      return list;
    }

    var hovered = null;
    function tokenAt(target) { return target && target.closest ? target.closest('.k[data-i]') : null; }
    function place(node) {
      var rect = node.getBoundingClientRect();
      tip.hidden = false;
      var width = tip.offsetWidth;
      var height = tip.offsetHeight;
      var left = Math.min(Math.max(4, rect.left), window.innerWidth - width - 4);
      var top = rect.bottom + 6;
      if (top + height > window.innerHeight - 4) top = Math.max(4, rect.top - height - 6);
      tip.style.left = left + 'px';
      tip.style.top = top + 'px';
    }
    function inspect(node) {
      if (!shown) return;
      var which = node.closest('.text').getAttribute('data-column');
      tip.textContent = '';
      tip.appendChild(describe(shown, Number(node.getAttribute('data-i')), which));
      place(node);
      if (hovered && hovered !== node) hovered.classList.remove('hover');
      hovered = node;
      node.classList.add('hover');
      node.setAttribute('aria-describedby', 'tip');
    }
    function onHover(event) { var node = tokenAt(event.target); if (node) inspect(node); }
    function onFocus(event) {
      var node = tokenAt(event.target);
      if (!node) return;
      var old = node.closest('.text').querySelector('.k[tabindex="0"]');
      if (old && old !== node) old.tabIndex = -1;
      node.tabIndex = 0;
      inspect(node);
    }
    function onLeave(event) {
      var node = tokenAt(event.target);
      if (!node) return;
      var next = event.relatedTarget && tokenAt(event.relatedTarget);
      if (next) return;
      if (event.type === 'mouseout' && document.activeElement && tokenAt(document.activeElement)) { inspect(document.activeElement); return; }
      node.classList.remove('hover');
      node.removeAttribute('aria-describedby');
      tip.hidden = true;
    }
    function onKey(event) {
      var node = tokenAt(event.target);
      if (!node) return;
      var target = null;
      if (event.key === 'ArrowRight' || event.key === 'ArrowDown') target = nextToken(node, 1);
      else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') target = nextToken(node, -1);
      else if (event.key === 'Home') target = node.closest('.text').querySelector('.k');
      else if (event.key === 'End') { var all = node.closest('.text').querySelectorAll('.k'); target = all[all.length - 1]; }
      else if (event.key === 'Escape') { tip.hidden = true; return; }
      if (target) { event.preventDefault(); target.focus(); }
    }
    function nextToken(node, delta) {
      var i = Number(node.getAttribute('data-i')) + delta;
      return node.closest('.text').querySelector('.k[data-i="' + i + '"]');
    }
    function focusToken(i, which) {
      var columns = view.querySelectorAll('.text');
      var focusNode = null;
      Array.prototype.forEach.call(columns, function (text) {
        var node = text.querySelector('.k[data-i="' + i + '"]');
        if (!node) return;
        node.classList.remove('flash');
        void node.offsetWidth;
        node.classList.add('flash');
        if (text.getAttribute('data-column') === which || !focusNode) focusNode = node;
      });
      if (focusNode) { focusNode.scrollIntoView({ block: 'center' }); focusNode.focus({ preventScroll: true }); }
    }

    document.addEventListener('keydown', function (event) {
      var tag = event.target && event.target.tagName;
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === 'j') step(1);
      else if (event.key === 'k') step(-1);
    });
    window.addEventListener('scroll', function () { if (!tip.hidden && hovered) place(hovered); }, { passive: true });
    window.addEventListener('hashchange', fromHash);
    function fromHash() {
      var match = /^#rollout=(\d+)$/.exec(location.hash);
      return match ? (show(Number(match[1])), true) : false;
    }
    apply(true);
    if (!fromHash() && matching.length) show(matching[0]);
    document.documentElement.setAttribute('data-ready', 'true');
  }
})();
`;
