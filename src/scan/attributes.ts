/**
 * Attributes of one tag that the byte scanner has already delimited (`<invoke name="search">`).
 * parse5 is right here: attribute syntax (quoting, entities) is HTML's. It never lexes model text.
 *
 * parse5 costs ~30–70 ms to import, and only grammars with `attributes` tags need it, so it is loaded on
 * demand: `prepareAttributeReader()` (awaited by createMasker when the grammar needs it), or a synchronous
 * require on first use (Node ≥ 20.19 can require ES modules).
 */
import { createRequire } from 'node:module';

type ParseFragment = typeof import('parse5').parseFragment;
let parseFragment: ParseFragment | undefined;

export async function prepareAttributeReader(): Promise<void> {
  parseFragment ??= (await import('parse5')).parseFragment;
}

export function readAttributes(tagText: string): Record<string, string> {
  parseFragment ??= (createRequire(import.meta.url)('parse5') as typeof import('parse5')).parseFragment;
  const fragment = parseFragment(tagText);
  const element = fragment.childNodes.find((node) => 'attrs' in node) as { attrs: Array<{ name: string; value: string }> } | undefined;
  const attributes: Record<string, string> = {};
  for (const attribute of element?.attrs ?? []) attributes[attribute.name] = attribute.value;
  return attributes;
}

/** Does this grammar read tag attributes (and so need parse5)? */
export function needsAttributes(tags: Record<string, { attributes: boolean }>): boolean {
  return Object.values(tags).some((tag) => tag.attributes);
}
