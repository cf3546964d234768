// soak_driver.mjs — the chaos soak's load, faults and kills
// (t/110_chaos_soak.pl sets up the clusters and stores; t/soak_check.mjs
// judges what this leaves in <dir>).  Plain SQL through node-postgres only.
//
//   node t/soak_driver.mjs <config.json>
//
// config: {dir, seconds, seed, sessions, keys, user, clusters: [{name, host,
// port, datadir, logfile, pgctl}], stores: {kind: {table, server, uri,
// replace}}, proxies: {S3: ctl URL, AZ: ctl URL}, kills: bool}.  "replace": the store has
// unique_key 'false', so a plain INSERT is the upsert.
//
// For config.seconds: <sessions> sessions per cluster run transactions of
// random kind on random keys of random stores, each logged to
// <dir>/log/<cluster>-<session>.jsonl before it begins and after it ends
// (t/soak_check.mjs documents the records and outcomes); a fault thread
// arms fault-proxy rules; a killer kills -9 the writer, the maintenance
// worker or a whole cluster; a sampler records the RSS of the workers and
// backends, and the live heap and cache bytes the workers publish in
// ctxstore.workers, in <dir>/rss.jsonl.  Then faults and kills stop, both clusters
// run, every store is merged, and the final reads go to <dir>/final.json,
// the counts to <dir>/summary.json.
import fs from 'fs';
import path from 'path';
import { spawnSync } from 'child_process';
import { createRequire } from 'module';

// From NODE_PATH (scripts/readers.sh installs it), which only require reads.
const pg = createRequire(import.meta.url)('pg');

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const logDir = path.join(config.dir, 'log');
fs.mkdirSync(logDir, { recursive: true });

const now = () => performance.timeOrigin + performance.now();
const t0 = now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const elapsed = () => (now() - t0) / 1000;

// mulberry32: a seeded generator, so a run's choices repeat with its seed.
function rng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const pick = (r, list) => list[Math.floor(r() * list.length)];
const between = (r, [lo, hi]) => lo + r() * (hi - lo);

let running = true;
const events = [];
const note = (what) => {
	events.push({ t: elapsed(), ...what });
	console.log(`${elapsed().toFixed(1)}s ${JSON.stringify(what)}`);
};

// ---- clients ----

// Errors at COMMIT that promise nothing of the transaction was committed
// (docs/SQL.md, "Checks against committed rows, at COMMIT").
const DEFINITE_AT_COMMIT = new Set(['23505', '21000']);
const QUERY_TIMEOUT_MS = 60000;

async function connect(cluster) {
	const client = new pg.Client({
		host: cluster.host, port: cluster.port, user: config.user, database: 'postgres',
		connectionTimeoutMillis: 5000, query_timeout: QUERY_TIMEOUT_MS,
	});
	client.on('error', () => {}); // a lost connection: the query in flight says so
	await client.connect();
	return client;
}

// A client connected to cluster, trying until it is or the soak ends.
async function connectRetrying(cluster) {
	while (true) {
		try {
			return await connect(cluster);
		} catch (e) {
			if (!running) throw e;
			await sleep(300);
		}
	}
}

// The statements of an operation (params: [key, value]).
function statements(kind, store) {
	const t = store.table;
	const insert = `INSERT INTO ${t} (id, v) VALUES ($1, $2)`;
	if (kind === 'insert') return [insert];
	if (kind === 'upsert') return store.replace ? [insert] : [`DELETE FROM ${t} WHERE id = $1`, insert];
	if (kind === 'update') return [`UPDATE ${t} SET v = $2 WHERE id = $1`];
	return [`DELETE FROM ${t} WHERE id = $1`];
}

const counts = { operations: 0, ack: 0, fail: 0, unknown: 0, hung: 0 };

