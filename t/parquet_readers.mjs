// Reads ctxstore's Parquet fragments with two readers that share no code with
// it, DuckDB (@duckdb/node-api) and hyparquet (with hyparquet-compressors for
// ZSTD), and compares every value of every row, and the Parquet schema each
// reader reports, with what SELECT returns through ctxstore
// (t/078_parquet_readers.pl drives it).
//
//   node parquet_readers.mjs sql <job.json>
//       prints the SELECT that returns the table's rows in canonical form:
//       a JSON array of rows, each an array of one value per column
//   node parquet_readers.mjs check duckdb|hyparquet <job.json>
//       reads every fragment of the job with that reader; prints each
//       difference and exits 1 if there is any
//
// job.json: {"table", "columns": [{"name", "type"}] (the table's columns in
// order, "type" as format_type spells it), "expected" (a file holding the
// SELECT's output), "groups": {"<name>": [fragment files]} (each group holds
// every row once, e.g. the generations, or the base after a merge),
// "commit_window": [from, to] (Unix microseconds bounding every commit)}.
//
// Values are compared in one canonical text form per type (toCanonical*):
// integers and decimals as exact decimal text (decimals with exactly scale
// digits), floats as JavaScript's shortest round-trip form, dates and
// timestamps as ISO 8601 with astronomical years ("infinity"/"-infinity"),
// times as HH:MM:SS.ffffff, bytea, interval and send/receive bytes as hex or
// fields, lists as JSON arrays of their elements' forms.  The readers find
// the packages through NODE_PATH (scripts/readers.sh install prints it).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const require = createRequire(import.meta.url);

const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
const FIELD_ID_ELEMENT_OFFSET = 1000000000;		/* CX_FIELD_ID_ELEMENT_OFFSET */
const MAX_REPORTED = 25;

// ---- canonical forms -------------------------------------------------------

const hex = bytes => Buffer.from(bytes).toString('hex');

function canonicalFloat(x)
{
	return Object.is(x, -0) ? '-0' : String(x);
}

// Proleptic Gregorian date of a day number (days since 1970-01-01), with
// astronomical years (1 BC is year 0), as ISO 8601 writes them.
function isoDate(days)
{
	const z = days + 719468;
	const era = Math.floor(z / 146097);
	const doe = z - era * 146097;
	const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
	const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
	const mp = Math.floor((5 * doy + 2) / 153);
	const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
	const m = mp < 10 ? mp + 3 : mp - 9;
	const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
	const pad = (n, w) => String(n).padStart(w, '0');
	return (y < 0 ? '-' + pad(-y, 4) : pad(y, 4)) + '-' + pad(m, 2) + '-' + pad(d, 2);
}

const USEC_PER_DAY = 86400000000n;

function isoTime(usec)
{
	const pad = (n, w) => String(n).padStart(w, '0');
	const s = usec / 1000000n;
	return pad(s / 3600n, 2) + ':' + pad((s / 60n) % 60n, 2) + ':' + pad(s % 60n, 2) + '.'
		+ pad(usec % 1000000n, 6);
}

function isoTimestamp(usec)
{
	let days = usec / USEC_PER_DAY;
	let rest = usec % USEC_PER_DAY;
	if (rest < 0n)
	{
		days -= 1n;
		rest += USEC_PER_DAY;
	}
	return isoDate(Number(days)) + 'T' + isoTime(rest);
}

// An unscaled decimal integer with scale digits after the point.
function decimalText(unscaled, scale)
{
	const neg = unscaled < 0n;
	let digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
	if (scale > 0)
		digits = digits.slice(0, -scale) + '.' + digits.slice(-scale);
	return (neg ? '-' : '') + digits;
}

// A big-endian two's complement integer (Parquet DECIMAL on bytes).
function bigEndianSigned(bytes)
{
	let v = 0n;
	for (const b of bytes)
		v = (v << 8n) | BigInt(b);
	const bits = BigInt(bytes.length * 8);
	return bytes.length && bytes[0] & 0x80 ? v - (1n << bits) : v;
}

