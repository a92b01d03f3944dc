// (5) Closing and reopening a waiting tab keeps the place; without WebSockets the page
// falls back to polling and still reaches its turn.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const stored = (page, event) => page.evaluate((ev) => JSON.parse(localStorage.getItem(`floodgate:${ev}:queue`)), event);

test('closing and reopening a waiting tab keeps the place', { timeout: 90000 }, async () => {
  const event = await h.createEvent('keepplace', { admission: { rate_per_min: 1 } });
  for (let i = 0; i < 3; i += 1) await h.joinByApi(event);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const first = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(first, 'landing');
  await first.click('#join');
  await h.waitForView(first, 'waiting');
  await first.waitForFunction(() => /\d/.test(document.getElementById('position').textContent));
  const before = await stored(first, event);
  const position = Number(await first.textContent('#position'));
  assert.ok(before?.token && before?.ticket_id, 'the queue token is kept in localStorage');
  await first.close();

  const again = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(again, 'waiting');
  await again.waitForFunction(() => /\d/.test(document.getElementById('position').textContent));
  assert.deepEqual(await stored(again, event), before, 'same token, same ticket');
  assert.ok(Number(await again.textContent('#position')) <= position, 'no place lost');
  // The server agrees: the stored token still names a waiting ticket.
  const st = await h.api('GET', `/api/events/${event}/queue/status`, { token: before.token });
  assert.equal(st.status, 200);
  assert.equal(st.body.status, 'waiting');
  assert.deepEqual(again.errors, []);
  await context.close();
});

test('without WebSockets the page polls and still reaches its turn', { timeout: 90000 }, async () => {
  const event = await h.createEvent('polling', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event);
  await h.joinByApi(event);
  const context = await browser.newContext();
  // A network that blocks WebSockets: the constructor fails.
  await context.addInitScript(() => {
    window.WebSocket = class {
      constructor() {
        throw new Error('WebSockets are blocked here');
      }
    };
    window.WebSocket.OPEN = 1;
  });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await h.setAdmission(event, { rate_per_min: 60 });
  await h.waitForView(page, 'offered', 60000);
  assert.notEqual(await page.textContent('#connection'), 'Live');
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('a dropped socket is reconnected with the same token and the place is kept', { timeout: 90000 }, async () => {
  const event = await h.createEvent('reconnect', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event);
  await h.joinByApi(event);
  const context = await browser.newContext();
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  // Stand between the page and the gateway's socket: the first connection is told to come
  // back later (as a gateway does before a graceful shutdown) and is then cut.
  const urls = [];
  await page.routeWebSocket(/\/queue\/ws/, (ws) => {
    urls.push(ws.url());
    ws.connectToServer();
    if (urls.length === 1) {
      setTimeout(() => {
        ws.send(JSON.stringify({ type: 'reconnect', after_ms: 300 }));
        ws.close({ code: 1001, reason: 'going away' });
      }, 1500);
    }
  });
  await page.goto(`${h.BASE}/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await page.waitForFunction(() => /\d|next/.test(document.getElementById('position').textContent));
  const before = await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event);

  await page.waitForFunction(() => document.getElementById('connection').textContent === 'Reconnecting…', null, { timeout: 10000 });
  await page.waitForFunction(() => document.getElementById('connection').textContent === 'Live', null, { timeout: 15000 });
  assert.ok(urls.length >= 2, 'the page opened a second socket');
  assert.equal(new URL(urls[1]).searchParams.get('token'), new URL(urls[0]).searchParams.get('token'), 'same token');
  assert.equal(await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event), before);
  assert.equal(await h.view(page), 'waiting');

  // And the queue still reaches this buyer through the new socket.
  await h.setAdmission(event, { rate_per_min: 60 });
  await h.waitForView(page, 'offered', 30000);
  assert.deepEqual(page.errors, []);
  await context.close();
});