// One transaction; returns {outcome, rows, state} and whether the
// connection must be replaced.
async function runOp(client, store, kind, key, value) {
	let phase = 'statements';
	let rows = 1;
	try {
		await client.query('BEGIN');
		const stmts = statements(kind, store);
		for (const [i, sql] of stmts.entries()) {
			const params = sql.includes('$2') ? [key, value] : [key];
			const r = await client.query(sql, params);
			if (i === 0 && (kind === 'update' || kind === 'delete')) rows = r.rowCount;
		}
		await client.query(`INSERT INTO ${store.table} (id, v) VALUES ($1, $2)`, [`r:${value}`, value]);
		phase = 'commit';
		await client.query('COMMIT');
		return { result: { outcome: 'ack', rows }, broken: false };
	} catch (e) {
		const state = e.code || (e.message.includes('timeout') ? 'client-timeout' : 'connection');
		const broken = !e.code || /^(08|57P)/.test(e.code);
		if (state === 'client-timeout') counts.hung++;
		if (!broken && phase === 'statements') await client.query('ROLLBACK').catch(() => {});
		const definite = phase === 'statements' || DEFINITE_AT_COMMIT.has(e.code);
		return { result: { outcome: definite ? 'fail' : 'unknown', rows: null, state, message: e.message.slice(0, 200) }, broken };
	}
}

async function session(cluster, s) {
	const r = rng(config.seed * 1000 + cluster.index * 100 + s);
	const log = path.join(logDir, `${cluster.name}-${s}.jsonl`);
	const kinds = ['insert', 'insert', 'upsert', 'upsert', 'update', 'update', 'delete'];
	const storeKinds = Object.keys(config.stores);
	let client = await connectRetrying(cluster);
	for (let seq = 1; running; seq++) {
		const store = config.stores[pick(r, storeKinds)];
		const kind = pick(r, kinds);
		const key = `k${Math.floor(r() * config.keys)}`;
		const value = `${cluster.name}:${s}:${seq}`;
		fs.appendFileSync(log, JSON.stringify({ e: 'begin', op: value, key, store: store.kind, kind, t: now() }) + '\n');
		const { result, broken } = await runOp(client, store, kind, key, value);
		fs.appendFileSync(log, JSON.stringify({ e: 'end', op: value, ...result, t: now() }) + '\n');
		counts.operations++;
		counts[result.outcome]++;
		if (broken) {
			client.end().catch(() => {});
			try {
				client = await connectRetrying(cluster);
			} catch {
				return;
			}
		}
	}
	await client.end().catch(() => {});
}

// ---- faults ----

const faultKinds = {
	'500': () => ({ action: 'status', status: 500, code: 'InternalError' }),
	'503': (which) => ({ action: 'status', status: 503, code: which === 'S3' ? 'SlowDown' : 'ServerBusy' }),
	'429': () => ({ action: 'status', status: 429, code: 'TooManyRequests' }),
	reset: () => ({ action: 'reset' }),
	delay: () => ({ action: 'delay', ms: 3000 }),
	drop_response: () => ({ action: 'drop_response', method: 'PUT' }),
};
// Now and then a store stops answering for longer than a request's retries
// last (retry_max_seconds 3 s + request_timeout 2 s), so that statements
// and COMMITs fail with a timeout, whose outcome is unknown.
const OUTAGE = { action: 'hang', for_ms: 6000 };
const OUTAGE_SHARE = 0.03;
const faults = Object.fromEntries([...Object.keys(faultKinds), 'outage'].map((k) => [k, 0]));

async function proxy(which, method, p, body) {
	const res = await fetch(config.proxies[which] + p, {
		method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body),
	});
	if (!res.ok) throw new Error(`fault proxy ${which} ${method} ${p}: ${res.status}`);
	return res.text();
}

async function faultThread() {
	const r = rng(config.seed * 7 + 1);
	while (running) {
		await sleep(between(r, config.fault_every_ms || [300, 1500]));
		if (!running) break;
		const which = pick(r, Object.keys(config.proxies));
		if (r() < OUTAGE_SHARE) {
			await proxy(which, 'POST', '/faults', OUTAGE);
			faults.outage++;
			note({ outage: which, ms: OUTAGE.for_ms });
			continue;
		}
		const kind = pick(r, Object.keys(faultKinds));
		const count = 1 + Math.floor(r() * 3);
		await proxy(which, 'POST', '/faults', { ...faultKinds[kind](which), count });
		faults[kind] += count;
	}
}

// ---- kills ----

const kills = { writer: 0, maintenance: 0, cluster: 0 };
const backendType = { writer: 'ctxstore writer', maintenance: 'ctxstore maintenance' };

async function adminQuery(cluster, sql) {
	const c = await connect(cluster);
	try {
		return (await c.query(sql)).rows;
	} finally {
		await c.end().catch(() => {});
	}
}

