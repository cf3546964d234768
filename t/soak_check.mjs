// soak_check.mjs — the chaos soak's oracle (t/110_chaos_soak.pl, driver
// t/soak_driver.mjs).  It reads only the clients' operation logs and the
// final reads of the tables, and shares no code with ctxstore: what it
// knows of the product is the SQL contract below.
//
//   node t/soak_check.mjs <run dir>    checks <run dir>/log/*.jsonl against
//                                      <run dir>/final.json; prints each
//                                      violation and "violations: N"; exit 1
//                                      when N > 0
//   node t/soak_check.mjs --self-test  runs the checker on hand-made logs,
//                                      one passing and one violating per rule
//
// An operation is one transaction of one session: BEGIN, the statement(s)
// of its kind on one key of one store, an INSERT of its receipt row
// ('r:' + op id, value op id) in the same table, COMMIT.  Its value (the
// op id, "cluster:session:seq") is unique, so a visible row names the
// operation that wrote it.  Kinds: insert, upsert (a whole-row replace
// whatever the key holds), update (rows: 0 or 1), delete (rows: 0 or 1).
// Outcomes: ack (COMMIT returned), fail (an error that promises nothing was
// committed) and unknown (connection lost, cluster killed, a timeout or an
// error with no such promise during COMMIT, or no end record at all).
//
// A receipt tells whether an unknown operation committed; an acknowledged
// one with rows >= 1 is an "effective write"; an unknown one with its receipt
// visible may have been.  Real-time order: o' strictly follows o when o'
// began after o's acknowledgement arrived (an unknown operation never
// ends: it may land at any time up to the final read).
//
// The rules, each a violation kind:
//   agree        both clusters read the same rows from a table
//   duplicate    no key is read twice (data rows and receipts)
//   unknown_row  every row read was written by a logged operation on that
//                key of that store (no row from nowhere, no deleted value
//                as a row)
//   lost_ack     the receipt of every acknowledged operation is read
//   failed_trace a failed operation's receipt and value are absent
//   partial      an operation whose receipt is absent left no value
//                (unknown ones: entirely present or entirely absent)
//   stale_value  a key's value comes from an operation no acknowledged
//                effective write of that key strictly follows
//   lost_value   a key read absent although an acknowledged insert, upsert
//                or effective update wrote it: then some delete of the key
//                (acknowledged with rows 1, or unknown with its receipt)
//                must not be strictly followed by an acknowledged effective
//                insert, upsert or update
//   version      every base version the store lists as retained
//                (ctxstore.versions, column retained, at the moment of
//                reading it) reads, and no version reads a key twice; one
//                not retained may fail, but only with the error of a
//                collected version ("is no longer retained"), since GC may
//                have deleted objects only it names
//   rss_growth   in a soak of at least JUDGE_MEMORY_AFTER seconds, the
//                peak private memory (RssAnon) of a cluster's writer or
//                maintenance worker in the last minute exceeds its peak in
//                the second minute by more than RSS_GROWTH_BOUND_KB
//   heap_growth  in such a soak, the peak of the live heap beyond the
//                caches (heap_bytes - cache_bytes, as the worker publishes
//                them in ctxstore.workers) of a cluster's writer or
//                maintenance worker in the last minute exceeds its peak in
//                the second minute by more than HEAP_GROWTH_BOUND_KB (not
//                judged for a worker without samples in both minutes)
//
// heap_growth is the tight one: it leaves out what RSS includes but a leak
// is not (malloc's free heap, which the workers trim only above 8 MiB, and
// caches that fill up to their bounds).  rss_growth stays, loose, for
// memory outside malloc's heap that heap_bytes cannot see.
// docs/RELIABILITY.md, "Chaos soak", says why those bounds.
//
// Two overlapping operations on one key have no order the clients can know,
// so either may win; ctxstore's own rule (within a cluster commit order,
// across clusters the later commit time; one host, one clock) is stronger,
// and agrees with these rules whenever the operations do not overlap.
import fs from 'fs';
import path from 'path';

