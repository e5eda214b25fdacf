/** `tagmask show`: rollouts as text with the action marked, or as one HTML page. */
import { optionSets, type CommandSpec } from './args.ts';
import { announceStdin, useColor } from './terminal.ts';
import { runRollouts, type Sink } from '../run.ts';
import type { ShapeName } from '../io/shapes.ts';
import type { ByteTable } from '../tokenizer/table.ts';
import { JsonlWriter } from '../io/jsonl.ts';
import { MaskerPool } from '../masker.ts';
import { showRollout } from '../report/show.ts';
import { formatBytes, HtmlReport, openHtmlOutput, writeHtmlReport } from '../report/html.ts';
import { commandLine, FAIL_ON, FORMAT, GRAMMAR, HTML, log, rolloutsFailed, SET, TOKENIZER } from './shared.ts';
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
    // The rollouts go through runRollouts as mask's do (reading, failures, counts, the page); only what is
    // written differs: each rollout as text on stdout, or nothing there when the page is asked for.
    const sink = html ? quietSink() : textSink(pool.tokenizer.table, color);
    const summary = await runRollouts(pool, { input, format: args.string('format') as ShapeName | undefined, log, html, sink, only: wanted });
    if (wanted !== undefined && summary.rollouts === 0) { log(`no rollout with id ${wanted}`); return 1; }
    if (html) log(`${htmlFile}: ${html.count} rollouts, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
    return rolloutsFailed(summary, args.string('fail-on')!) ? 1 : 0;
  },
};

/** Each rollout as text on stdout, written synchronously, so a reader that goes away (`| head`) ends the run quietly. */
function textSink(table: ByteTable, color: boolean): Sink {
  const writer = new JsonlWriter(undefined);
  return {
    ...quietSink(),
    rollout: ({ rollout }, result) => writer.write(`${showRollout(table, rollout.id, rollout.tokens, result, color)}\n\n`),
    flush: () => writer.flushThrough(),
    close: () => writer.close(),
    abort: () => writer.abort(),
  };
}

/** Nothing on stdout: a failed line is said on stderr only (runRollouts logs it), the rollouts go onto the page. */
function quietSink(): Sink {
  const nothing = () => {};
  return { rollout: nothing, write: nothing, error: nothing, raw: nothing, flush: nothing, close: nothing, abort: nothing };
}
