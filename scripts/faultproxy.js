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
// it HEADs the object first and answers 412 if it exists.  That check is not
// atomic with the write, which is good enough for single-writer tests of the
// client's handling of 412 (the probe, lost acknowledgements), and for
// nothing else.
//
// Rules are queued through the control port:
//
//   POST   /faults   {"action": A, "count": N, "method": M, "path": REGEX, ...}
//                    adds a rule that fires for the next N matching requests
//                    (default 1; method and path are optional filters; path is
//                    matched against the request path without its query)
//   DELETE /faults   removes every rule
//   GET    /stats    {"requests", "connections", "fired"} since the last reset
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
'use strict';

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

const ACTIONS = new Set(['status', 'delay', 'reset', 'drop_response']);
let rules = [];
let stats = { requests: 0, connections: 0, fired: 0 };

// The first rule that matches takes the request; spent rules are dropped.
function takeRule(req) {
  const path = req.url.split('?')[0];
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

const upstreamAgent = new http.Agent({ keepAlive: true });
let emulateConditional = false;

function preconditionFailed(req, res) {
  req.resume();
  answerError(req, res, { status: 412, code: 'PreconditionFailed' });
}

// With --emulate-conditional-put: calls go() unless the request is a
// conditional write of an object that exists.
function checkCondition(target, req, res, go) {
  const conditional = (req.method === 'PUT' || req.method === 'POST') &&
    req.headers['if-none-match'] === '*' && !/[?&]partNumber=/.test(req.url);
  if (!emulateConditional || !conditional) return go();
  const head = http.request({
    host: target.host,
    port: target.port,
    method: 'HEAD',
    path: req.url.split('?')[0],
    agent: upstreamAgent,
  }, (hr) => {
    hr.resume();
    if (hr.statusCode === 200) preconditionFailed(req, res);
    else go();
  });
  head.on('error', () => go());
  head.end();
}

function forward(target, req, res, rule) {
  checkCondition(target, req, res, () => forwardNow(target, req, res, rule));
}

function forwardNow(target, req, res, rule) {
  const up = http.request({
    host: target.host,
    port: target.port,
    method: req.method,
    path: req.url,
    headers: req.headers,
    agent: upstreamAgent,
  }, (upRes) => {
    const chunks = [];
    upRes.on('data', (c) => chunks.push(c));
    upRes.on('end', () => {
      if (rule && rule.action === 'drop_response') {
        resetClient(req);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(upRes.statusCode, upRes.headers);
        res.end(Buffer.concat(chunks));
      };
      if (rule && rule.action === 'delay') setTimeout(send, rule.ms || 0);
      else send();
    });
  });
  up.on('error', (e) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`faultproxy: upstream error: ${e.message}\n`);
    }
  });
  req.pipe(up);
}

function startProxy(listen, target) {
  const server = http.createServer((req, res) => {
    stats.requests++;
    const rule = takeRule(req);
    if (rule && rule.action === 'status') return answerError(req, res, rule);
    if (rule && rule.action === 'reset') {
      req.resume();
      return resetClient(req);
    }
    forward(target, req, res, rule);
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
    count: spec.count === undefined ? 1 : Number(spec.count),
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
    if (req.url === '/stats/reset' && req.method === 'POST') {
      stats = { requests: 0, connections: 0, fired: 0 };
      return reply(res, 200, stats);
    }
    reply(res, 404, { error: 'unknown control request' });
  });
  server.listen(listen.port, listen.host);
  return server;
}

function main() {
  const args = parseArgs(process.argv);
  emulateConditional = args['emulate-conditional-put'] === '1';
  startProxy(hostPort(args.listen), hostPort(args.target));
  startControl(hostPort(args.control));
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
}

main();
