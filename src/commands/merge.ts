/**
 * `tagmask merge`: trajectories in, tinker datums out, one line per datum. Each split (an observation
 * that stops extending the sequence) is reported with where and why it departs and what it costs.
 */
import { JsonlWriter, readJsonl } from '../io/jsonl.ts';
import { auditExtension, datumToJson, parseTrajectoryLine, trajectoryToData } from '../merge.ts';
import { textOf, type ByteTable } from '../tokenizer/table.ts';
import { idOf } from './mask.ts';

/** Merge every trajectory of `input`; returns how many lines failed. `table` decodes the split report. */
export function runMerge(input: string, output: string | undefined, table: ByteTable | undefined, log: (line: string) => void): number {
  const show = (ids: number[]) => (table ? JSON.stringify(textOf(table, ids.filter((id) => id < table.size))) : `[${ids.join(',')}]`);
  const writer = new JsonlWriter(output);
  let failed = 0;
  try {
    for (const line of readJsonl(input)) {
      const where = `${input === '-' ? '<stdin>' : input}:${line.number}`;
      try {
        const { id, trajectory, advantage } = parseTrajectoryLine(JSON.parse(line.text), where);
        const data = trajectoryToData(trajectory, advantage);
        data.forEach((datum, index) => writer.write(`${JSON.stringify(datumToJson(id, index, datum))}\n`));
        const audit = auditExtension(trajectory);
        for (const split of audit.splits) {
          log(`${where}: split: trajectory ${JSON.stringify(id)} starts a new datum at transition ${split.transition}: at token ${split.position} the sequence so far has ${show(split.expected)}, the new observation ${show(split.actual)}; ${audit.cost.trainedTokens} tokens trained as ${data.length} datums instead of ${audit.cost.mergedTokens} merged`);
        }
      } catch (error) {
        failed++;
        const message = (error as Error).message;
        log(message.startsWith(where) ? message : `${where}: ${message}`);
        writer.write(`${JSON.stringify({ id: idOf(line.text), line: line.number, error: message })}\n`);
      }
    }
    writer.close();
  } catch (error) {
    writer.abort();
    throw error;
  }
  return failed;
}
