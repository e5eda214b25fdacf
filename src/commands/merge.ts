/**
 * `tagmask merge`: trajectories in, tinker datums out, one line per datum. Each split (an observation
 * that stops extending the sequence) is reported with where and why it departs and what it costs.
 * A trajectory that gives no datum (no transitions, or only empty ones) is reported as a failed line,
 * never dropped in silence; an empty transition among others is reported on stderr.
 */
import { JsonlWriter, OutputClosed, OutputError, readJsonlBatches } from '../io/jsonl.ts';
import { auditExtension, datumToJson, parseTrajectoryLine, trajectoryToData } from '../merge.ts';
import { textOf, type ByteTable } from '../tokenizer/table.ts';
import { errorLine, idJson, idOf, messageOf } from './mask.ts';

/** Merge every trajectory of `input`; returns how many lines failed. `table` decodes the split report. */
export async function runMerge(input: string, output: string | undefined, table: ByteTable | undefined, log: (line: string) => void): Promise<number> {
  const show = (ids: number[]) => (table ? JSON.stringify(textOf(table, ids.filter((id) => id < table.size))) : `[${ids.join(',')}]`);
  const writer = new JsonlWriter(output);
  let failed = 0;
  try {
    for await (const batch of readJsonlBatches(input)) {
      for (const line of batch) {
        const where = `${input === '-' ? '<stdin>' : input}:${line.number}`;
        let id: unknown = null;
        try {
          let value: unknown;
          try {
            value = JSON.parse(line.text);
          } catch (error) {
            throw new Error(`not valid JSON (${messageOf(error)})`);
          }
          const parsed = parseTrajectoryLine(value, where);
          id = parsed.id;
          const { trajectory, advantage } = parsed;
          const idText = idJson(id);
          const data = trajectoryToData(trajectory, advantage);
          if (data.length === 0) {
            throw new Error(trajectory.transitions.length === 0
              ? 'no transitions: nothing to merge'
              : `no datum: all ${trajectory.transitions.length} transitions are empty (no observation and no action tokens)`);
          }
          // Every line of this trajectory is made before any is written: a failure writes nothing half-done.
          const lines = data.map((datum, index) => `{"id":${idText},${JSON.stringify(datumToJson(null, index, datum)).slice('{"id":null,'.length)}\n`);
          for (const text of lines) writer.write(text);
          trajectory.transitions.forEach((transition, k) => {
            if (transition.ob.length === 0 && transition.ac.tokens.length === 0) log(`${where}: trajectory ${idText} transitions[${k}] is empty (no observation, no action tokens): it adds nothing`);
          });
          const audit = auditExtension(trajectory);
          for (const split of audit.splits) {
            log(`${where}: split: trajectory ${idText} starts a new datum at transition ${split.transition}: at token ${split.position} the sequence so far has ${show(split.expected)}, the new observation ${show(split.actual)}; ${audit.cost.trainedTokens} tokens trained as ${data.length} datums instead of ${audit.cost.mergedTokens} merged`);
          }
        } catch (error) {
          if (error instanceof OutputError || error instanceof OutputClosed) throw error;
          failed++;
          const message = messageOf(error);
          log(message.startsWith(where) ? message : `${where}: ${message}`);
          writer.write(errorLine(id ?? idOf(line.text), line.number, message));
        }
      }
    }
    writer.close();
  } catch (error) {
    writer.abort();
    throw error;
  }
  return failed;
}
