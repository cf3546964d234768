// Rebuilds a ctxstore table from its Iceberg metadata alone, the way an
// engine without a catalog service would (t/080_iceberg.pl drives it):
// version-hint.text names the newest vN.metadata.json; its current snapshot
// names the manifest list; the manifest list and the manifests are decoded
// with avsc against the Avro schemas of the Iceberg v2 spec (written out
// below from the spec, not taken from ctxstore); the live data files are
// read with DuckDB, projecting the columns of the Iceberg schema by name
// after checking that each Parquet column carries the Iceberg field id; and
// the live position-delete files are applied (a delete applies to the data
// files whose data sequence number is at most its own).
//
//   node iceberg_rebuild.mjs <table location directory>
//
// Prints a JSON object: {"snapshot_id", "base_version", "data_files",
// "delete_files", "position_deletes", "columns": [names], "rows": [each row
// as an array of text values (null for NULL), sorted]}.  Exits 1 with a
// message on anything that does not follow the spec.  The packages come
// from NODE_PATH (scripts/readers.sh install prints it).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const avro = require('avsc');
const { DuckDBInstance } = require('@duckdb/node-api');

// ---- the Avro schemas of the spec (format/spec.md, "Manifests", "Manifest
// Lists"), with their field ids -------------------------------------------

const opt = (type, id, name) => ({ name, type: ['null', type], default: null, 'field-id': id });
const req = (type, id, name) => ({ name, type, 'field-id': id });
const intMap = (name, kid, vid, vtype) => ({
	type: 'array', logicalType: 'map',
	items: { type: 'record', name, fields: [req('int', kid, 'key'), req(vtype, vid, 'value')] },
});

const MANIFEST_ENTRY = {
	type: 'record', name: 'manifest_entry', fields: [
		req('int', 0, 'status'),
		opt('long', 1, 'snapshot_id'),
		opt('long', 3, 'sequence_number'),
		opt('long', 4, 'file_sequence_number'),
		req({
			type: 'record', name: 'r2', fields: [
				req('int', 134, 'content'),
				req('string', 100, 'file_path'),
				req('string', 101, 'file_format'),
				req({ type: 'record', name: 'r102', fields: [] }, 102, 'partition'),
				req('long', 103, 'record_count'),
				req('long', 104, 'file_size_in_bytes'),
				opt(intMap('k117_v118', 117, 118, 'long'), 108, 'column_sizes'),
				opt(intMap('k119_v120', 119, 120, 'long'), 109, 'value_counts'),
				opt(intMap('k121_v122', 121, 122, 'long'), 110, 'null_value_counts'),
				opt(intMap('k138_v139', 138, 139, 'long'), 137, 'nan_value_counts'),
				opt(intMap('k126_v127', 126, 127, 'bytes'), 125, 'lower_bounds'),
				opt(intMap('k129_v130', 129, 130, 'bytes'), 128, 'upper_bounds'),
				opt('bytes', 131, 'key_metadata'),
				opt({ type: 'array', items: 'long', 'element-id': 133 }, 132, 'split_offsets'),
				opt({ type: 'array', items: 'int', 'element-id': 136 }, 135, 'equality_ids'),
				opt('int', 140, 'sort_order_id'),
			],
		}, 2, 'data_file'),
	],
};

const MANIFEST_FILE = {
	type: 'record', name: 'manifest_file', fields: [
		req('string', 500, 'manifest_path'),
		req('long', 501, 'manifest_length'),
		req('int', 502, 'partition_spec_id'),
		req('int', 517, 'content'),
		req('long', 515, 'sequence_number'),
		req('long', 516, 'min_sequence_number'),
		req('long', 503, 'added_snapshot_id'),
		req('int', 504, 'added_files_count'),
		req('int', 505, 'existing_files_count'),
		req('int', 506, 'deleted_files_count'),
		req('long', 512, 'added_rows_count'),
		req('long', 513, 'existing_rows_count'),
		req('long', 514, 'deleted_rows_count'),
		opt({
			type: 'array', 'element-id': 508, items: {
				type: 'record', name: 'r508', fields: [
					req('boolean', 509, 'contains_null'),
					opt('boolean', 518, 'contains_nan'),
					opt('bytes', 510, 'lower_bound'),
					opt('bytes', 511, 'upper_bound'),
				],
			},
		}, 507, 'partitions'),
		opt('bytes', 519, 'key_metadata'),
	],
};

const STATUS_DELETED = 2;
const CONTENT_DATA = 0;
const CONTENT_POSITION_DELETES = 1;

function fail(msg)
{
	process.stderr.write(`iceberg_rebuild: ${msg}\n`);
	process.exit(1);
}

const localPath = uri => (uri.startsWith('file:') ? fileURLToPath(uri) : fail(`not a local file: ${uri}`));

// Every field of an Avro schema (parsed JSON), nested ones too, has a
// field-id: Iceberg readers match manifest fields by id.
function checkFieldIds(schema, where)
{
	if (Array.isArray(schema))
		return schema.forEach(s => checkFieldIds(s, where));
	if (schema === null || typeof schema !== 'object')
		return;
	if (schema.type === 'record')
		for (const f of schema.fields)
		{
			if (!Number.isInteger(f['field-id']))
				fail(`${where}: field ${f.name} has no field-id`);
			checkFieldIds(f.type, where);
		}
	else if (schema.type === 'array')
		checkFieldIds(schema.items, where);
}

