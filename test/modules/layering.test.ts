/**
 * The import graph of src/, drawn from the code (type imports, re-exports and dynamic imports included): no
 * cycle, nothing inside src/ imports the src/index.ts barrel, and the grammar never imports the report. A
 * module that breaks this is named with the edge or the cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `import … from '…'`, `import type …`, `export … from '…'`, `import '…'` and `import('…')`: every specifier. */
export function specifiers(text: string): string[] {
  // Comments could hold an example import: drop them first (a string holding "//" is not an import either way).
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found: string[] = [];
  const patterns = [
    /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /(?:^|[;\n])\s*import\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) found.push(match[1]);
  return found;
}

interface Graph { files: string[]; edges: Map<string, string[]> }

function drawGraph(): Graph {
  const files = sourceFiles(SRC).map((path) => relative(SRC, path));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const local = specifiers(readFileSync(join(SRC, file), 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => relative(SRC, resolve(SRC, dirname(file), specifier)));
    edges.set(file, [...new Set(local)]);
  }
  return { files, edges };
}

/** Strongly connected components with more than one module (or a module importing itself): Tarjan's. */
function cycles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.edges.get(node) ?? []) {
      if (!graph.edges.has(next)) continue;
      if (!index.has(next)) { visit(next); low.set(node, Math.min(low.get(node)!, low.get(next)!)); }
      else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let top: string;
    do { top = stack.pop()!; onStack.delete(top); component.push(top); } while (top !== node);
    if (component.length > 1 || graph.edges.get(node)!.includes(node)) found.push(component.sort());
  };
  for (const file of graph.files) if (!index.has(file)) visit(file);
  return found;
}

describe('the import graph of src/', () => {
  const graph = drawGraph();

  it('reads every kind of import (the reader of this test)', () => {
    expect(specifiers([
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export { c } from './c.ts';",
      "export type { D } from './d.ts';",
      "import './e.ts';",
      "const f = await import('./f.ts');",
      "import {\n  g,\n  type G,\n} from './g.ts';",
      "// import { h } from './h.ts';",
    ].join('\n'))).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './g.ts', './e.ts', './f.ts']);
    // The graph is drawn from real files: the CLI reaches the commands, the masker the scanner.
    expect(graph.edges.get('cli.ts')).toContain('commands/mask.ts');
    expect(graph.edges.get('masker.ts')).toContain('scan/runner.ts');
  });

  it('every relative import names a file that exists', () => {
    const missing = [...graph.edges].flatMap(([file, targets]) => targets.filter((target) => !graph.edges.has(target)).map((target) => `${file} → ${target}`));
    expect(missing).toEqual([]);
  });

  it('has no cycle', () => {
    expect(cycles(graph).map((component) => component.join(' ↔ '))).toEqual([]);
  });

  it('nothing inside src/ imports the src/index.ts barrel', () => {
    const importers = [...graph.edges].filter(([, targets]) => targets.includes('index.ts')).map(([file]) => file);
    expect(importers).toEqual([]);
  });

  it('the grammar never imports the report, the scanner, the readers or the commands', () => {
    const upward = [...graph.edges]
      .filter(([file]) => file.startsWith('grammar/'))
      .flatMap(([file, targets]) => targets.filter((target) => /^(report|scan|io\/(?!json\.ts)|commands)\//.test(target) || ['run.ts', 'suites.ts', 'cli.ts'].includes(target)).map((target) => `${file} → ${target}`));
    expect(upward).toEqual([]);
  });
});