const RECEIPT = 'r:';
// A worker's memory is judged only when the second minute and the last one
// are three minutes apart.  The RSS growth allowed between them: about the
// free heap a worker's malloc may keep between trims (KEEP_FREE_BYTES,
// 8 MiB, bgworker/cx_workers_register.c), the caches using under 1 MB in a
// soak, and a maintenance job's working set, which follows the store (2 MB
// after 300 s) (docs/RELIABILITY.md, "Chaos soak", "What the drift is").
// The live heap growth beyond the caches allowed: 1 MiB.  A worker
// publishes between rounds and jobs, so neither a job's working set nor
// malloc's free heap nor the caches are in it.  In 330 s soaks without kills
// it grew from the second minute's peak to the last's by 19-37 kB in the
// maintenance workers and 132-378 kB in the writers (where a merge
// backlog's pending generations show, about 0.8 KB each); 1 MiB, 2.7 times
// the largest and 8 times tighter than the RSS bound, catches a leak of a
// few hundred bytes a commit within a 300 s soak (3,000-4,000 commits).
export const JUDGE_MEMORY_AFTER = 300;
export const RSS_GROWTH_BOUND_KB = 8 * 1024;
export const HEAP_GROWTH_BOUND_KB = 1024;
const WORKERS = ['writer', 'maintenance'];

// Operations from JSONL lines: {e:"begin", op, key, store, kind, t} then
// {e:"end", op, outcome, rows, state, t}.
export function readOps(lines) {
	const ops = new Map();
	for (const rec of lines) {
		if (rec.e === 'begin')
			ops.set(rec.op, { ...rec, start: rec.t, end: Infinity, outcome: 'unknown', rows: null });
		else if (rec.e === 'end' && ops.has(rec.op)) {
			const o = ops.get(rec.op);
			o.outcome = rec.outcome;
			o.rows = rec.rows;
			o.state = rec.state;
			if (rec.outcome !== 'unknown') o.end = rec.t;
		}
	}
	return ops;
}

const writesValue = (o) => o.kind !== 'delete';
const effectiveAck = (o) => o.outcome === 'ack' && o.rows >= 1;
const follows = (later, earlier) => later.start > earlier.end;

// The rows of one read as a map id -> value; duplicates reported.
function rowsOf(rows, where, report) {
	const m = new Map();
	for (const [id, v] of rows) {
		if (m.has(id)) report('duplicate', `${where}: key ${id} read twice (${m.get(id)}, ${v})`);
		m.set(id, v);
	}
	return m;
}

function sameRows(a, b) {
	if (a.size !== b.size) return false;
	for (const [id, v] of a) if (b.get(id) !== v) return false;
	return true;
}

// The checks of one store's final read against the operations on it.
function checkStore(store, rows, storeOps, report) {
	const receipts = new Set();
	const byKey = new Map();
	for (const o of storeOps) {
		if (!byKey.has(o.key)) byKey.set(o.key, []);
		byKey.get(o.key).push(o);
	}
	const opsById = new Map(storeOps.map((o) => [o.op, o]));
	for (const [id, v] of rows) {
		if (id.startsWith(RECEIPT)) {
			const o = opsById.get(id.slice(RECEIPT.length));
			if (!o || v !== o.op) report('unknown_row', `${store}: receipt ${id} = ${v} of no logged operation`);
			else receipts.add(o.op);
			continue;
		}
		const o = opsById.get(v);
		if (!o || o.key !== id || !writesValue(o))
			report('unknown_row', `${store}: ${id} = ${v} written by no logged insert, upsert or update of ${id}`);
	}
	for (const o of storeOps) {
		const committed = receipts.has(o.op);
		const visible = rows.get(o.key) === o.op;
		if (o.outcome === 'ack' && !committed)
			report('lost_ack', `${store}: acknowledged ${o.kind} ${o.op} of ${o.key}: its receipt is missing`);
		if (o.outcome === 'fail' && (committed || visible))
			report('failed_trace', `${store}: failed (${o.state}) ${o.kind} ${o.op} of ${o.key} left ${committed ? 'its receipt' : 'its value'}`);
		else if (!committed && visible && o.outcome !== 'ack')
			report('partial', `${store}: ${o.outcome} ${o.kind} ${o.op}: its value is on ${o.key}, its receipt is not`);
	}
	for (const [key, keyOps] of byKey) checkKey(store, key, rows.get(key), keyOps, receipts, report);
}

