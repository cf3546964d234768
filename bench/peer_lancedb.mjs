// LanceDB's side of bench/peer_lancedb.sh: the write path ctxstore replaces
// (one table.add per row, from one or several processes on one table) and
// the scans that follow it.
//
//   node peer_lancedb.mjs create   DIR TABLE           an empty table
//   node peer_lancedb.mjs append   DIR TABLE N W w GO  writer w of W: rows w+1, w+1+W, ... <= N
//   node peer_lancedb.mjs batch    DIR TABLE N         rows 1..N in one createTable
//   node peer_lancedb.mjs scan     DIR TABLE REPEAT    every row, every column
//   node peer_lancedb.mjs optimize DIR TABLE           compaction and cleanup of old versions
//
// A writer opens the table, creates GO.ready.w and starts once GO exists,
// so that every writer appends from the same moment, whatever its start-up
// took.  append prints "start<TAB>epoch ms" and one "lat<TAB>ms" line per
// add, as it goes (LanceDB's own commit-conflict retries are
// inside the add); an add that still fails is retried here and counted as
// "failed<TAB>n".  scan prints rows and the median ms of REPEAT scans after
// a warm-up (which opens the dataset's files).  The rows are those
// peer_lancedb.sh inserts into ctxstore (row_sql there).
import { createRequire } from 'node:module';
import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// The pinned packages live in bench/.node (LANCE_PREFIX), not beside us.
const require = createRequire(`${process.env.LANCE_PREFIX}/`);
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');

const [mode, dir, name, ...rest] = process.argv.slice(2);
const args = rest.map((a, i) => (mode === 'append' && i === 3 ? a : Number(a)));
const epoch = Date.parse('2026-12-01T00:00:00Z');

const schema = new arrow.Schema([
	new arrow.Field('id', new arrow.Utf8(), false),
	new arrow.Field('session_id', new arrow.Utf8(), true),
	new arrow.Field('role', new arrow.Utf8(), true),
	new arrow.Field('content', new arrow.Utf8(), true),
	new arrow.Field('created_at', new arrow.TimestampMicrosecond('UTC'), true),
]);

function row(n) {
	return {
		id: `r${String(n).padStart(8, '0')}`,
		session_id: `s${n % 50}`,
		role: 'user',
		content: `a short agent message of a few words ${n}`,
		created_at: new Date(epoch + n * 1000),
	};
}

function out(key, value) {
	console.log(`${key}\t${value}`);
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}

async function startTogether(go, w) {
	writeFileSync(`${go}.ready.${w}`, '');
	for (let waited = 0; !existsSync(go); waited += 2) {
		if (waited > 120000)
			throw new Error(`${go} did not appear within 120 s`);
		await sleep(2);
	}
}

async function append(table, n, writers, w, go) {
	let failed = 0;
	// LANCE_APPEND_S: stop appending once that many seconds have passed
	// (from 8 writers LanceDB's conflict retries may not finish N).
	const budget_ms = Number(process.env.LANCE_APPEND_S || 0) * 1000;
	await startTogether(go, w);
	const t0 = Date.now();
	out('start', t0);
	for (let i = w + 1; i <= n && !(budget_ms > 0 && Date.now() - t0 > budget_ms); i += writers) {
		const started = performance.now();
		for (;;) {
			try {
				await table.add([row(i)]);
				break;
			} catch (e) {
				if (++failed > 100)
					throw e;
			}
		}
		// Printed at once, so that a writer LANCE_TIMEOUT kills in the
		// middle of an add still tells what it made.
		out('lat', (performance.now() - started).toFixed(3));
	}
	out('failed', failed);
}

async function scan(table, repeat) {
	let rows = (await table.query().toArrow()).numRows;
	const times = [];
	for (let i = 0; i < repeat; i++) {
		const started = performance.now();
		rows = (await table.query().toArrow()).numRows;
		times.push(performance.now() - started);
	}
	out('rows', rows);
	out('scan_ms', median(times).toFixed(1));
}

const db = await lancedb.connect(dir);
if (mode === 'create')
	await db.createEmptyTable(name, schema, { mode: 'overwrite' });
else if (mode === 'batch') {
	const rows = [];
	for (let i = 1; i <= args[0]; i++)
		rows.push(row(i));
	await db.createTable(name, rows, { mode: 'overwrite', schema });
} else {
	const table = await db.openTable(name);
	if (mode === 'append')
		await append(table, ...args);
	else if (mode === 'scan')
		await scan(table, args[0]);
	else if (mode === 'optimize') {
		const started = performance.now();
		await table.optimize({ cleanupOlderThan: new Date(), deleteUnverified: true });
		out('optimize_s', ((performance.now() - started) / 1000).toFixed(2));
	} else
		throw new Error(`unknown mode ${mode}`);
}
