// s3_parquet_check.mjs — an independent reader (hyparquet, from
// tests/interop/node_modules) checks the Parquet files freshet uploaded to
// S3, as downloaded by s3_tool: row count, the sum of `id`, NULLs in `n`,
// and one value per row of `wiki` and `n` from the formula s3_tool wrote.
// Usage: node s3_parquet_check.mjs INTEROP_DIR EXPECTED_ROWS FILE...
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [interop, expectRows, ...files] = process.argv.slice(2);
const require = createRequire(path.resolve(interop, 'package.json'));
const { parquetReadObjects } = await import(require.resolve('hyparquet'));
const { compressors } = await import(require.resolve('hyparquet-compressors'));

let rows = 0, idSum = 0n, nulls = 0, bad = 0;
for (const f of files) {
  const buf = fs.readFileSync(f);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const objs = await parquetReadObjects({ file: ab, compressors });
  for (const o of objs) {
    const id = BigInt(o.id);
    rows++;
    idSum += id;
    if (o.wiki !== `w${id % 5n}`) bad++;
    if (id % 4n === 0n) { if (o.n !== null && o.n !== undefined) bad++; else nulls++; }
    else if (BigInt(o.n) !== id * 3n) bad++;
  }
}
const n = BigInt(expectRows);
const want = (n * (n - 1n)) / 2n;
console.log(`hyparquet: ${rows} rows, sum(id) ${idSum} (want ${want}), ${nulls} NULLs, ${bad} bad values`);
if (rows !== Number(n) || idSum !== want || bad !== 0 || nulls !== Number((n + 3n) / 4n)) {
  process.exit(1);
}
