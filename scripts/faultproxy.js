#!/usr/bin/env node
// faultproxy.js — an HTTP proxy that injects faults in front of an object-store
// emulator, for the storage engine's retry and lost-acknowledgement tests.
// Node's http module only; no npm dependencies.
//
//   node scripts/faultproxy.js --listen 127.0.0.1:4569 --target 127.0.0.1:4568 \
//        --control 127.0.0.1:4570
//
// Requests to --listen are forwarded unchanged (Host header included, so
// signatures stay valid) unless a fault rule matches.
//
// --emulate-conditional-put 1 makes the proxy enforce "If-None-Match: *" on
// PUT and POST (multipart completion) for a target that ignores it (s3rver):
// it HEADs the object first and answers 412 if it exists.  Conditional
// writes of one path are handled one at a time (the next one's HEAD waits
// until the previous one's answer from the target is in), so that for the
// clients of one proxy, several clusters included, put-if-absent is atomic
// as on a real S3.
//
// --verify-sigv4 ACCESS_KEY_ID:SECRET makes the proxy an independent SigV4
// checker (for a target that does not verify signatures: s3rver): every
// request must carry a header-based AWS4-HMAC-SHA256 signature by that key
// (for --verify-region, default us-east-1, and --verify-service, default s3)
// over what actually arrived — method, path, query, the signed headers and a
// body whose SHA-256 is the x-amz-content-sha256 it claims (unless
// UNSIGNED-PAYLOAD) — dated within 15 minutes.  Anything else is answered as
// S3 would (403 SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied,
// RequestTimeTooSkewed; 400 XAmzContentSHA256Mismatch,
// AuthorizationHeaderMalformed) and not forwarded; the canonical request and
// string to sign the proxy computed are in the error body and its log.
// The verifier is written from AWS's specification, not from the client's
// signer; `node scripts/faultproxy.js --self-test` checks it against AWS's
// published examples and exits 0 when they all pass.
//
// Rules are queued through the control port:
//
//   POST   /faults   {"action": A, "count": N, "method": M, "path": REGEX, ...}
//                    adds a rule that fires for the next N matching requests
//                    (default 1; method and path are optional filters; path is
//                    matched against the request path without its query);
//                    with "for_ms": T instead, for every matching request in
//                    the next T milliseconds (an outage of T ms)
//   DELETE /faults   removes every rule
//   GET    /stats    {"requests", "by_method", "connections", "fired",
//                    "verified", "refused"} since the last reset
//                    (by_method: requests per HTTP method; verified/refused
//                    count SigV4 checks with --verify-sigv4; "last_refusal"
//                    says why the latest refusal happened)
//   GET    /trace    the latest 1000 forwarded requests since the last reset,
//                    oldest first, each {"start", "end" (ms since the epoch,
//                    when it was forwarded and when its answer was sent), "method",
//                    "path", "status"}: a timeline of what a client waited for
//   POST   /stats/reset
//
// Actions:
//   status         answer with "status" (default 503) without forwarding; an
//                  S3/Azure-style XML error body with "code" (default
//                  "ServiceUnavailable") and any extra "headers"
//   delay          forward, then hold the response for "ms" milliseconds
//   reset          reset the client connection without forwarding
//   drop_response  forward and let the write land, then reset the client
//                  connection instead of answering (a lost acknowledgement)
//   hang           read the request, neither forward nor answer it: the
//                  client waits until its own timeout (a store that stopped
//                  answering)
'use strict';

const crypto = require('crypto');
const http = require('http');

function parseArgs(argv) {
  const args = {};
  for (let i = 2; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ['listen', 'target', 'control']) {
    if (!args[k]) throw new Error(`--${k} host:port is required`);
  }
  return args;
}

