/**
 * Summarize V8 .cpuprofile files (from `node --cpu-prof`): self time per function, grouped by file, and
 * the hottest source lines of the hottest functions (from positionTicks).
 *
 *     node --cpu-prof --cpu-prof-dir=/tmp/prof bin/tagmask.js mask … && npx tsx bench/profile.ts /tmp/prof/*.cpuprofile
 *
 * Line numbers are those of the code V8 ran; for .ts files run through tsx that is esbuild's output, which
 * keeps statements in order but not always on the same line as the source.
 */
import { readFileSync } from 'node:fs';

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; hitCount?: number; children?: number[]; positionTicks?: Array<{ line: number; ticks: number }> }
interface Profile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export interface FunctionCost { name: string; file: string; line: number; selfMs: number; share: number; lines: Array<{ line: number; ms: number }> }

const shortFile = (url: string) => {
  if (!url) return '(native)';
  const clean = url.replace(/^file:\/\//, '').replace(/\?.*$/, '');
  const at = clean.indexOf('/src/');
  if (at >= 0 && !clean.includes('node_modules')) return clean.slice(at + 1);
  const nm = clean.lastIndexOf('node_modules/');
  if (nm >= 0) return clean.slice(nm + 'node_modules/'.length).split('/').slice(0, 2).join('/');
  return clean.replace(/^.*\/(bench|tmp)\//, '$1/');
};

export function summarize(path: string): { totalMs: number; functions: FunctionCost[]; files: Array<{ file: string; selfMs: number; share: number }> } {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  // Self time per node from samples × time deltas (more exact than hitCount × interval).
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const totalUs = profile.endTime - profile.startTime;
  const byFunction = new Map<string, FunctionCost & { ticks: number; lineTicks: Map<number, number> }>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const file = shortFile(url);
    const key = `${name}@${file}:${lineNumber}`;
    let entry = byFunction.get(key);
    if (!entry) {
      entry = { name, file, line: lineNumber + 1, selfMs: 0, share: 0, lines: [], ticks: 0, lineTicks: new Map() };
      byFunction.set(key, entry);
    }
    entry.selfMs += us / 1000;
    for (const tick of node.positionTicks ?? []) {
      entry.ticks += tick.ticks;
      entry.lineTicks.set(tick.line, (entry.lineTicks.get(tick.line) ?? 0) + tick.ticks);
    }
  }
  const functions = [...byFunction.values()].sort((a, b) => b.selfMs - a.selfMs).map((entry) => ({
    name: entry.name,
    file: entry.file,
    line: entry.line,
    selfMs: +entry.selfMs.toFixed(1),
    share: +((100 * entry.selfMs * 1000) / totalUs).toFixed(1),
    lines: [...entry.lineTicks].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([line, ticks]) => ({ line, ms: +((entry.selfMs * ticks) / Math.max(1, entry.ticks)).toFixed(1) })),
  }));
  const byFile = new Map<string, number>();
  for (const f of functions) byFile.set(f.file, (byFile.get(f.file) ?? 0) + f.selfMs);
  const files = [...byFile].sort((a, b) => b[1] - a[1]).map(([file, ms]) => ({ file, selfMs: +ms.toFixed(1), share: +((100 * ms * 1000) / totalUs).toFixed(1) }));
  return { totalMs: +(totalUs / 1000).toFixed(1), functions, files };
}

export function formatSummary(path: string, top = 25): string {
  const { totalMs, functions, files } = summarize(path);
  const out = [`${path}: ${totalMs} ms profiled`, '', 'self time by file:'];
  for (const f of files.slice(0, 12)) out.push(`  ${f.selfMs.toFixed(1).padStart(9)} ms ${f.share.toFixed(1).padStart(5)}%  ${f.file}`);
  out.push('', 'self time by function (hot lines: line=ms):');
  for (const f of functions.slice(0, top)) {
    const lines = f.lines.length ? `  [${f.lines.map((l) => `${l.line}=${l.ms}`).join(' ')}]` : '';
    out.push(`  ${f.selfMs.toFixed(1).padStart(9)} ms ${f.share.toFixed(1).padStart(5)}%  ${f.name} (${f.file}:${f.line})${lines}`);
  }
  return out.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const path of process.argv.slice(2)) console.log(`${formatSummary(path)}\n`);
}