// Waits (bounded) until cluster accepts connections and runs both workers.
async function waitUp(cluster, seconds = 90) {
	const end = now() + seconds * 1000;
	while (now() < end) {
		try {
			const rows = await adminQuery(cluster,
				"SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type IN ('ctxstore writer', 'ctxstore maintenance')");
			if (Number(rows[0].n) === 2) return true;
		} catch { /* still starting */ }
		await sleep(200);
	}
	return false;
}

function pgctl(cluster, ...args) {
	const r = spawnSync(cluster.pgctl, ['-D', cluster.datadir, ...args], { encoding: 'utf8', timeout: 120000 });
	if (r.status !== 0) note({ pgctl: args.join(' '), cluster: cluster.name, status: r.status, err: (r.stderr || '').slice(0, 300) });
	return r.status === 0;
}

function startCluster(cluster) {
	return pgctl(cluster, '-l', cluster.logfile, '-w', '-t', '60', 'start');
}

async function kill(cluster, kind) {
	if (kind === 'cluster') {
		pgctl(cluster, '-m', 'immediate', 'stop');
		startCluster(cluster);
	} else {
		const rows = await adminQuery(cluster,
			`SELECT pid FROM pg_stat_activity WHERE backend_type = '${backendType[kind]}'`);
		if (rows.length === 0) return false;
		process.kill(rows[0].pid, 'SIGKILL');
	}
	kills[kind]++;
	note({ kill: kind, cluster: cluster.name });
	return true;
}

async function killer() {
	const r = rng(config.seed * 13 + 5);
	while (running) {
		await sleep(between(r, config.kill_every_ms || [10000, 25000]));
		if (!running) break;
		const cluster = pick(r, config.clusters);
		try {
			await kill(cluster, pick(r, Object.keys(kills)));
		} catch (e) {
			note({ kill_failed: e.message, cluster: cluster.name });
		}
		if (!(await waitUp(cluster))) note({ not_up_after_kill: cluster.name });
	}
}

// ---- RSS ----

const rssLog = path.join(config.dir, 'rss.jsonl');

