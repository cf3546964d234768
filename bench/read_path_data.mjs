// The rows of bench/read_path.sh, from one seeded generator, so that
// PostgreSQL (COPY input) and LanceDB (bench/read_path_lance.mjs) get the
// same vectors without exporting 3 GB through COPY output.
//
//   node read_path_data.mjs rows ROWS DIM BOTS   COPY text rows 1..ROWS
//   node read_path_data.mjs query DIM            the query vector ('{...}')
//
// Embedding elements are integers in [-127, 127]: exact in float32 and in
// the COPY text both sides parse, and every dot product and norm of two
// such vectors stays below 2^24, so it is exact in float32 too: a float32
// kernel and a float64 one rank the same vectors alike (recall compares
// sets of ids, not rounding).  Cosine distance ignores the scale, so the
// kernels do the same work as on unit-norm floats.

const SEED = 0x9e3779b9;
const TURNS_PER_SESSION = 50;
const ROLES = ['user', 'assistant', 'tool'];
const WORDS = ('the agent user asked about order refund shipping invoice account ' +
	'password reset tool call returned result error retry context memory session ' +
	'summary plan step answer question follow up thanks please check status update ' +
	'delivery address payment card declined approved ticket escalate human review ' +
	'policy window days item size color stock warehouse tracking number label').split(' ');

// A 32-bit integer hash (two multiply-xorshift rounds).
export function mix(x) {
	x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
	x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
	return (x ^ (x >>> 16)) >>> 0;
}

// Row g's embedding (g = 0 is the query vector, rows are 1..ROWS).
export function fillVector(out, offset, g, dim) {
	const base = g * dim;
	for (let j = 0; j < dim; j++)
		out[offset + j] = (mix((base + j) ^ SEED) % 255) - 127;
}

export function sessionCount(rows) {
	return Math.max(1, Math.floor(rows / TURNS_PER_SESSION));
}

export function sessionOf(g, rows) {
	return mix(g ^ 0x5bd1e995) % sessionCount(rows);
}

export function sessionName(s) {
	return 's-' + String(s).padStart(7, '0');
}

export function botOf(g, rows, bots) {
	return 'bot-' + (sessionOf(g, rows) % bots);
}

export function idOf(g) {
	return 't' + String(g).padStart(9, '0');
}

function content(g) {
	const len = 200 + mix(g ^ 0x27d4eb2d) % 1801;
	const h = mix(g ^ 0x165667b1);
	let s = '';
	for (let w = 0; s.length < len; w++)
		s += WORDS[mix((h + w) >>> 0) % WORDS.length] + ' ';
	return s.slice(0, len);
}

// Turns arrive in time order, sessions interleaved (as agents write them).
function copyLine(g, rows, dim, bots, vec) {
	const s = sessionOf(g, rows);
	const created = new Date(Date.UTC(2026, 0, 1) + g * 1000).toISOString();
	const text = content(g);
	const meta = `{"turn": ${g}, "lang": "en", "model": "m-${g % 4}"}`;
	fillVector(vec, 0, g, dim);
	return [idOf(g), sessionName(s), 'bot-' + (s % bots), created, ROLES[g % 3], text,
		Math.floor(text.length / 4), meta, '{' + vec.join(',') + '}'].join('\t') + '\n';
}

async function writeRows(rows, dim, bots) {
	const vec = new Int32Array(dim);
	let chunk = '';
	for (let g = 1; g <= rows; g++) {
		chunk += copyLine(g, rows, dim, bots, vec);
		if (chunk.length > (1 << 20) || g === rows) {
			if (!process.stdout.write(chunk))
				await new Promise((resolve) => process.stdout.once('drain', resolve));
			chunk = '';
		}
	}
}

export function queryLiteral(dim) {
	const q = new Int32Array(dim);
	fillVector(q, 0, 0, dim);
	return '{' + q.join(',') + '}';
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const [cmd, ...args] = process.argv.slice(2);
	if (cmd === 'rows')
		await writeRows(Number(args[0]), Number(args[1]), Number(args[2]));
	else if (cmd === 'query')
		console.log(queryLiteral(Number(args[0])));
	else {
		console.error('usage: read_path_data.mjs rows ROWS DIM BOTS | query DIM');
		process.exit(2);
	}
}
