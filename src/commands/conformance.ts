/** `tagmask conformance`: prove suites against their construction and the merge. */
import type { CommandSpec } from './args.ts';
import { proveSuite } from '../suites.ts';
import { suitePassed } from '../conformance.ts';
import { formatSuite } from '../report/text.ts';
import { conformanceRecords } from '../report/json.ts';
import { formatBytes, HtmlReport, openHtmlOutput, writeHtmlReport } from '../report/html.ts';
import { commandLine, HTML, log, out, suitesToRun } from './shared.ts';

export const conformance: CommandSpec = {
  name: 'conformance',
  summary: 'prove suites (default: the bundled samples) against their construction and the merge',
  positionals: '[SUITE…]',
  maxPositionals: Infinity,
  description: ['a suite is a folder with suite.json naming a grammar, a tokenizer and its data files (see the README)'],
  flags: {
    json: { type: 'boolean', help: 'one JSON line per rollout, datum and split instead of the report' },
    html: { ...HTML, help: 'also write an HTML page: every rollout and datum with the construction\'s or the merge\'s mask beside tagmask\'s, disagreements with their direction' },
  },
  examples: ['tagmask conformance', 'tagmask conformance samples/tutorial-404 --json', 'tagmask conformance --html conformance.html'],
  async run(args) {
    const json = args.boolean('json');
    const htmlFile = args.string('html');
    const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
    const html = htmlFile ? new HtmlReport({ title: 'tagmask conformance', command: commandLine(), side: 'audited' }) : undefined;
    let passed = true;
    for (const suite of suitesToRun(args.positionals)) {
      const verdict = await proveSuite(suite, undefined, html);
      if (!json) out(formatSuite(verdict));
      else {
        // One line per rollout, re-tokenized rollout, datum and split: what a CI job or a notebook reads.
        for (const record of conformanceRecords(verdict)) out(JSON.stringify(record));
      }
      if (!suitePassed(verdict)) passed = false;
    }
    if (!json) out(passed ? 'conformance: everything agrees' : 'conformance: disagreements found');
    if (html) log(`${htmlFile}: ${html.count} rollouts and datums, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
    return passed ? 0 : 1;
  },
};