// VmRSS and RssAnon (private memory: shared buffers touched count in VmRSS
// but are not the process's own), in kB.
function memoryOf(pid) {
	try {
		const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
		const kb = (name) => Number((s.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm')) || [])[1]);
		return { rss: kb('VmRSS'), anon: kb('RssAnon') };
	} catch {
		return null;
	}
}

// A worker's heap_bytes and cache_bytes as ctxstore.workers shows them
// (bigint arrives as text); none before it first published, or for a
// backend.
const published = (heap, cache) =>
	heap === null ? {} : { heap_bytes: Number(heap), cache_bytes: Number(cache) };

async function sampler() {
	while (running) {
		for (const cluster of config.clusters) {
			let rows = [];
			try {
				rows = await adminQuery(cluster,
					"SELECT a.pid, a.backend_type, w.heap_bytes, w.cache_bytes FROM pg_stat_activity a LEFT JOIN ctxstore.workers w ON w.pid = a.pid WHERE a.backend_type IN ('ctxstore writer', 'ctxstore maintenance', 'client backend') AND a.pid <> pg_backend_pid()");
			} catch { continue; }
			for (const { pid, backend_type, heap_bytes, cache_bytes } of rows) {
				const m = memoryOf(pid);
				if (m) fs.appendFileSync(rssLog, JSON.stringify({ t: elapsed(), cluster: cluster.name, pid, type: backend_type.replace('ctxstore ', ''), ...m, ...published(heap_bytes, cache_bytes) }) + '\n');
			}
		}
		await sleep(3000);
	}
}

// ---- the quiet end ----

// The final reads run with the soak's short request_timeout (2 s, so that
// delay faults outlast it); on a loaded machine an emulator can still be
// slower than that once faults stopped.  They are idempotent, so one that
// fails with a store error (SQLSTATE class 58) is retried, boundedly.
async function quietQuery(cluster, sql, attempts = 6) {
	for (let n = 1; ; n++) {
		try {
			return await adminQuery(cluster, sql);
		} catch (e) {
			if (n >= attempts || !String(e.code || '').startsWith('58') || NOT_RETAINED.test(e.message)) throw e;
			console.error(`# final read retried (${n}/${attempts}) on ${cluster.name}: ${e.code}: ${e.message}`);
			await sleep(2000);
		}
	}
}

async function finalReads() {
	const final = { tables: {}, versions: {}, stats: {}, merges: [] };
	for (const [kind, store] of Object.entries(config.stores)) {
		for (const cluster of config.clusters) {
			try {
				await quietQuery(cluster, `SELECT ctxstore.merge_wal('${store.table}')`);
			} catch (e) {
				final.merges.push({ cluster: cluster.name, store: kind, error: e.message });
			}
		}
		final.tables[kind] = {};
		for (const cluster of config.clusters) {
			const rows = await quietQuery(cluster, `SELECT id, v FROM ${store.table}`);
			final.tables[kind][cluster.name] = rows.map((x) => [x.id, x.v]);
		}
		final.versions[kind] = await readVersions(config.clusters[0], store);
		// What merges, compactions, GC and publishing did (since each
		// cluster's last restart), for the report.
		final.stats[kind] = {};
		for (const cluster of config.clusters)
			final.stats[kind][cluster.name] = (await quietQuery(cluster, `SELECT ctxstore.stats('${store.table}') AS s`))[0].s;
	}
	return final;
}

// The store's base versions and whether GC retains each now.
const listVersions = async (cluster, store) =>
	(await quietQuery(cluster, `SELECT version, retained FROM ctxstore.versions('${store.table}')`))
		.map((x) => ({ version: Number(x.version), retained: x.retained }));

// A version GC no longer retains has this error, which no retry mends.
const NOT_RETAINED = /is no longer retained/;

const retainedNow = async (cluster, store, version) =>
	(await listVersions(cluster, store)).some((x) => x.version === version && x.retained);

// Reads each base version the store lists through a table pinned to it,
// with the store's retention options (the read judges by them whether a
// missing object was collected) and dropped after the read (so that its pin
// does not make the next listing call the version retained).  retained:
// GC retained it when it was read (listed so just before, and still after
// a failure: one collected or aged out meanwhile is not).
async function readVersions(cluster, store) {
	const options = (await quietQuery(cluster, `SELECT option_name, option_value FROM pg_options_to_table(
		(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = '${store.table}'::regclass))
		WHERE option_name IN ('retain_versions', 'retain_interval')`))
		.map((o) => `, ${o.option_name} '${o.option_value}'`).join('');
	const out = [];
	for (const { version } of await listVersions(cluster, store)) {
		const pin = `${store.table}_v${version}`;
		const listed = await retainedNow(cluster, store, version);
		let read;
		try {
			await adminQuery(cluster, `CREATE FOREIGN TABLE ${pin} (id text NOT NULL, v text)
				SERVER ${store.server} OPTIONS (uri '${store.uri}', version '${version}'${options})`);
			const [r] = await quietQuery(cluster, `SELECT count(*) AS rows, count(DISTINCT id) AS distinct FROM ${pin}`);
			read = { rows: Number(r.rows), distinct: Number(r.distinct) };
		} catch (e) {
			read = { error: `${e.code}: ${e.message}` };
		}
		await adminQuery(cluster, `DROP FOREIGN TABLE IF EXISTS ${pin}`);
		out.push({ version, retained: listed && (!read.error || await retainedNow(cluster, store, version)), ...read });
	}
	return out;
}

async function main() {
	config.clusters.forEach((c, i) => { c.index = i; });
	const sessions = config.clusters.flatMap((c) => Array.from({ length: config.sessions }, (_, s) => session(c, s)));
	const background = [faultThread(), config.kills ? killer() : null, sampler()];
	await sleep(config.seconds * 1000);
	running = false;
	note({ phase: 'stopping faults and kills' });
	for (const which of Object.keys(config.proxies)) await proxy(which, 'DELETE', '/faults');
	await Promise.all(background);
	for (const c of config.clusters) {
		if (!(await waitUp(c, 5))) startCluster(c);
		if (!(await waitUp(c))) throw new Error(`cluster ${c.name} does not come back`);
	}
	await Promise.all(sessions);
	note({ phase: 'quiet: final reads' });
	const fired = {};
	for (const which of Object.keys(config.proxies)) fired[which] = JSON.parse(await proxy(which, 'GET', '/stats')).fired;
	const final = await finalReads();
	fs.writeFileSync(path.join(config.dir, 'final.json'), JSON.stringify(final));
	const summary = { soak_seconds: config.seconds, seconds: elapsed(), seed: config.seed, counts, faults_armed: faults, faults_fired: fired, kills, events };
	fs.writeFileSync(path.join(config.dir, 'summary.json'), JSON.stringify(summary, null, 1));
	console.log(`summary: ${JSON.stringify({ counts, faults_armed: faults, faults_fired: fired, kills })}`);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
