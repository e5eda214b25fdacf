/**
 * The style of the HTML report (src/report/html.ts), kept as a string so the page is one file and the package
 * ships no asset to locate at run time. The page's script is TypeScript in src/report/page/, bundled at build
 * into src/report/page-script.ts. Both are tested in Chromium (test/browser/report.test.ts).
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
.b-pattern { font-size: 0.8em; border: 1px solid var(--line); border-radius: 3px; padding: 0 0.2em; margin-left: 0.2em; }
.pager { display: flex; justify-content: space-between; align-items: center; margin-top: 0.4rem; gap: 0.3rem; }
.rollnav { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
.meta { color: var(--muted); margin: 0.2rem 0 0.5rem; }
.error { border-left: 4px solid var(--up); padding: 0.3rem 0.6rem; background: var(--panel); }
.note { border-left: 4px solid var(--line); padding: 0.2rem 0.6rem; margin: 0.3rem 0; }
.note.pattern, .note.option-hint { border-left-color: var(--diag); }
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