// stale_value and lost_value for one key.
function checkKey(store, key, value, keyOps, receipts, report) {
	const acked = keyOps.filter(effectiveAck);
	if (value !== undefined) {
		const o = keyOps.find((x) => x.op === value);
		if (!o) return; // unknown_row already
		const later = acked.find((x) => follows(x, o));
		if (later)
			report('stale_value', `${store}: ${key} = ${o.op} (${o.outcome} ${o.kind}, ended ${o.end}) although acknowledged ${later.kind} ${later.op} began after it (${later.start})`);
		return;
	}
	const ackedWrites = acked.filter(writesValue);
	if (ackedWrites.length === 0) return;
	const deletes = keyOps.filter((d) => d.kind === 'delete' &&
		(effectiveAck(d) || (d.outcome === 'unknown' && receipts.has(d.op))));
	const justified = deletes.some((d) => !ackedWrites.some((w) => follows(w, d)));
	if (!justified) {
		const last = ackedWrites.reduce((a, b) => (b.end > a.end ? b : a));
		report('lost_value', `${store}: ${key} is absent although acknowledged ${last.kind} ${last.op} wrote it and no delete of it could come last (${deletes.length} candidate deletes)`);
	}
}

const NOT_RETAINED = /is no longer retained/;

function checkVersions(store, versions, report) {
	for (const v of versions) {
		if (v.error && (v.retained || !NOT_RETAINED.test(v.error)))
			report('version', `${store}: ${v.retained ? 'retained' : 'collected'} base version ${v.version} does not read: ${v.error}`);
		else if (!v.error && v.distinct !== v.rows)
			report('version', `${store}: base version ${v.version} reads ${v.rows} rows but ${v.distinct} keys`);
	}
}

// The peak of field over the samples in [from, to) that have it; null if
// none has.
function peakIn(samples, from, to, field) {
	const values = samples.filter((x) => x.t >= from && x.t < to && x[field] !== undefined).map((x) => x[field]);
	return values.length ? Math.max(...values) : null;
}

// The growth of field's peak from the second minute to the last, when the
// run is long enough to judge (else null).  A minute without samples peaks
// at none: for RssAnon, which every sample has, that counts as 0 kB; for the
// live heap, which a worker publishes only once it runs its loop, the
// worker is not judged.
function judgedGrowth(r, field, seconds, none) {
	const second = r[`second_minute_${field}`] ?? none;
	const last = r[`last_minute_${field}`] ?? none;
	return seconds >= JUDGE_MEMORY_AFTER && second !== null && last !== null ? last - second : null;
}

// A sample's live heap beyond its caches in kB (workers that published).
const liveKb = (x) => (x.heap_bytes === undefined ? {} : { live: (x.heap_bytes - x.cache_bytes) / 1024 });

// Per cluster and process type (writer, maintenance, client backend): the
// peak VmRSS and RssAnon over the run, the RssAnon peaks of the first,
// second and last minute, and for the workers the same peaks of the live
// heap beyond the caches (kB, null without samples); samples: {t, cluster,
// type, rss, anon, and for a worker heap_bytes and cache_bytes}.
export function rssReport(samples, seconds, report) {
	const groups = new Map();
	for (const x of samples) {
		const k = `${x.cluster} ${x.type}`;
		if (!groups.has(k)) groups.set(k, []);
		groups.get(k).push({ ...x, ...liveKb(x) });
	}
	const out = {};
	for (const [k, g] of [...groups].sort()) {
		const r = { peak_rss: peakIn(g, 0, Infinity, 'rss'), peak_anon: peakIn(g, 0, Infinity, 'anon') };
		for (const field of ['anon', 'live']) {
			r[`first_minute_${field}`] = peakIn(g, 0, 60, field);
			r[`second_minute_${field}`] = peakIn(g, 60, 120, field);
			r[`last_minute_${field}`] = peakIn(g, seconds - 60, Infinity, field);
		}
		out[k] = r;
		if (!WORKERS.some((w) => k.endsWith(` ${w}`))) continue;
		if (judgedGrowth(r, 'anon', seconds, 0) > RSS_GROWTH_BOUND_KB)
			report('rss_growth', `${k}: RssAnon peak ${r.second_minute_anon} kB in the second minute, ${r.last_minute_anon} kB in the last (bound +${RSS_GROWTH_BOUND_KB} kB)`);
		if (judgedGrowth(r, 'live', seconds, null) > HEAP_GROWTH_BOUND_KB)
			report('heap_growth', `${k}: live heap beyond the caches peaks at ${r.second_minute_live.toFixed(0)} kB in the second minute, ${r.last_minute_live.toFixed(0)} kB in the last (bound +${HEAP_GROWTH_BOUND_KB} kB)`);
	}
	return out;
}