// ctxstore's interval bytes: i64 microseconds, i32 days, i32 months, LE.
function intervalText(bytes)
{
	const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	if (bytes.byteLength !== 16)
		return `<${bytes.byteLength} bytes: ${hex(bytes)}>`;
	return `${v.getInt32(12, true)}m ${v.getInt32(8, true)}d ${v.getBigInt64(0, true)}us`;
}

// Infinities as each reader understands them: DuckDB's are ±MAX; hyparquet
// has none, so its raw values are read with ctxstore's documented ones
// (docs/FORMAT.md: PostgreSQL's own, MIN and MAX).
const INFINITIES = {
	duckdb: { date: [INT32_MAX, -INT32_MAX], ts: [INT64_MAX, -INT64_MAX] },
	hyparquet: { date: [INT32_MAX, INT32_MIN], ts: [INT64_MAX, INT64_MIN] },
};

function withInfinity(raw, [pos, neg], finite)
{
	if (raw === pos)
		return 'infinity';
	if (raw === neg)
		return '-infinity';
	return finite(raw);
}

// ---- the type map ----------------------------------------------------------
//
// Per PostgreSQL type: sql(c), the SQL giving column c's canonical text (or a
// JSON boolean); expected(v), the canonical form of that; duckdb(v) and
// hyparquet(v), the canonical form of each reader's value; leaf, the
// Parquet schema element ctxstore writes (as hyparquet reports it); duck,
// the type DuckDB reads the column as.

const str = v => v;
const integer = {
	sql: c => `${c}::text`, expected: str, duckdb: v => String(v), hyparquet: v => String(v),
};
const float = {
	expected: v => canonicalFloat(Number(v)), duckdb: canonicalFloat, hyparquet: canonicalFloat,
};
const text = {
	sql: c => c, expected: str, duckdb: str, hyparquet: str,
	leaf: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } }, duck: 'VARCHAR',
};
const json = {
	sql: c => `${c}::text`, expected: str, duckdb: str, hyparquet: str,
	leaf: { type: 'BYTE_ARRAY', converted_type: 'JSON', logical_type: { type: 'JSON' } }, duck: 'JSON',
};
const bytes = {
	expected: str, duckdb: v => hex(v.bytes), hyparquet: hex,
	leaf: { type: 'BYTE_ARRAY' }, duck: 'BLOB',
};
const timestampSql = c =>
	`CASE WHEN isfinite(${c}) THEN (extract(epoch FROM ${c}) * 1000000)::int8::text ELSE ${c}::text END`;

function timestamp(utc)
{
	const iso = u => isoTimestamp(BigInt(u)) + (utc ? 'Z' : '');
	return {
		sql: timestampSql,
		expected: v => (v.endsWith('infinity') ? v : iso(v)),
		duckdb: v => withInfinity(v.micros, INFINITIES.duckdb.ts, iso),
		hyparquet: v => withInfinity(v, INFINITIES.hyparquet.ts, iso),
		leaf: {
			type: 'INT64', converted_type: 'TIMESTAMP_MICROS',
			logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: utc, unit: 'MICROS' },
		},
		duck: utc ? 'TIMESTAMP WITH TIME ZONE' : 'TIMESTAMP',
	};
}

// DECIMAL(p, s) on the narrowest physical type that holds p digits.
function decimal(precision, scale)
{
	const physical = precision <= 9 ? { type: 'INT32' } : precision <= 18 ? { type: 'INT64' }
		: { type: 'FIXED_LEN_BYTE_ARRAY', type_length: decimalBytes(precision) };
	const unscaled = v => (v instanceof Uint8Array ? bigEndianSigned(v) : BigInt(v));
	return {
		sql: c => `${c}::text`, expected: str,
		duckdb: v => decimalText(v.value, v.scale),
		hyparquet: v => decimalText(unscaled(v), scale),
		leaf: {
			...physical, converted_type: 'DECIMAL', scale, precision,
			logical_type: { type: 'DECIMAL', scale, precision },
		},
		duck: `DECIMAL(${precision},${scale})`,
		decimal: true,
	};
}