function hostPort(s) {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

const ACTIONS = new Set(['status', 'delay', 'reset', 'drop_response', 'hang']);
let rules = [];
function freshStats() {
  return { requests: 0, by_method: {}, connections: 0, fired: 0, verified: 0, refused: 0, last_refusal: '' };
}
let stats = freshStats();
const TRACE_LENGTH = 1000;
let trace = [];

function traceRequest(req, start, status) {
  trace.push({ start, end: Date.now(), method: req.method, path: req.url.split('?')[0], status });
  if (trace.length > TRACE_LENGTH) trace.shift();
}

// The first rule that matches takes the request; spent rules are dropped.
function takeRule(req) {
  const path = req.url.split('?')[0];
  const now = Date.now();
  rules = rules.filter((x) => x.until === null || x.until > now);
  for (const r of rules) {
    if (r.count <= 0) continue;
    if (r.method && r.method !== req.method) continue;
    if (r.pathRe && !r.pathRe.test(path)) continue;
    r.count--;
    stats.fired++;
    rules = rules.filter((x) => x.count > 0);
    return r;
  }
  return null;
}

function answerError(req, res, rule) {
  const status = rule.status || 503;
  const code = rule.code || 'ServiceUnavailable';
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
    `<Message>injected by faultproxy</Message></Error>`;
  req.resume();
  res.writeHead(status, Object.assign({
    'Content-Type': 'application/xml',
    'Content-Length': Buffer.byteLength(body),
  }, rule.headers || {}));
  res.end(req.method === 'HEAD' ? undefined : body);
}

// RST rather than FIN, so the client sees a reset, not a clean close.
function resetClient(req) {
  const sock = req.socket;
  if (typeof sock.resetAndDestroy === 'function') sock.resetAndDestroy();
  else sock.destroy();
}

// --- SigV4 verification (--verify-sigv4) ---------------------------------
//
// Written from AWS's description of header-based SigV4 for S3 ("Signature
// Calculations for the Authorization Header"), independently of the
// client's signer:
//
//   CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//                      CanonicalHeaders \n SignedHeaders \n HashedPayload
//   CanonicalURI     = UriEncode(absolute path), '/' kept; S3 encodes once
//                      and does not normalise the path
//   CanonicalQuery   = UriEncode(name)=UriEncode(value) ('/' encoded too),
//                      sorted by name (then value), joined with '&'
//   CanonicalHeaders = lowercase(name):trimall(value)\n for each signed
//                      header, sorted; repeated headers comma-joined
//   HashedPayload    = the x-amz-content-sha256 header
//   StringToSign     = "AWS4-HMAC-SHA256" \n x-amz-date \n
//                      date/region/service/aws4_request \n hex(SHA256(CR))
//   SigningKey       = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region),
//                      service), "aws4_request")
//   Signature        = hex(HMAC(SigningKey, StringToSign))
//
// The path and query are taken as they arrived, percent-decoded and encoded
// again the canonical way, as S3 does: a client that signs an encoding
// different from the canonical one fails here as it would against S3.

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const MAX_SKEW_MS = 15 * 60 * 1000;

// UriEncode of the spec: bytes of A-Z a-z 0-9 - . _ ~ as they are, '/' as
// it is unless encodeSlash, everything else %XX with upper-case hex.
function uriEncode(bytes, encodeSlash) {
  let out = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-._~]/.test(c) || (c === '/' && !encodeSlash)) out += c;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

// Percent-decodes s into bytes; null if it holds a malformed escape.
function pctDecode(s) {
  const raw = Buffer.from(s, 'utf8');
  const out = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== 0x25) {
      out.push(raw[i]);
      continue;
    }
    const hex = raw.slice(i + 1, i + 3).toString('latin1');
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return null;
    out.push(parseInt(hex, 16));
    i += 2;
  }
  return Buffer.from(out);
}

function sha256Hex(data) {
  return crypto.createHash('sha256').update(data).digest('hex');
}

function hmac(key, data) {
  return crypto.createHmac('sha256', key).update(data, 'utf8').digest();
}

function canonicalUri(path) {
  const bytes = pctDecode(path === '' ? '/' : path);
  return bytes === null ? null : uriEncode(bytes, false);
}

function canonicalQuery(query) {
  const params = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = pctDecode(eq < 0 ? part : part.slice(0, eq));
    const value = pctDecode(eq < 0 ? '' : part.slice(eq + 1));
    if (name === null || value === null) return null;
    params.push([uriEncode(name, true), uriEncode(value, true)]);
  }
  // Byte order; the encoded names are ASCII, so code-unit order is byte order.
  params.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return params.map(([n, v]) => `${n}=${v}`).join('&');
}

