// A user's TypeScript (module NodeNext, strict): it must compile against the types tagmask ships.
import { createMasker, loadTokenizer, type Diagnostic, type LoadedTokenizer, type MaskResult, type Span } from 'tagmask';

const tokenizer: LoadedTokenizer = await loadTokenizer('my-tokenizer');
const masker = await createMasker('tutorial', tokenizer);
const result: MaskResult = masker.mask([100, 101, 102, 103, 200, 201], { promptLength: 4 });
const spans: Span[] = result.spans;
const diagnostics: Diagnostic[] = result.diagnostics;
const ids: number[] = tokenizer.encode('What is 2+3?');
console.log(result.mask.length, spans.length, diagnostics.length, ids.length, tokenizer.decode(ids));
