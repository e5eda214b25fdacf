import { readParquetRows } from './src/io/parquet.ts';
const path = process.argv[2];
for (let r = 0; r < 5; r++) {
  const t = performance.now(); const c0 = process.cpuUsage();
  let n = 0, tokens = 0;
  for await (const row of readParquetRows(path, { typedIds: true })) { n++; tokens += (row.value!.tokens as Uint32Array).length; }
  const c = process.cpuUsage(c0);
  console.log(n, tokens, (performance.now() - t).toFixed(0), 'ms wall', ((c.user + c.system) / 1000).toFixed(0), 'ms cpu');
}