// final: {tables: {store: {cluster: [[id, v], ...]}}, versions: {store: [...]}};
// rss: {samples, seconds} or undefined.
// Returns {violations: [{rule, text}], counts, rss}.
export function check(ops, final, rss) {
	const violations = [];
	const report = (rule, text) => violations.push({ rule, text });
	const all = [...ops.values()];
	for (const [store, byCluster] of Object.entries(final.tables)) {
		const reads = Object.entries(byCluster).map(([c, rows]) => [c, rowsOf(rows, `${store} read from ${c}`, report)]);
		for (const [c, rows] of reads.slice(1))
			if (!sameRows(rows, reads[0][1]))
				report('agree', `${store}: cluster ${c} reads other rows than cluster ${reads[0][0]}`);
		checkStore(store, reads[0][1], all.filter((o) => o.store === store), report);
	}
	for (const [store, versions] of Object.entries(final.versions || {})) checkVersions(store, versions, report);
	const counts = { operations: all.length, ack: 0, fail: 0, unknown: 0 };
	for (const o of all) counts[o.outcome]++;
	return { violations, counts, rss: rss && rssReport(rss.samples, rss.seconds, report) };
}

const jsonLines = (file) => {
	const out = [];
	for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
		// A line cut short by a crash of the driver is not a record.
		if (l.trim() === '') continue;
		try { out.push(JSON.parse(l)); } catch { /* torn last line */ }
	}
	return out;
};

export function checkRun(dir) {
	const logDir = path.join(dir, 'log');
	const lines = fs.readdirSync(logDir).filter((x) => x.endsWith('.jsonl')).sort()
		.flatMap((f) => jsonLines(path.join(logDir, f)));
	const final = JSON.parse(fs.readFileSync(path.join(dir, 'final.json'), 'utf8'));
	const summary = JSON.parse(fs.readFileSync(path.join(dir, 'summary.json'), 'utf8'));
	const rssFile = path.join(dir, 'rss.jsonl');
	const samples = fs.existsSync(rssFile) ? jsonLines(rssFile) : [];
	return check(readOps(lines), final, { samples, seconds: summary.soak_seconds });
}

// ---- self-test: hand-made logs ----

// An operation's two records; end null: no end record (unknown).
function op(id, key, kind, start, end, outcome, rows = 1, store = 's') {
	const recs = [{ e: 'begin', op: id, key, store, kind, t: start }];
	if (end !== null) recs.push({ e: 'end', op: id, outcome, rows, state: outcome === 'fail' ? '23505' : null, t: end });
	return recs;
}

const receipt = (id) => [RECEIPT + id, id];
const MB = 1024 * 1024;