// Avro longs as BigInt: snapshot ids use all 63 bits.
const LONG = avro.types.LongType.__with({
	fromBuffer: buf => buf.readBigInt64LE(),
	toBuffer: n => { const buf = Buffer.alloc(8); buf.writeBigInt64LE(BigInt(n)); return buf; },
	fromJSON: BigInt,
	toJSON: Number,
	isValid: n => typeof n === 'bigint',
	compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
const parse = schema => avro.Type.forSchema(schema, { registry: { long: LONG } });

// The records of an Avro file, resolved to the spec's schema, and its
// metadata.
function readAvro(uri, readerSchema)
{
	const path = localPath(uri);
	const type = parse(readerSchema);
	return new Promise((resolve, reject) => {
		const records = [];
		let meta = null;
		avro.createFileDecoder(path, { readerSchema: type, parseHook: parse })
			.on('metadata', (_writerType, _codec, header) => { meta = header.meta; })
			.on('data', r => records.push(r))
			.on('error', e => reject(new Error(`${path}: ${e.message}`)))
			.on('end', () => {
				const text = k => (meta[k] === undefined ? undefined : meta[k].toString());
				checkFieldIds(JSON.parse(text('avro.schema')), path);
				resolve({ records, text });
			});
	});
}

const num = v => Number(v);

async function main()
{
	const location = process.argv[2] ?? fail('usage: iceberg_rebuild.mjs <table location directory>');
	const hint = readFileSync(`${location}/metadata/version-hint.text`, 'utf8').trim();
	const text = readFileSync(`${location}/metadata/v${hint}.metadata.json`, 'utf8');
	const meta = JSON.parse(text);
	// Snapshot ids are 63-bit: JSON.parse rounds them, so the id is taken
	// from the text wherever it is compared with another spelling of it.
	const snapshotId = (text.match(/"current-snapshot-id"\s*:\s*(\d+)/) ?? fail('no current-snapshot-id'))[1];
	if (meta['format-version'] !== 2)
		fail(`format-version ${meta['format-version']}`);
	const snap = meta.snapshots.find(s => s['snapshot-id'] === meta['current-snapshot-id'])
		?? fail('no current snapshot');
	if (meta.refs?.main?.['snapshot-id'] !== snap['snapshot-id'])
		fail('refs.main is not the current snapshot');
	const schema = meta.schemas.find(s => s['schema-id'] === meta['current-schema-id'])
		?? fail('no current schema');

	const list = await readAvro(snap['manifest-list'], MANIFEST_FILE);
	if (list.text('format-version') !== '2' || list.text('snapshot-id') !== snapshotId)
		fail('manifest list metadata does not name the snapshot');
	const data = [];
	const deletes = [];
	for (const m of list.records)
	{
		const manifest = await readAvro(m.manifest_path, MANIFEST_ENTRY);
		const content = manifest.text('content');
		if (content !== (m.content === CONTENT_DATA ? 'data' : 'deletes') ||
			manifest.text('format-version') !== '2' || manifest.text('partition-spec-id') !== '0')
			fail(`${m.manifest_path}: manifest metadata disagrees with the manifest list`);
		for (const e of manifest.records)
		{
			if (e.status === STATUS_DELETED)
				continue;
			// ADDED entries may leave sequence numbers to their manifest's.
			const seq = num(e.sequence_number ?? m.sequence_number);
			const f = { path: localPath(e.data_file.file_path), seq, records: num(e.data_file.record_count) };
			if (e.data_file.content === CONTENT_DATA && m.content === CONTENT_DATA)
				data.push(f);
			else if (e.data_file.content === CONTENT_POSITION_DELETES && m.content === 1)
				deletes.push(f);
			else
				fail(`${m.manifest_path}: entry of content ${e.data_file.content}`);
		}
	}

	const db = await DuckDBInstance.create(':memory:');
	const conn = await db.connect();
	const q = async sql => (await conn.runAndReadAll(sql)).getRowObjects();
	const lit = s => `'${s.replace(/'/g, "''")}'`;

	// Position deletes: data file path -> set of positions, by sequence
	// number.
	const deleted = new Map();
	let positionDeletes = 0;
	for (const d of deletes)
		for (const r of await q(`SELECT file_path, pos FROM read_parquet(${lit(d.path)})`))
		{
			const target = localPath(r.file_path);
			const dataFile = data.find(f => f.path === target);
			positionDeletes++;
			if (dataFile === undefined || dataFile.seq > d.seq)
				continue;
			if (!deleted.has(target))
				deleted.set(target, new Set());
			deleted.get(target).add(Number(r.pos));
		}

	const names = schema.fields.map(f => f.name);
	const rows = [];
	for (const f of data)
	{
		const ids = new Map((await q(`SELECT name, field_id FROM parquet_schema(${lit(f.path)})`))
			.map(e => [e.name, e.field_id === null ? null : Number(e.field_id)]));
		for (const c of schema.fields)
			if (ids.get(c.name) !== c.id)
				fail(`${f.path}: column ${c.name} has field id ${ids.get(c.name)}, the schema ${c.id}`);
		const cols = names.map(n => `"${n.replace(/"/g, '""')}"`).join(', ');
		const got = await q(`SELECT file_row_number AS pos, ${cols} FROM read_parquet(${lit(f.path)}, file_row_number = true)`);
		if (got.length !== f.records)
			fail(`${f.path}: ${got.length} rows, the manifest says ${f.records}`);
		for (const r of got)
			if (!deleted.get(f.path)?.has(Number(r.pos)))
				rows.push(names.map(n => (r[n] === null ? null : String(r[n]))));
	}
	rows.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
	process.stdout.write(JSON.stringify({
		snapshot_id: snapshotId,
		base_version: snap.summary['ctxstore.base-version'],
		data_files: data.length,
		delete_files: deletes.length,
		position_deletes: positionDeletes,
		columns: names,
		rows,
	}) + '\n');
}

main().catch(e => fail(e.stack ?? String(e)));
