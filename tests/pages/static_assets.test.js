// The gateway serves the pages and their assets with usable content types, and the
// pages carry a human message for every error code of API.md.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

// The error codes of API.md's table, copied here on purpose: a code added there must be
// added here and given a message in static/messages.js.
const API_CODES = [
  'bad_request', 'too_many_seats', 'not_found', 'token_missing', 'token_invalid', 'token_expired',
  'wrong_event', 'not_admitted', 'unauthorized', 'rate_limited', 'overloaded', 'queue_paused',
  'queue_closed', 'sold_out', 'not_your_turn', 'offer_lapsed', 'seat_unavailable', 'hold_limit',
  'hold_expired', 'payment_in_progress', 'idempotency_conflict',
];

const ASSETS = {
  '/static/style.css': /^text\/css/,
  '/static/waiting-room.js': /^(text|application)\/javascript/,
  '/static/admin.js': /^(text|application)\/javascript/,
  '/static/messages.js': /^(text|application)\/javascript/,
};

test('pages and assets are served with their content types', { timeout: 30000 }, async () => {
  for (const page of ['/', '/events/demo', '/admin']) {
    const res = await fetch(h.BASE + page);
    assert.equal(res.status, 200, `GET ${page}`);
    assert.match(res.headers.get('content-type') || '', /^text\/html/, `GET ${page}`);
  }
  for (const [asset, type] of Object.entries(ASSETS)) {
    const res = await fetch(h.BASE + asset);
    assert.equal(res.status, 200, `GET ${asset}`);
    assert.match(res.headers.get('content-type') || '', type, `GET ${asset}`);
  }
});

test('every error code of API.md has its own human message', { timeout: 30000 }, async () => {
  const page = await h.openPage(browser, '/events/demo');
  const messages = await page.evaluate(async (codes) => {
    const m = await import('/static/messages.js');
    return codes.map((c) => [c, m.messageFor(c), m.ALL_CODES.includes(c)]);
  }, API_CODES);
  const generic = messages.find(([c]) => c === 'bad_request')[1];
  for (const [code, text, listed] of messages) {
    assert.ok(listed, `${code} has no entry in messages.js`);
    assert.ok(text && text.length > 20, `${code}: "${text}"`);
    if (code !== 'bad_request') assert.notEqual(text, generic, `${code} falls back to a generic message`);
  }
  assert.equal(new Set(messages.map(([, t]) => t)).size, API_CODES.length, 'each code reads differently');
});