// lowercase name -> canonical value (trimmed, inner runs of spaces made one,
// repeated headers joined with ',').
function headerValues(rawHeaders) {
  const h = new Map();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    const value = String(rawHeaders[i + 1]).trim().replace(/\s+/g, ' ');
    h.set(name, h.has(name) ? `${h.get(name)},${value}` : value);
  }
  return h;
}

// Authorization: AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request,
//                SignedHeaders=a;b;c, Signature=hex
function parseAuthorization(value) {
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/.exec(value);
  if (!m) return null;
  const fields = {};
  for (const kv of m[1].split(',')) {
    const t = kv.trim();
    const eq = t.indexOf('=');
    if (eq <= 0) return null;
    const k = t.slice(0, eq);
    if (k in fields) return null;
    fields[k] = t.slice(eq + 1);
  }
  if (!fields.Credential || !fields.SignedHeaders || !fields.Signature) return null;
  const cred = fields.Credential.split('/');
  if (cred.length !== 5) return null;
  return {
    accessKeyId: cred[0],
    date: cred[1],
    region: cred[2],
    service: cred[3],
    terminator: cred[4],
    signedHeaders: fields.SignedHeaders,
    signature: fields.Signature,
  };
}

function amzDateMs(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return NaN;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

function refusal(status, code, message, extra) {
  return Object.assign({ ok: false, status, code, message }, extra || {});
}

// Verifies req = {method, url, rawHeaders, body} against cfg = {accessKeyId,
// secret, region, service, now (ms)}.  Returns {ok: true, ...} or a refusal
// {ok: false, status, code, message, canonicalRequest?, stringToSign?}.
function verifySigV4(req, cfg) {
  const headers = headerValues(req.rawHeaders);
  const authz = headers.get('authorization');
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const query = q < 0 ? '' : req.url.slice(q + 1);

  if (authz === undefined) {
    if (/(^|&)X-Amz-Signature=/i.test(query)) {
      return refusal(403, 'AccessDenied', 'presigned URLs are not checked by this verifier');
    }
    return refusal(403, 'AccessDenied', 'request carries no Authorization header');
  }
  const a = parseAuthorization(authz);
  if (a === null) {
    return refusal(400, 'AuthorizationHeaderMalformed', 'Authorization is not AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...');
  }
  if (a.accessKeyId !== cfg.accessKeyId) {
    return refusal(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  }
  if (a.region !== cfg.region || a.service !== cfg.service || a.terminator !== 'aws4_request' ||
      !/^\d{8}$/.test(a.date)) {
    return refusal(400, 'AuthorizationHeaderMalformed',
      `credential scope ${a.date}/${a.region}/${a.service}/${a.terminator} is not <yyyymmdd>/${cfg.region}/${cfg.service}/aws4_request`);
  }
  if (!/^[0-9a-f]{64}$/.test(a.signature)) {
    return refusal(403, 'SignatureDoesNotMatch', 'Signature is not 64 lower-case hex digits');
  }

  // Signed headers: lower-case, sorted, no repeats, all present; host and
  // every x-amz-* header the request carries among them.
  const signed = a.signedHeaders.split(';');
  for (let i = 0; i < signed.length; i++) {
    const n = signed[i];
    if (n === '' || n !== n.toLowerCase() || (i > 0 && signed[i - 1] >= n)) {
      return refusal(400, 'AuthorizationHeaderMalformed', `SignedHeaders ${a.signedHeaders} is not a sorted list of distinct lower-case names`);
    }
    if (!headers.has(n)) {
      return refusal(403, 'AccessDenied', `signed header ${n} is not in the request`);
    }
  }
  if (!signed.includes('host')) {
    return refusal(403, 'AccessDenied', 'host is not among the signed headers');
  }
  for (const n of headers.keys()) {
    if (n.startsWith('x-amz-') && !signed.includes(n)) {
      return refusal(403, 'AccessDenied', `There were headers present in the request which were not signed: ${n}`);
    }
  }

  // Date: x-amz-date (or Date), matching the scope, within 15 minutes.
  const amzDate = headers.get('x-amz-date');
  if (amzDate === undefined) {
    return refusal(403, 'AccessDenied', 'AWS authentication requires a valid x-amz-date header');
  }
  const t = amzDateMs(amzDate);
  if (Number.isNaN(t) || amzDate.slice(0, 8) !== a.date) {
    return refusal(403, 'SignatureDoesNotMatch', `x-amz-date ${amzDate} is not a yyyymmddThhmmssZ of the credential's day ${a.date}`);
  }
  if (Math.abs(cfg.now - t) > MAX_SKEW_MS) {
    return refusal(403, 'RequestTimeTooSkewed', `x-amz-date ${amzDate} is more than 15 minutes from the proxy's clock`);
  }

  // Payload: the hash it claims is the hash of what arrived.
  const payloadHash = headers.get('x-amz-content-sha256');
  if (payloadHash === undefined) {
    return refusal(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  }
  if (payloadHash !== 'UNSIGNED-PAYLOAD') {
    if (!/^[0-9a-f]{64}$/.test(payloadHash)) {
      return refusal(400, 'InvalidArgument', `x-amz-content-sha256 ${payloadHash} is neither a SHA-256 nor UNSIGNED-PAYLOAD (streaming signatures are not checked)`);
    }
    const got = sha256Hex(req.body);
    if (got !== payloadHash) {
      return refusal(400, 'XAmzContentSHA256Mismatch', `The provided 'x-amz-content-sha256' header does not match what was computed: ${got}`);
    }
  }

  const cUri = canonicalUri(path);
  const cQuery = canonicalQuery(query);
  if (cUri === null || cQuery === null) {
    return refusal(400, 'InvalidURI', 'malformed percent-encoding in the request URI');
  }
  const canonicalRequest = [
    req.method,
    cUri,
    cQuery,
    signed.map((n) => `${n}:${headers.get(n)}\n`).join(''),
    a.signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${a.date}/${a.region}/${a.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key = hmac('AWS4' + cfg.secret, a.date);
  key = hmac(key, a.region);
  key = hmac(key, a.service);
  key = hmac(key, 'aws4_request');
  const expected = crypto.createHmac('sha256', key).update(stringToSign, 'utf8').digest();
  const given = Buffer.from(a.signature, 'hex');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
    return refusal(403, 'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided.',
      { canonicalRequest, stringToSign });
  }
  return { ok: true, canonicalRequest, stringToSign };
}

function xmlEscape(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function answerRefusal(req, res, r) {
  let body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${r.code}</Code>` +
    `<Message>${xmlEscape(r.message)}</Message>`;
  if (r.stringToSign !== undefined) {
    body += `<StringToSign>${xmlEscape(r.stringToSign)}</StringToSign>` +
      `<CanonicalRequest>${xmlEscape(r.canonicalRequest)}</CanonicalRequest>`;
  }
  body += '<Resource>' + xmlEscape(req.url) + '</Resource></Error>';
  res.writeHead(r.status, {
    'Content-Type': 'application/xml',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

let verifyCfg = null;

// Calls go(body) once the whole body has arrived; never for a request whose
// client went away before (as S3 and Azure apply no write they did not get
// whole: forwarded, a partial body could land in the target as an object,
// and a conditional write would hold its path's queue while it waits).
function readBody(req, go) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => go(Buffer.concat(chunks)));
}

// Refuses the request (its whole body given) or calls go().
function verifyThen(req, res, body, go) {
  const r = verifySigV4({ method: req.method, url: req.url, rawHeaders: req.rawHeaders, body },
    Object.assign({ now: Date.now() }, verifyCfg));
  if (r.ok) {
    stats.verified++;
    return go();
  }
  stats.refused++;
  stats.last_refusal = `${req.method} ${req.url}: ${r.code}: ${r.message}`;
  console.error(`faultproxy: refused ${stats.last_refusal}` +
    (r.canonicalRequest !== undefined
      ? `\n--- canonical request ---\n${r.canonicalRequest}\n--- string to sign ---\n${r.stringToSign}\n---`
      : ''));
  answerRefusal(req, res, r);
}

// --- self-test against AWS's published examples ---------------------------

function selfTest() {
  const AKID = 'AKIAIOSFODNN7EXAMPLE';
  const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const cfg = { accessKeyId: AKID, secret: SECRET, region: 'us-east-1', service: 's3', now: Date.UTC(2013, 4, 24, 0, 5, 0) };
  const host = 'examplebucket.s3.amazonaws.com';
  const date = '20130524T000000Z';
  const auth = (signedHeaders, sig) =>
    `AWS4-HMAC-SHA256 Credential=${AKID}/20130524/us-east-1/s3/aws4_request,SignedHeaders=${signedHeaders},Signature=${sig}`;
  const getObject = () => ({
    method: 'GET',
    url: '/test.txt',
    rawHeaders: ['Host', host, 'Range', 'bytes=0-9', 'x-amz-content-sha256', EMPTY_SHA256, 'x-amz-date', date,
      'Authorization', auth('host;range;x-amz-content-sha256;x-amz-date', 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41')],
    body: Buffer.alloc(0),
  });
  const putObject = (url) => ({
    method: 'PUT',
    url,
    rawHeaders: ['Host', host, 'Date', 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-date', date,
      'x-amz-storage-class', 'REDUCED_REDUNDANCY',
      'x-amz-content-sha256', '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      'Authorization', auth('date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class', '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd')],
    body: Buffer.from('Welcome to Amazon S3.'),
  });
  const bucketGet = (url, sig) => ({
    method: 'GET',
    url,
    rawHeaders: ['Host', host, 'x-amz-date', date, 'x-amz-content-sha256', EMPTY_SHA256,
      'Authorization', auth('host;x-amz-content-sha256;x-amz-date', sig)],
    body: Buffer.alloc(0),
  });
  const lifecycleSig = 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543';
  const listSig = '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7';
  const withHeader = (r, name, value) => Object.assign({}, r, { rawHeaders: r.rawHeaders.concat([name, value]) });
  const edit = (r, name, value) => {
    const h = r.rawHeaders.slice();
    h[h.findIndex((x, i) => i % 2 === 0 && x.toLowerCase() === name) + 1] = value;
    return Object.assign({}, r, { rawHeaders: h });
  };
  const cases = [
    // AWS's examples, as published.
    ['GET object (AWS example)', getObject(), cfg, 'ok'],
    ['PUT object (AWS example, $ sent raw)', putObject('/test$file.text'), cfg, 'ok'],
    ['PUT object (AWS example, $ sent as %24)', putObject('/test%24file.text'), cfg, 'ok'],
    ['GET bucket lifecycle (AWS example)', bucketGet('/?lifecycle', lifecycleSig), cfg, 'ok'],
    ['GET bucket lifecycle, lifecycle= (AWS example)', bucketGet('/?lifecycle=', lifecycleSig), cfg, 'ok'],
    ['list objects (AWS example)', bucketGet('/?max-keys=2&prefix=J', listSig), cfg, 'ok'],
    ['list objects, query in another order', bucketGet('/?prefix=J&max-keys=2', listSig), cfg, 'ok'],
    ['header values are trimmed', edit(getObject(), 'range', '  bytes=0-9 '), cfg, 'ok'],
    // What must be refused.
    ['a changed signature', edit(getObject(), 'authorization',
      auth('host;range;x-amz-content-sha256;x-amz-date', 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb42')), cfg, 'SignatureDoesNotMatch'],
    ['the wrong secret', getObject(), Object.assign({}, cfg, { secret: SECRET + 'x' }), 'SignatureDoesNotMatch'],
    ['an unknown key id', getObject(), Object.assign({}, cfg, { accessKeyId: 'AKIDOTHER' }), 'InvalidAccessKeyId'],
    ['another region', getObject(), Object.assign({}, cfg, { region: 'eu-west-1' }), 'AuthorizationHeaderMalformed'],
    ['a changed signed header', edit(getObject(), 'range', 'bytes=0-10'), cfg, 'SignatureDoesNotMatch'],
    ['a changed path', Object.assign(getObject(), { url: '/test.txt2' }), cfg, 'SignatureDoesNotMatch'],
    ['a doubly encoded path', putObject('/test%2524file.text'), cfg, 'SignatureDoesNotMatch'],
    ['a changed query', bucketGet('/?max-keys=3&prefix=J', listSig), cfg, 'SignatureDoesNotMatch'],
    ['a changed method', Object.assign(getObject(), { method: 'HEAD' }), cfg, 'SignatureDoesNotMatch'],
    ['a body not matching its hash', Object.assign(putObject('/test$file.text'), { body: Buffer.from('Welcome to Amazon S3!') }), cfg, 'XAmzContentSHA256Mismatch'],
    ['an unsigned x-amz- header', withHeader(getObject(), 'x-amz-security-token', 'TOKEN'), cfg, 'AccessDenied'],
    ['no Authorization', Object.assign(getObject(), { rawHeaders: getObject().rawHeaders.slice(0, 8) }), cfg, 'AccessDenied'],
    ['a date 16 minutes off', getObject(), Object.assign({}, cfg, { now: Date.UTC(2013, 4, 24, 0, 16, 1) }), 'RequestTimeTooSkewed'],
  ];
  let failed = 0;
  for (const [name, req, c, want] of cases) {
    const r = verifySigV4(req, c);
    const got = r.ok ? 'ok' : r.code;
    const pass = got === want;
    if (!pass) failed++;
    console.log(`${pass ? 'ok' : 'FAIL'} - ${name}: ${got}${pass ? '' : ` (expected ${want}${r.message ? `; ${r.message}` : ''})`}`);
    if (!pass && r.canonicalRequest) console.log(`--- canonical request ---\n${r.canonicalRequest}\n---`);
  }
  // The canonical-request hashes AWS publishes for two of the examples.
  const published = [
    ['GET object', getObject(), '7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972'],
    ['PUT object', putObject('/test$file.text'), '9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d'],
  ];
  for (const [name, req, want] of published) {
    const r = verifySigV4(req, cfg);
    const got = r.ok ? sha256Hex(r.canonicalRequest) : '';
    const pass = got === want;
    if (!pass) failed++;
    console.log(`${pass ? 'ok' : 'FAIL'} - ${name} canonical request hashes as AWS publishes: ${got}`);
  }
  const total = cases.length + published.length;
  console.log(failed ? `self-test: ${failed} of ${total} FAILED` : `self-test: all ${total} passed`);
  return failed === 0;
}

const upstreamAgent = new http.Agent({ keepAlive: true });
let emulateConditional = false;

function preconditionFailed(req, res) {
  req.resume();
  answerError(req, res, { status: 412, code: 'PreconditionFailed' });
}

// How long the proxy waits for the target before it gives a request up.
const UPSTREAM_TIMEOUT_MS = 10000;

// The tail of the queue of conditional writes per path: a promise that
// settles once the latest one queued is done with the target.
const conditionalTails = new Map();

// Runs step(done) after every conditional write of path queued before it
// called its done(); a path's entry goes once its queue is empty.
function serialisePath(path, step) {
  const prev = conditionalTails.get(path) || Promise.resolve();
  let release;
  const mine = new Promise((resolve) => { release = resolve; });
  const tail = prev.then(() => mine);
  conditionalTails.set(path, tail);
  prev.then(() => step(() => {
    release();
    if (conditionalTails.get(path) === tail) conditionalTails.delete(path);
  }));
}

// With --emulate-conditional-put: calls go(done) unless the request is a
// conditional write of an object that exists; done() is to be called once
// the target has answered the write (no-op for other requests).
function checkCondition(target, req, res, go) {
  const conditional = (req.method === 'PUT' || req.method === 'POST') &&
    req.headers['if-none-match'] === '*' && !/[?&]partNumber=/.test(req.url);
  if (!emulateConditional || !conditional) return go(() => {});
  const path = req.url.split('?')[0];
  serialisePath(path, (done) => {
    const head = http.request({
      host: target.host,
      port: target.port,
      method: 'HEAD',
      path,
      agent: upstreamAgent,
    }, (hr) => {
      hr.resume();
      if (hr.statusCode === 200) {
        done();
        preconditionFailed(req, res);
      } else go(done);
    });
    head.on('error', () => go(done));
    head.setTimeout(UPSTREAM_TIMEOUT_MS, () => head.destroy(new Error('no answer to HEAD')));
    head.end();
  });
}

// body: the request's whole body (readBody).
function forward(target, req, res, rule, body) {
  checkCondition(target, req, res, (done) => forwardNow(target, req, res, rule, body, done));
}

// done() is called once the target's answer is in or the request failed.
function forwardNow(target, req, res, rule, body, done) {
  const start = Date.now();
  const up = http.request({
    host: target.host,
    port: target.port,
    method: req.method,
    path: req.url,
    headers: req.headers,
    agent: upstreamAgent,
  }, (upRes) => {
    up.setTimeout(0);
    const chunks = [];
    upRes.on('data', (c) => chunks.push(c));
    upRes.on('end', () => {
      done();
      if (rule && rule.action === 'drop_response') {
        resetClient(req);
        return;
      }
      const send = () => {
        if (res.destroyed || res.headersSent) return;
        traceRequest(req, start, upRes.statusCode);
        res.writeHead(upRes.statusCode, upRes.headers);
        res.end(Buffer.concat(chunks));
      };
      if (rule && rule.action === 'delay') setTimeout(send, rule.ms || 0);
      else send();
    });
  });
  up.on('error', (e) => {
    done();
    if (!res.headersSent) {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`faultproxy: upstream error: ${e.message}\n`);
    }
  });
  // A target that stops answering must not hold a path's queue.
  up.setTimeout(UPSTREAM_TIMEOUT_MS, () => up.destroy(new Error('no answer from the target')));
  up.end(body);
}

function startProxy(listen, target) {
  const server = http.createServer((req, res) => {
    stats.requests++;
    stats.by_method[req.method] = (stats.by_method[req.method] || 0) + 1;
    const rule = takeRule(req);
    if (rule && rule.action === 'status') return answerError(req, res, rule);
    if (rule && rule.action === 'reset') {
      req.resume();
      return resetClient(req);
    }
    if (rule && rule.action === 'hang') return req.resume();
    readBody(req, (body) => {
      if (verifyCfg) verifyThen(req, res, body, () => forward(target, req, res, rule, body));
      else forward(target, req, res, rule, body);
    });
  });
  server.on('connection', () => { stats.connections++; });
  server.keepAliveTimeout = 60000;
  server.listen(listen.port, listen.host);
  return server;
}

function readJson(req, cb) {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    try {
      cb(null, body ? JSON.parse(body) : {});
    } catch (e) {
      cb(e);
    }
  });
}

function reply(res, status, obj) {
  const body = JSON.stringify(obj) + '\n';
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(body);
}

function addRule(spec) {
  if (!ACTIONS.has(spec.action)) throw new Error(`unknown action ${spec.action}`);
  rules.push({
    action: spec.action,
    count: spec.for_ms !== undefined ? Infinity :
      spec.count === undefined ? 1 : Number(spec.count),
    until: spec.for_ms !== undefined ? Date.now() + Number(spec.for_ms) : null,
    method: spec.method,
    pathRe: spec.path ? new RegExp(spec.path) : null,
    status: spec.status,
    code: spec.code,
    headers: spec.headers,
    ms: spec.ms,
  });
}

function startControl(listen) {
  const server = http.createServer((req, res) => {
    if (req.url === '/faults' && req.method === 'POST') {
      return readJson(req, (e, spec) => {
        try {
          if (e) throw e;
          addRule(spec);
          reply(res, 200, { rules: rules.length });
        } catch (err) {
          reply(res, 400, { error: err.message });
        }
      });
    }
    req.resume();
    if (req.url === '/faults' && req.method === 'DELETE') {
      rules = [];
      return reply(res, 200, { rules: 0 });
    }
    if (req.url === '/stats' && req.method === 'GET') return reply(res, 200, stats);
    if (req.url === '/trace' && req.method === 'GET') return reply(res, 200, trace);
    if (req.url === '/stats/reset' && req.method === 'POST') {
      stats = freshStats();
      trace = [];
      return reply(res, 200, stats);
    }
    reply(res, 404, { error: 'unknown control request' });
  });
  server.listen(listen.port, listen.host);
  return server;
}

function main() {
  if (process.argv[2] === '--self-test') process.exit(selfTest() ? 0 : 1);
  const args = parseArgs(process.argv);
  emulateConditional = args['emulate-conditional-put'] === '1';
  if (args['verify-sigv4']) {
    const i = args['verify-sigv4'].indexOf(':');
    if (i <= 0) throw new Error('--verify-sigv4 takes ACCESS_KEY_ID:SECRET');
    verifyCfg = {
      accessKeyId: args['verify-sigv4'].slice(0, i),
      secret: args['verify-sigv4'].slice(i + 1),
      region: args['verify-region'] || 'us-east-1',
      service: args['verify-service'] || 's3',
    };
  }
  startProxy(hostPort(args.listen), hostPort(args.target));
  startControl(hostPort(args.control));
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
}

main();