// The fewest bytes whose two's complement holds every p-digit integer.
function decimalBytes(precision)
{
	let n = 1;
	while ((1n << BigInt(8 * n - 1)) - 1n < 10n ** BigInt(precision) - 1n)
		n++;
	return n;
}

const SCALARS = {
	smallint: {
		...integer, leaf: { type: 'INT32', converted_type: 'INT_16',
			logical_type: { type: 'INTEGER', bitWidth: 16, isSigned: true } }, duck: 'SMALLINT',
	},
	integer: { ...integer, leaf: { type: 'INT32' }, duck: 'INTEGER' },
	bigint: { ...integer, leaf: { type: 'INT64' }, duck: 'BIGINT' },
	real: { ...float, sql: c => `${c}::float8::text`, leaf: { type: 'FLOAT' }, duck: 'FLOAT' },
	'double precision': { ...float, sql: c => `${c}::text`, leaf: { type: 'DOUBLE' }, duck: 'DOUBLE' },
	boolean: {
		sql: c => c, expected: v => String(v), duckdb: v => String(v), hyparquet: v => String(v),
		leaf: { type: 'BOOLEAN' }, duck: 'BOOLEAN',
	},
	text, 'character varying': text, character: text,
	bytea: { ...bytes, sql: c => `encode(${c}, 'hex')` },
	uuid: {
		sql: c => `${c}::text`, expected: str, duckdb: v => String(v), hyparquet: str,
		leaf: { type: 'FIXED_LEN_BYTE_ARRAY', type_length: 16, logical_type: { type: 'UUID' } }, duck: 'UUID',
	},
	date: {
		sql: c => `CASE WHEN isfinite(${c}) THEN (${c} - date '1970-01-01')::text ELSE ${c}::text END`,
		expected: v => (v.endsWith('infinity') ? v : isoDate(Number(v))),
		duckdb: v => withInfinity(v.days, INFINITIES.duckdb.date, isoDate),
		hyparquet: v => withInfinity(v, INFINITIES.hyparquet.date, isoDate),
		leaf: { type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } }, duck: 'DATE',
	},
	'time without time zone': {
		sql: c => `(extract(epoch FROM ${c}) * 1000000)::int8::text`,
		expected: v => isoTime(BigInt(v)), duckdb: v => isoTime(v.micros), hyparquet: isoTime,
		leaf: {
			type: 'INT64', converted_type: 'TIME_MICROS',
			logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MICROS' },
		},
		duck: 'TIME',
	},
	'timestamp without time zone': timestamp(false),
	'timestamp with time zone': timestamp(true),
	json, jsonb: json,
	numeric: { ...text, sql: c => `${c}::text` },
	interval: {
		sql: c => `CASE WHEN ${c} IS NOT NULL THEN format('%sm %sd %sus',
			(extract(year FROM ${c}) * 12 + extract(month FROM ${c}))::int8, extract(day FROM ${c})::int8,
			(extract(hour FROM ${c}) * 3600000000 + extract(minute FROM ${c}) * 60000000
			 + extract(microseconds FROM ${c}))::int8) END`,
		expected: str, duckdb: v => intervalText(v.bytes), hyparquet: intervalText,
		leaf: { type: 'FIXED_LEN_BYTE_ARRAY', type_length: 16 }, duck: 'BLOB',
	},
};

// A type that is neither native nor a list travels as its send/receive bytes.
function external(name)
{
	return { ...bytes, sql: c => `encode(${name}_send(${c}), 'hex')`, external: name };
}

function scalarType(name)
{
	const m = name.match(/^numeric\((\d+),(\d+)\)$/);
	if (m)
		return decimal(Number(m[1]), Number(m[2]));
	return SCALARS[name.replace(/\(\d+\)$/, '')] ?? external(name);
}

