/**
 * A stop string whose last part opens the next reply (handover `overlap`): base models stop on `\n\nUser:`, whose
 * `User:` is the next user turn's header; GLM stops on `<|user|>` / `<|observation|>`, which are. Every path of
 * the construct on the tiny vocabulary (kit.ts), both settings of the option that gives the overlap to the reply.
 * Expectations by construction: each piece encoded on its own, with the role it has.
 */
import { describe, expect, it } from 'vitest';
import { Masker } from '../../src/masker.ts';
import { checkGrammar } from '../../src/grammar/check.ts';
import { readGrammar } from '../../src/grammar/schema.ts';
import { grammarOf, piecewise, table } from './kit.ts';

const spec = {
  name: 'mini-role-colon',
  options: { rendered: { default: 0, values: [0, 1] } },
  prompt: { ends_after: ['A:'] },
  tags: {},
  handovers: [{ after: '\n\nU:', overlap: 'U:', overlap_when: '$rendered', replies: ['user'], ends_episode: true, model_stops: true }],
  replies: { user: { open: 'U: ', close: 'A:' } },
  padding: ['<|pad|>'],
};
const GRAMMAR = grammarOf(spec);
const mask = (tokens: number[], rendered = 0) => Array.from(new Masker(GRAMMAR, table, { rendered }).mask(tokens).mask);

describe('a stop string that opens the next reply', () => {
  it('sampled (default): the whole stop string is the model\'s, the reply is what follows it', () => {
    const s = piecewise([['U: hi\n\nA:', 0], [' yes\n\nU:', 1], [' more\n\nA:', 0], [' no\n\nU:', 1]]);
    expect(mask(s.tokens)).toEqual(s.mask);
  });

  it('rendered (option 1): a reply that follows takes the overlap; after the last turn it stays the model\'s', () => {
    const s = piecewise([['U: hi\n\nA:', 0], [' yes\n\n', 1], ['U: more\n\nA:', 0], [' no\n\nU:', 1]]);
    expect(mask(s.tokens, 1)).toEqual(s.mask);
  });

  it('a paragraph break alone is no handover; the stop string at the very end ends the episode; padding after it is trailing', () => {
    const s = piecewise([['U: hi\n\nA:', 0], [' one\n\ntwo\n\nU:', 1], ['<|pad|><|pad|>', 0]]);
    expect(mask(s.tokens)).toEqual(s.mask);
    expect(mask(s.tokens, 1)).toEqual(s.mask);
  });

  it('text after the stop string that is no reply is not the model\'s (it stopped), and says missing-reply', () => {
    const s = piecewise([['U: hi\n\nA:', 0], [' yes\n\nU:', 1], ['zz', 0]]);
    const result = new Masker(GRAMMAR, table).mask(s.tokens);
    expect(Array.from(result.mask)).toEqual(s.mask);
    expect(result.diagnostics.map((item) => item.code)).toContain('missing-reply');
  });

  it('is checked: the overlap ends the stop string, every listed reply opens with it, overlap_when names an option', () => {
    const paths = (handover: object, replies: object = spec.replies) => readGrammar({ ...spec, handovers: [handover], replies } as never).issues.map((issue) => issue.path);
    expect(paths({ after: '\n\nU:', overlap: 'X:', replies: ['user'] })).toEqual(['handovers[0].overlap']);
    expect(paths({ after: '\n\nU:', overlap_when: '$rendered', replies: ['user'] })).toEqual(['handovers[0].overlap_when']);
    const codes = (handover: object, replies: object = spec.replies) => checkGrammar(readGrammar({ ...spec, handovers: [handover], replies } as never).grammar!).filter((issue) => issue.severity === 'error').map((issue) => `${issue.code} ${issue.path}`);
    expect(codes({ after: '\n\nU:', overlap: 'U:', replies: ['user'] }, { user: { open: 'V: ', close: 'A:' } })).toEqual(['reply-shape handovers[0].replies[0]']);
    expect(codes({ after: '\n\nU:', overlap: 'U:', overlap_when: '$nope', replies: ['user'] })).toEqual(['unknown-option handovers[0].overlap_when']);
  });
});
