/**
 * Attributes of one tag that the byte scanner has already delimited (`<invoke name="search">`).
 * parse5 is right here: attribute syntax (quoting, entities) is HTML's. It never lexes model text.
 */
import { parseFragment } from 'parse5';

export function readAttributes(tagText: string): Record<string, string> {
  const fragment = parseFragment(tagText);
  const element = fragment.childNodes.find((node) => 'attrs' in node) as { attrs: Array<{ name: string; value: string }> } | undefined;
  const attributes: Record<string, string> = {};
  for (const attribute of element?.attrs ?? []) attributes[attribute.name] = attribute.value;
  return attributes;
}
