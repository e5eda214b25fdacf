/**
 * The registry: every code has a family, a severity and words; advice names only options that exist.
 */
import { describe, expect, it } from 'vitest';
import { CODES, messageOf, severityOf, type Code } from '../../src/diagnostics.ts';
import { compileGrammar } from '../../src/grammar/compile.ts';
import { readGrammar } from '../../src/grammar/schema.ts';
import { buildByteTable } from '../../src/tokenizer/table.ts';
import { Masker } from '../../src/masker.ts';

describe('diagnostic registry', () => {
  it('gives every code a family, a severity and a non-empty message', () => {
    for (const code of Object.keys(CODES) as Code[]) {
      expect(['rollout', 'transition', 'grammar', 'lint', 'conformance']).toContain(CODES[code].family);
      expect(['error', 'warning', 'info']).toContain(severityOf(code));
      expect(messageOf(code, { token: 3, reply: 'obs', option: null, grammar: 'g', name: 'x', literal: 'l', rule: 'neither', detail: 'd', tokenizer: 't', literals: ['a'], merges: ['m'], counts: [{ tokenizer: 't', count: 1 }], sides: ['action', 'observation'], value: 0 })).not.toBe('');
    }
  });

  it('no code means two things: the grammar warning and the rollout error about the prompt end differ', () => {
    expect(CODES['no-prompt-end'].family).toBe('rollout');
    expect(CODES['no-prompt-end-declared'].family).toBe('grammar');
    expect(messageOf('tag-without-close', { name: 'think' })).not.toBe(messageOf('unknown-tag', { name: 'think' }));
  });

  it('reply advice names the option a reply really uses, or says the grammar has none', () => {
    expect(messageOf('reply-in-reply', { token: 9, reply: 'obs', option: 'obs_budget', grammar: 'g' })).toContain('--set obs_budget=N');
    const none = messageOf('reply-in-reply', { token: 9, reply: 'obs', option: null, grammar: 'g' });
    expect(none).not.toContain('--set');
    expect(none).toContain('no budget option');
    expect(messageOf('unclosed-reply', { token: 9, reply: 'obs', option: null, grammar: 'g' })).not.toContain('--set');
  });
});

describe('reply-in-reply on a grammar whose reply has no budget option', () => {
  // A one-byte-per-token vocabulary: every character is its own token, so positions are byte positions.
  const chars = [...new Set('<p></p><o></o>abc xyz\n')];
  const table = buildByteTable({ model: { vocab: Object.fromEntries(chars.map((char, id) => [char, id])) } });
  const encode = (text: string) => [...text].map((char) => chars.indexOf(char));
  const { grammar } = readGrammar({
    name: 'no-budget',
    prompt: { ends_after: ['</p>'] },
    tags: { call: { open: '<c>', close: '</c>' } },
    handovers: [{ after: 'xyz', replies: ['obs'] }],
    replies: { obs: { open: '<o>', close: '</o>' } },
  });
  it('names no option that does not exist', () => {
    const masker = new Masker(compileGrammar(grammar!), table);
    // The first reply never closes: its opening appears again inside it.
    const result = masker.mask(encode('<p>a</p>bxyz<o>abc\nbxyz<o>c</o>'));
    const found = result.diagnostics.find((item) => item.code === 'reply-in-reply');
    expect(found).toBeDefined();
    expect(found!.message).not.toMatch(/--set|max_obs_tokens/);
    expect(found!.message).toContain('"obs"');
  });
});
