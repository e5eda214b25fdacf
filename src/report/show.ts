/**
 * A rollout's mask for people: its decoded text with the action spans marked, the way tinker's
 * `colorize_example` shows a datum. In a terminal the colours carry it (action green, observation dim,
 * straddling tokens red); elsewhere action text is wrapped in «…» and straddling tokens in ⟦…⟧.
 */
import type { MaskResult } from '../masker.ts';
import { textOf, type ByteTable } from '../tokenizer/table.ts';
import { formatDiagnostic, visibleText, visibleId } from './text.ts';

const MARKERS = /[«»⟦⟧]/g;
const ANSI = { action: '\u001b[32m', observation: '\u001b[2m', straddle: '\u001b[41;97m', reset: '\u001b[0m', bold: '\u001b[1m' };

export function showRollout(table: ByteTable, id: unknown, tokens: ArrayLike<number>, result: MaskResult, color: boolean): string {
  const straddles = new Set(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token));
  const action = result.spans.reduce((sum, span) => sum + (span.role === 'action' ? span.end - span.start : 0), 0);
  const lines: string[] = [];
  const title = `${visibleId(id)}: ${tokens.length} tokens, ${action} action (${tokens.length ? ((100 * action) / tokens.length).toFixed(1) : '0.0'}%), ${result.spans.length} spans`;
  lines.push(color ? `${ANSI.bold}${title}${ANSI.reset}` : title);

  // Pieces by what they are (kinds do not matter here), neighbours of the same sort merged.
  const pieces: Array<{ sort: 'action' | 'observation' | 'straddle'; text: string }> = [];
  const add = (sort: 'action' | 'observation' | 'straddle', start: number, end: number) => {
    if (end <= start) return;
    const text = textOf(table, tokens, start, end);
    const last = pieces[pieces.length - 1];
    if (last && last.sort === sort && sort !== 'straddle') last.text += text;
    else pieces.push({ sort, text });
  };
  for (const span of result.spans) {
    let start = span.start;
    for (let t = span.start; t < span.end; t++) {
      if (!straddles.has(t)) continue;
      add(span.role, start, t);
      add('straddle', t, t + 1);
      start = t + 1;
    }
    add(span.role, start, span.end);
  }
  let body = '';
  for (const { sort, text: raw } of pieces) {
    // Token text is data: its control characters are shown, never obeyed, so it cannot paint itself as
    // action or clear the screen; without colour the marker characters in it are written out too, so every
    // « » ⟦ ⟧ on the screen is tagmask's own.
    const text = color ? visibleText(raw) : visibleText(raw).replace(MARKERS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
    if (color) body += `${ANSI[sort]}${text}${ANSI.reset}`;
    else body += sort === 'action' ? `«${text}»` : sort === 'straddle' ? `⟦${text}⟧` : text;
  }
  lines.push(body);
  for (const item of result.diagnostics) lines.push(`  ${formatDiagnostic(item)}`);
  return lines.join('\n');
}