function list(elem)
{
	const each = f => v => JSON.stringify(v.map(e => (e === null || e === undefined ? null : f(e))));
	return {
		sql: c => `CASE WHEN ${c} IS NOT NULL THEN (SELECT coalesce(json_agg(${elem.sql('e')} ORDER BY o), '[]')
			FROM unnest(${c}) WITH ORDINALITY AS u(e, o)) END`,
		expected: each(elem.expected),
		duckdb: v => each(elem.duckdb)(v.items),
		hyparquet: each(elem.hyparquet),
		elem,
		duck: `${elem.duck}[]`,
	};
}

const columnType = name => (name.endsWith('[]') ? list(scalarType(name.slice(0, -2))) : scalarType(name));

// ---- expected schema -------------------------------------------------------

const HIDDEN = [
	{
		name: '_ctx_commit_ts', field_id: 2147483401, duck: 'TIMESTAMP WITH TIME ZONE',
		leaf: { ...timestamp(true).leaf, repetition_type: 'REQUIRED' },
	},
	{
		name: '_ctx_tombstone', field_id: 2147483402, duck: 'BOOLEAN',
		leaf: { type: 'BOOLEAN', repetition_type: 'REQUIRED' },
	},
];

// The Parquet schema elements a fragment of these columns has, after the
// root, in hyparquet's form (absent members undefined).
function expectedElements(columns)
{
	const out = [];
	const element = (name, field_id, leaf) => ({
		type: undefined, type_length: undefined, repetition_type: 'OPTIONAL', converted_type: undefined,
		scale: undefined, precision: undefined, logical_type: undefined, num_children: undefined,
		...leaf, name, field_id,
	});
	for (const c of columns)
	{
		if (!c.t.elem)
		{
			out.push(element(c.name, c.field_id, c.t.leaf));
			continue;
		}
		out.push(element(c.name, c.field_id,
			{ converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 }));
		out.push(element('list', undefined, { repetition_type: 'REPEATED', num_children: 1 }));
		out.push(element('element', c.field_id + FIELD_ID_ELEMENT_OFFSET, c.t.elem.leaf));
	}
	for (const h of HIDDEN)
		out.push(element(h.name, h.field_id, h.leaf));
	return out;
}

// ---- the readers -----------------------------------------------------------
//
// Each returns { elements, duckTypes?, kv: {key: value}, rows: [{name: raw}] }.

async function duckdbRead(conn, file)
{
	const q = async sql => (await conn.runAndReadAll(sql)).getRowObjects();
	const lit = `'${file.replace(/'/g, "''")}'`;
	const schema = await q(`SELECT * FROM parquet_schema(${lit})`);
	const num = v => (v === null ? undefined : Number(v));
	const elements = schema.slice(1).map(e => ({
		name: e.name, type: e.type ?? undefined, type_length: num(e.type_length),
		repetition_type: e.repetition_type, converted_type: e.converted_type ?? undefined,
		scale: num(e.scale), precision: num(e.precision), field_id: num(e.field_id),
		num_children: num(e.num_children),
	}));
	const described = await q(`DESCRIBE SELECT * FROM read_parquet(${lit})`);
	const kv = {};
	for (const r of await q(`SELECT key, value FROM parquet_kv_metadata(${lit})`))
		kv[Buffer.from(r.key.bytes).toString()] = Buffer.from(r.value.bytes).toString();
	const meta = (await q(`SELECT DISTINCT format_version, created_by FROM parquet_file_metadata(${lit})`))[0];
	return {
		elements,
		duckTypes: Object.fromEntries(described.map(d => [d.column_name, d.column_type])),
		kv,
		version: Number(meta.format_version),
		created_by: meta.created_by,
		rows: await q(`SELECT * FROM read_parquet(${lit})`),
	};
}