const cases = [
	{
		name: 'overlapping writes: either may win; unknown ops present or absent; deletes',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack'), op('b1', 'k1', 'update', 5, 15, 'ack'),
			op('a2', 'k2', 'insert', 0, 10, 'ack'), op('b2', 'k2', 'delete', 20, 30, 'ack'),
			op('a3', 'k3', 'upsert', 0, null, 'unknown'), op('a4', 'k4', 'upsert', 0, 5, 'unknown'),
			op('a5', 'k5', 'insert', 0, 10, 'fail'), op('a6', 'k6', 'update', 0, 10, 'ack', 0),
			op('a7', 'k7', 'insert', 0, 10, 'ack'), op('b7', 'k7', 'delete', 20, null, 'unknown')],
		rows: [['k1', 'a1'], receipt('a1'), receipt('b1'), receipt('a2'), receipt('b2'),
			['k3', 'a3'], receipt('a3'), receipt('a6'), receipt('a7'), receipt('b7')],
		versions: [{ version: 1, retained: true, rows: 3, distinct: 3 },
			{ version: 2, retained: false, error: '58P01: version 2 of store s is no longer retained' }],
		want: [],
	},
	{
		name: 'agree: the clusters read different rows',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack')],
		rows: [['k1', 'a1'], receipt('a1')], other: [receipt('a1')],
		want: ['agree'],
	},
	{
		name: 'duplicate: a key read twice (by each cluster)',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack')],
		rows: [['k1', 'a1'], ['k1', 'a1'], receipt('a1')], want: ['duplicate', 'duplicate'],
	},
	{
		name: 'unknown_row: a value no operation wrote, a deleted value as a row',
		logs: [op('a1', 'k1', 'delete', 0, 10, 'ack')],
		rows: [['k2', 'zz'], ['k1', 'a1'], receipt('a1')], want: ['unknown_row', 'unknown_row'],
	},
	{
		name: 'lost_ack: an acknowledged commit is missing entirely',
		logs: [op('a1', 'k1', 'update', 0, 10, 'ack', 0)], rows: [], want: ['lost_ack'],
	},
	{
		name: 'failed_trace: a failed insert left its value and receipt',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'fail')],
		rows: [['k1', 'a1'], receipt('a1')], want: ['failed_trace'],
	},
	{
		name: 'partial: an unknown upsert left its value without its receipt',
		logs: [op('a1', 'k1', 'upsert', 0, null, 'unknown')],
		rows: [['k1', 'a1']], want: ['partial'],
	},
	{
		name: 'stale_value: an acknowledged update strictly after the visible insert is lost',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack'), op('b1', 'k1', 'update', 11, 20, 'ack')],
		rows: [['k1', 'a1'], receipt('a1'), receipt('b1')], want: ['stale_value'],
	},
	{
		name: 'stale_value: an acknowledged delete strictly after the visible insert is lost',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack'), op('b1', 'k1', 'delete', 11, 20, 'ack')],
		rows: [['k1', 'a1'], receipt('a1'), receipt('b1')], want: ['stale_value'],
	},
	{
		name: 'lost_value: the key is gone though its only delete came before the acknowledged upsert',
		logs: [op('a1', 'k1', 'delete', 0, 10, 'ack'), op('b1', 'k1', 'upsert', 11, 20, 'ack')],
		rows: [receipt('a1'), receipt('b1')], want: ['lost_value'],
	},
	{
		name: 'lost_value: an unknown delete whose receipt is absent justifies nothing',
		logs: [op('a1', 'k1', 'insert', 0, 10, 'ack'), op('b1', 'k1', 'delete', 20, null, 'unknown')],
		rows: [receipt('a1')], want: ['lost_value'],
	},
	{
		name: 'version: a retained version does not read, another reads a key twice, a collected one fails otherwise',
		logs: [], rows: [],
		versions: [{ version: 1, retained: true, error: '58P01: version 1 of store s is no longer retained' },
			{ version: 2, retained: false, rows: 3, distinct: 2 },
			{ version: 3, retained: false, error: '58P01: could not read store s' }],
		want: ['version', 'version', 'version'],
	},
	{
		name: 'rss_growth: a writer that grows in a long run, not in a short one, not a backend',
		logs: [], rows: [],
		rss: { seconds: 400, samples: [[90, 'writer', 20000], [390, 'writer', 20000 + RSS_GROWTH_BOUND_KB + 1],
			[90, 'maintenance', 20000], [390, 'maintenance', 20000 + RSS_GROWTH_BOUND_KB],
			[90, 'client backend', 1000], [390, 'client backend', 900000]] },
		want: ['rss_growth'],
	},
	{
		name: 'rss_growth: not judged in a run shorter than JUDGE_MEMORY_AFTER',
		logs: [], rows: [],
		rss: { seconds: JUDGE_MEMORY_AFTER - 1, samples: [[90, 'writer', 20000], [250, 'writer', 900000]] },
		want: [],
	},
	{
		name: 'heap_growth: a writer whose heap beyond its caches grows; not one whose caches grew, nor a backend',
		logs: [], rows: [],
		rss: { seconds: 400, samples: [[90, 'writer', 20000, 3 * MB, MB], [390, 'writer', 20000, 3 * MB + HEAP_GROWTH_BOUND_KB * 1024 + 1, MB],
			[90, 'maintenance', 20000, 3 * MB, MB], [390, 'maintenance', 20000, 10 * MB, 8 * MB],
			[90, 'client backend', 1000], [390, 'client backend', 1000]] },
		want: ['heap_growth'],
	},
	{
		name: 'heap_growth: growth within the bound, and a worker that published in one of the two minutes only',
		logs: [], rows: [],
		rss: { seconds: 400, samples: [[70, 'writer', 20000, 3 * MB, MB], [110, 'writer', 20000, 3 * MB + 100000, MB],
			[350, 'writer', 20000, 3 * MB + 50000, MB], [390, 'writer', 20000, 3 * MB + HEAP_GROWTH_BOUND_KB * 1024, MB + 100000],
			[90, 'maintenance', 20000], [390, 'maintenance', 20000, 900 * MB, 0]] },
		want: [],
	},
	{
		name: 'heap_growth: not judged in a run shorter than JUDGE_MEMORY_AFTER',
		logs: [], rows: [],
		rss: { seconds: JUDGE_MEMORY_AFTER - 1, samples: [[90, 'writer', 20000, 3 * MB, 0], [250, 'writer', 20000, 900 * MB, 0]] },
		want: [],
	},
];

