// LanceDB's exact (flat) top-k search over the vectors of bench/read_path.sh
// (the same seeded generator: read_path_data.mjs), against the exact answer
// computed here in float64, unfiltered and filtered to one bot.
//
//   node read_path_lance.mjs DIR ROWS DIM BOTS BOT K REPEAT
//
// Prints "name<TAB>value" lines: load seconds, median query ms, recall and
// the exact top-k ids (comma-separated, best first) of each query.  No
// index is built and every query bypasses indexes, so LanceDB compares the
// query with every (matching) vector: nprobes and refine do not apply.
import { createRequire } from 'node:module';
import { fillVector, idOf, botOf } from './read_path_data.mjs';

// The pinned packages live in bench/.node (LANCE_PREFIX), not beside us.
const require = createRequire(`${process.env.LANCE_PREFIX}/`);
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');

const [dir, rows, dim, bots, bot, k, repeat] = process.argv.slice(2)
	.map((a, i) => (i === 0 || i === 4 ? a : Number(a)));
const BATCH = 65536;

function out(name, value) {
	console.log(`${name}\t${value}`);
}

function batchTable(first, n) {
	const vectors = new Float32Array(n * dim);
	const ids = [], botIds = [];
	for (let i = 0; i < n; i++) {
		fillVector(vectors, i * dim, first + i, dim);
		ids.push(idOf(first + i));
		botIds.push(botOf(first + i, rows, bots));
	}
	const item = new arrow.Field('item', new arrow.Float32(), true);
	const child = arrow.makeData({ type: new arrow.Float32(), length: n * dim, data: vectors });
	const vector = arrow.makeVector(arrow.makeData({
		type: new arrow.FixedSizeList(dim, item), length: n, nullCount: 0, child,
	}));
	return new arrow.Table({
		id: arrow.vectorFromArray(ids, new arrow.Utf8()),
		bot_id: arrow.vectorFromArray(botIds, new arrow.Utf8()),
		vector,
	});
}

async function load(db) {
	const started = performance.now();
	let table = null;
	for (let first = 1; first <= rows; first += BATCH) {
		const batch = batchTable(first, Math.min(BATCH, rows - first + 1));
		if (table === null)
			table = await db.createTable('turns', batch, { mode: 'overwrite' });
		else
			await table.add(batch);
	}
	out('lance_load_s', ((performance.now() - started) / 1000).toFixed(1));
	return table;
}

// The exact top-k by cosine distance in float64, ties by id.
function exactTopK(query, onlyBot) {
	const v = new Float64Array(dim);
	let qq = 0;
	for (let j = 0; j < dim; j++)
		qq += query[j] * query[j];
	const best = [];
	for (let g = 1; g <= rows; g++) {
		if (onlyBot !== null && botOf(g, rows, bots) !== onlyBot)
			continue;
		fillVector(v, 0, g, dim);
		let dot = 0, vv = 0;
		for (let j = 0; j < dim; j++) {
			dot += query[j] * v[j];
			vv += v[j] * v[j];
		}
		best.push({ id: idOf(g), d: 1 - dot / Math.sqrt(qq * vv) });
		if (best.length > 4 * k) {
			best.sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
			best.length = k;
		}
	}
	best.sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
	return best.slice(0, k).map((r) => r.id);
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}

async function timeQuery(table, query, where) {
	const run = () => {
		let q = table.query().nearestTo(query).distanceType('cosine').bypassVectorIndex()
			.select(['id', '_distance']).limit(k);
		if (where !== null)
			q = q.where(where);
		return q.toArray();
	};
	let result = await run();	/* warm-up: opens the dataset's files */
	const times = [];
	for (let i = 0; i < repeat; i++) {
		const started = performance.now();
		result = await run();
		times.push(performance.now() - started);
	}
	return { ms: median(times), ids: result.map((r) => r.id) };
}

function recall(got, exact) {
	const want = new Set(exact);
	return got.filter((id) => want.has(id)).length / exact.length;
}

const db = await lancedb.connect(dir);
const table = await load(db);
out('lance_indices', (await table.listIndices()).length);
const query = new Float32Array(dim);
fillVector(query, 0, 0, dim);
for (const [name, onlyBot] of [['unfiltered', null], ['filtered', bot]]) {
	const exact = exactTopK(query, onlyBot);
	const got = await timeQuery(table, Array.from(query), onlyBot === null ? null : `bot_id = '${onlyBot}'`);
	out(`lance_${name}_ms`, got.ms.toFixed(1));
	out(`lance_${name}_recall`, recall(got.ids, exact).toFixed(2));
	out(`exact_${name}_ids`, exact.join(','));
}