async function hyparquetRead(hp, compressors, file)
{
	const buf = await hp.asyncBufferFromFile(file);
	const metadata = await hp.parquetMetadataAsync(buf);
	const elements = metadata.schema.slice(1).map(e => ({ ...e }));
	// hyparquet turns DECIMAL into a JavaScript number, which cannot hold 30
	// digits: read the unscaled integers instead (the schema check above has
	// seen the DECIMAL annotation) and scale them exactly.
	const raw = structuredClone(metadata);
	for (const e of raw.schema)
		if (e.converted_type === 'DECIMAL')
		{
			delete e.converted_type;
			delete e.logical_type;
		}
	const rows = await hp.parquetReadObjects({
		file: buf, metadata: raw, compressors, utf8: false, useOffsetIndex: true,
		// Raw integers: JavaScript's Date holds neither 294246 AD nor µs.
		parsers: {
			dateFromDays: d => d,
			timestampFromMicroseconds: u => u,
			jsonFromBytes: b => b && new TextDecoder().decode(b),
		},
	});
	const kv = Object.fromEntries((metadata.key_value_metadata ?? []).map(e => [e.key, e.value]));
	return { elements, kv, version: metadata.version, created_by: metadata.created_by, rows };
}

async function openReader(which)
{
	if (which === 'duckdb')
	{
		const { DuckDBInstance } = require('@duckdb/node-api');
		const conn = await (await DuckDBInstance.create(':memory:')).connect();
		return file => duckdbRead(conn, file);
	}
	if (which === 'hyparquet')
	{
		const hp = require('hyparquet');
		const { compressors } = require('hyparquet-compressors');
		return file => hyparquetRead(hp, compressors, file);
	}
	throw new Error(`unknown reader ${which}`);
}

// ---- comparison ------------------------------------------------------------

const show = v => {
	const s = typeof v === 'string' ? JSON.stringify(v) : String(v);
	return s.length > 120 ? `${s.slice(0, 100)}... (${s.length} chars)` : s;
};

const stable = v => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x));

class Report
{
	constructor(reader)
	{
		this.reader = reader;
		this.problems = 0;
		this.values = 0;
	}

	fail(where, what)
	{
		if (++this.problems <= MAX_REPORTED)
			console.log(`${this.reader}: ${where}: ${what}`);
	}

	same(where, expected, got)
	{
		this.values++;
		if (expected !== got)
			this.fail(where, `expected ${show(expected)}, got ${show(got)}`);
	}
}

function checkSchema(report, file, columns, read)
{
	const where = basename(file);
	const expected = expectedElements(columns);
	const got = read.elements;
	report.same(`${where}: number of schema elements`, expected.length, got.length);
	for (let i = 0; i < Math.min(expected.length, got.length); i++)
		for (const [k, v] of Object.entries(expected[i]))
			// DuckDB's parquet_schema has no structured logical type; its
			// DESCRIBE below shows how it reads each column instead.
			if (!(k === 'logical_type' && read.duckTypes))
				report.same(`${where}: schema element ${expected[i].name}.${k}`, stable(v), stable(got[i][k]));
	if (read.duckTypes)
		for (const c of [...columns, ...HIDDEN])
			report.same(`${where}: DuckDB type of ${c.name}`, c.duck ?? c.t.duck, read.duckTypes[c.name]);
	report.same(`${where}: FileMetaData.version`, 2, read.version);
	report.same(`${where}: created_by`, true, /^ctxstore version \S+$/.test(read.created_by ?? ''));
	report.same(`${where}: ctxstore.format`, '2', read.kv['ctxstore.format']);
	let described = [];
	try
	{
		described = JSON.parse(read.kv['ctxstore.schema'] ?? 'null') ?? [];
	}
	catch (e)
	{
		report.fail(where, `ctxstore.schema is not JSON: ${e.message}`);
	}
	const byName = Object.fromEntries(described.map(d => [d.name, d]));
	for (const c of [...columns, ...HIDDEN])
	{
		const d = byName[c.name] ?? {};
		report.same(`${where}: ctxstore.schema field_id of ${c.name}`, c.field_id, d.field_id);
		if (c.t?.external)
			report.same(`${where}: ctxstore.schema pg_type of ${c.name}`, c.t.external, d.pg_type);
		if (c.t?.decimal)
			report.same(`${where}: ctxstore.schema precision,scale of ${c.name}`,
				`${c.t.leaf.precision},${c.t.leaf.scale}`, `${d.precision},${d.scale}`);
	}
	report.same(`${where}: ctxstore.schema columns`, columns.length + HIDDEN.length, described.length);
}