function selfTest() {
	let failed = 0;
	for (const c of cases) {
		const final = { tables: { s: { A: c.rows, B: c.other || c.rows } }, versions: { s: c.versions || [] } };
		// [t, type, anon] or, for a worker that published, [t, type, anon, heap_bytes, cache_bytes]
		const rss = c.rss && { seconds: c.rss.seconds,
			samples: c.rss.samples.map(([t, type, anon, heap, cache]) => ({ t, cluster: 'A', type, rss: anon, anon,
				...(heap === undefined ? {} : { heap_bytes: heap, cache_bytes: cache }) })) };
		const { violations } = check(readOps(c.logs.flat()), final, rss);
		const got = violations.map((v) => v.rule).sort().join(',');
		const pass = got === [...c.want].sort().join(',');
		if (!pass) failed++;
		console.log(`${pass ? 'ok' : 'FAIL'} - ${c.name}: [${got}]` +
			(pass ? '' : ` expected [${c.want.join(',')}]\n  ${violations.map((v) => v.text).join('\n  ')}`));
	}
	console.log(failed ? `self-test: ${failed} of ${cases.length} FAILED` : `self-test: all ${cases.length} passed`);
	return failed === 0;
}

const kb = (v) => (v === null ? '-' : v.toFixed(0));

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
	if (process.argv[2] === '--self-test') process.exit(selfTest() ? 0 : 1);
	const { violations, counts, rss } = checkRun(process.argv[2]);
	for (const [k, r] of Object.entries(rss))
		console.log(`rss ${k}: peak VmRSS ${r.peak_rss} kB, peak RssAnon ${r.peak_anon} kB; RssAnon peak by minute: first ${r.first_minute_anon}, second ${r.second_minute_anon}, last ${r.last_minute_anon} kB` +
			(r.last_minute_live === null ? '' : `; live heap beyond caches peak by minute: first ${kb(r.first_minute_live)}, second ${kb(r.second_minute_live)}, last ${kb(r.last_minute_live)} kB`));
	for (const v of violations) console.log(`violation ${v.rule}: ${v.text}`);
	console.log(`operations: ${counts.operations}, acknowledged: ${counts.ack}, failed: ${counts.fail}, unknown: ${counts.unknown}`);
	console.log(`violations: ${violations.length}`);
	process.exit(violations.length ? 1 : 0);
}
