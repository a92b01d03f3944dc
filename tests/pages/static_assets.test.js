// The gateway serves the pages and their assets with usable content types, and the
// pages carry a human message for every error code of API.md.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

// The error codes of API.md's table, and those the gateway sends beyond it, copied here on
// purpose: a code added there must be added here and given a message in static/messages.js.
const API_CODES = [
  'bad_request', 'too_many_seats', 'not_found', 'token_missing', 'token_invalid', 'token_expired',
  'wrong_event', 'not_admitted', 'unauthorized', 'rate_limited', 'overloaded', 'queue_paused',
  'queue_closed', 'sold_out', 'not_your_turn', 'offer_lapsed', 'seat_unavailable', 'hold_limit',
  'hold_expired', 'payment_in_progress', 'idempotency_conflict',
  // Not in API.md's table but sent all the same: the organizer API's "that event id is taken".
  'event_exists',
];

// Every file of static/ is served at /static/NAME with a content type a browser accepts
// (module scripts are refused without a JavaScript type).
const STATIC_DIR = path.join(__dirname, '..', '..', 'static');
const TYPES = { '.js': /^(text|application)\/javascript/, '.css': /^text\/css/, '.html': /^text\/html/ };

test('pages and assets are served with their content types', { timeout: 30000 }, async () => {
  for (const page of ['/', '/events/demo', '/admin']) {
    const res = await fetch(h.BASE + page);
    assert.equal(res.status, 200, `GET ${page}`);
    assert.match(res.headers.get('content-type') || '', /^text\/html/, `GET ${page}`);
  }
  // The language dictionaries live in static/i18n/.
  const files = [...fs.readdirSync(STATIC_DIR), ...fs.readdirSync(path.join(STATIC_DIR, 'i18n')).map((f) => `i18n/${f}`)]
    .filter((f) => TYPES[path.extname(f)]);
  assert.ok(files.length >= 10, `static/ holds the pages' files (${files})`);
  for (const file of files) {
    const res = await fetch(`${h.BASE}/static/${file}`);
    assert.equal(res.status, 200, `GET /static/${file}`);
    assert.match(res.headers.get('content-type') || '', TYPES[path.extname(file)], `GET /static/${file}`);
    assert.equal(await res.text(), fs.readFileSync(path.join(STATIC_DIR, file), 'utf8'), `/static/${file} is the file itself`);
  }
});

test('every error code of API.md (and of the gateway) has its own human message', { timeout: 30000 }, async () => {
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

  // The one code beyond API.md: the gateway does send it, and the list above holds it.
  const event = await h.createEvent('twice', { rows: 0 });
  const again = await h.api('POST', '/api/admin/events', { token: process.env.FLOODGATE_ORGANIZER_KEY, body: { event, name: 'again' } });
  assert.equal(again.status, 409, JSON.stringify(again.body));
  assert.ok(API_CODES.includes(again.body.code), `the gateway's "${again.body.code}" has a message`);
});