// Each expected row once per group, every value equal; the hidden columns
// say "live, committed within the window", the same commit time in every
// group.
function checkRows(report, reader, group, file, columns, read, expected, state)
{
	const key = columns[0].name;
	for (const row of read.rows)
	{
		const id = row[key];
		const where = `${group} ${basename(file)} row ${show(id)}`;
		const want = expected.get(id);
		if (!want)
		{
			report.fail(where, 'no such row in SELECT');
			continue;
		}
		if (state.seen.has(id))
			report.fail(where, `also in ${state.seen.get(id)}`);
		state.seen.set(id, basename(file));
		columns.forEach((c, i) => {
			const e = want[i] === null ? null : c.t.expected(want[i]);
			const v = row[c.name];
			const g = v === null || v === undefined ? null : c.t[reader](v);
			report.same(`${where} column ${c.name} (${c.type})`, e, g);
		});
		report.same(`${where} _ctx_tombstone`, false, row._ctx_tombstone);
		const ts = BigInt(reader === 'duckdb' ? row._ctx_commit_ts.micros : row._ctx_commit_ts);
		report.same(`${where} _ctx_commit_ts within the run`, true,
			ts >= state.window[0] && ts <= state.window[1]);
		const first = state.commitTs.get(id);
		if (first === undefined)
			state.commitTs.set(id, ts);
		else
			report.same(`${where} _ctx_commit_ts as in the other groups`, String(first), String(ts));
	}
}

async function check(reader, job)
{
	const columns = job.columns.map((c, i) => ({ ...c, field_id: i + 1, t: columnType(c.type) }));
	const expected = new Map(JSON.parse(readFileSync(job.expected, 'utf8')).map(r => [r[0], r]));
	const read = await openReader(reader);
	const report = new Report(reader);
	const state = { commitTs: new Map(), window: job.commit_window.map(BigInt) };
	let fragments = 0;
	for (const [group, files] of Object.entries(job.groups))
	{
		state.seen = new Map();
		for (const file of files)
		{
			let r;
			try
			{
				r = await read(file);
			}
			catch (e)
			{
				report.fail(`${group} ${basename(file)}`, `cannot read: ${e.message}`);
				continue;
			}
			fragments++;
			checkSchema(report, file, columns, r);
			checkRows(report, reader, group, file, columns, r, expected, state);
		}
		for (const id of expected.keys())
			if (!state.seen.has(id))
				report.fail(group, `row ${show(id)} of SELECT is in no fragment`);
	}
	if (report.problems > MAX_REPORTED)
		console.log(`${reader}: ... ${report.problems - MAX_REPORTED} more differences`);
	console.log(`${reader}: ${fragments} fragments, ${report.values} values compared, `
		+ `${report.problems} differences`);
	return report.problems === 0;
}

function selectSql(job)
{
	const cols = job.columns.map(c => columnType(c.type).sql(c.name));
	return `SELECT coalesce(json_agg(json_build_array(${cols.join(',\n  ')}) ORDER BY ${job.columns[0].name}), '[]') `
		+ `FROM ${job.table}`;
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'sql')
	console.log(selectSql(JSON.parse(readFileSync(args[0], 'utf8'))));
else if (mode === 'check')
	process.exitCode = (await check(args[0], JSON.parse(readFileSync(args[1], 'utf8')))) ? 0 : 1;
else
{
	console.error('usage: parquet_readers.mjs sql <job.json> | check duckdb|hyparquet <job.json>');
	process.exitCode = 2;
}
