/** `tagmask show`: rollouts as text with the action marked, or as one HTML page. */
import { optionSets, type CommandSpec } from './args.ts';
import { announceStdin, useColor } from './terminal.ts';
import { maskedRecords } from '../run.ts';
import type { ShapeName } from '../io/shapes.ts';
import { idJson, idText, writable } from '../io/lines.ts';
import { JsonlWriter, OutputClosed, OutputError } from '../io/jsonl.ts';
import { MaskerPool } from '../masker.ts';
import { showRollout } from '../report/show.ts';
import { formatBytes, HtmlReport, openHtmlOutput, writeHtmlReport } from '../report/html.ts';
import { commandLine, diagnosticsFail, FAIL_ON, FORMAT, GRAMMAR, HTML, log, SET, TOKENIZER } from './shared.ts';
import { grammarOf } from './detect.ts';

export const show: CommandSpec = {
  name: 'show',
  summary: 'print rollouts with their action spans, straddling tokens and diagnostics marked',
  positionals: '[IN.jsonl|-]',
  maxPositionals: 1,
  description: ['in a terminal: action text green, straddling tokens red; elsewhere action text in «…», straddling tokens in ⟦…⟧'],
  flags: {
    grammar: GRAMMAR,
    tokenizer: TOKENIZER,
    set: SET,
    id: { type: 'string', value: 'ID', help: 'show only the rollout with this id' },
    format: FORMAT,
    color: { type: 'boolean', help: 'colour even when stdout is not a terminal (also FORCE_COLOR=1)' },
    'no-color': { type: 'boolean', help: 'never colour (also NO_COLOR=1)' },
    html: { ...HTML, help: 'write the rollouts as one self-contained HTML page instead (opens from file://, no network): roles, tags, token pieces, diagnostics, filters' },
    'fail-on': FAIL_ON,
  },
  examples: ['tagmask show --grammar search-r1 --tokenizer ./Qwen3-8B rollouts.jsonl --id r-17 | less -R',
    'tagmask show --grammar search-r1 --tokenizer ./Qwen3-8B rollouts.jsonl --html rollouts.html'],
  async run(args) {
    const pool = await MaskerPool.open(await grammarOf(args), args.required('tokenizer'), optionSets(args.list('set')));
    const input = args.input();
    const wanted = args.string('id');
    const color = useColor(process.stdout, { color: args.boolean('color'), noColor: args.boolean('no-color') });
    announceStdin(input, 'show', 'rollouts (JSONL)');
    const htmlFile = args.string('html');
    const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
    const html = htmlFile ? new HtmlReport({ title: `tagmask show: ${input === '-' ? 'stdin' : input}`, command: commandLine() }) : undefined;
    const where = input === '-' ? '<stdin>' : input;
    let shown = 0;
    let failed = 0;
    const diagnostics = new Map<string, number>();
    // Written synchronously to stdout, so a reader that goes away (`| head`) ends the run quietly.
    const writer = html ? undefined : new JsonlWriter(undefined);
    for await (const item of maskedRecords(pool, input, args.string('format') as ShapeName | undefined)) {
      if (item.error !== undefined) {
        failed++;
        log(`${where}:${item.number}: ${item.error}`);
        if (html && wanted === undefined) html.add(pool.tokenizer.table, { id: writable(item.id), tokens: [], error: item.error, source: `${where}:${item.number}` });
        continue;
      }
      const { prepared: { rollout }, result } = item;
      try {
        idJson(rollout.id); // an id that cannot be written (nested too deeply) fails its line, as in mask
        if (wanted !== undefined && idText(rollout.id) !== wanted) continue;
        if (html) html.add(pool.tokenizer.table, { id: rollout.id, tokens: rollout.tokens, result, source: `${where}:${item.number}` });
        else writer!.write(`${showRollout(pool.tokenizer.table, rollout.id, rollout.tokens, result, color)}\n\n`);
        for (const diagnostic of result.diagnostics) diagnostics.set(diagnostic.code, (diagnostics.get(diagnostic.code) ?? 0) + 1);
        shown++;
      } catch (error) {
        // One line that cannot be shown (an id nested too deeply to print) is that line's failure only.
        if (error instanceof OutputClosed || error instanceof OutputError) throw error;
        failed++;
        log(`${where}:${item.number}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    writer?.close();
    if (wanted !== undefined && shown === 0) { log(`no rollout with id ${wanted}`); return 1; }
    if (html) log(`${htmlFile}: ${html.count} rollouts, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
    return failed > 0 || diagnosticsFail(diagnostics, args.string('fail-on')!) ? 1 : 0;
  },
};
