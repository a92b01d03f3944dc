// (5) Closing and reopening a waiting tab keeps the place; without WebSockets the page
// falls back to polling and still reaches its turn.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const num = (text) => (/next/i.test(text) ? 0 : Number(text.replace(/[^\d]/g, '')));
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

/**
 * How long the page waits after a snapshot read: the snapshot's `retry_after_s`, longer far
 * back, as the status endpoint would say for the same place (static/queue-snapshot.js).
 */
function snapshotRetry(snap, token) {
  const c = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  const floor = snap.retry_after_s;
  if (snap.state !== 'open' || c.pre) return floor;
  const position = snap.prequeue_left + c.seq - snap.fifo_served_through - 1;
  // Far back by place, but never past the spacing the whole crowd may read at.
  let byPlace = Math.min(2 + Math.floor(position / 100), snap.read_within_s);
  // The cap has free places for this whole crowd, so the rate alone decides the soonest wait.
  const cap = snap.cap;
  if (cap && cap.offer_rate_per_min > 0 && position + 1 <= cap.free) {
    const low = Math.floor((position + 1) / (cap.offer_rate_per_min / 60) / 1.2);
    byPlace = Math.min(byPlace, Math.max(Math.floor(low / 2), 1));
  }
  return Math.max(floor, byPlace);
}

/**
 * A browser context whose sockets never open: 'blocked', the constructor fails; 'refused', each
 * socket closes unopened, as behind a proxy that refuses the upgrade.
 */
async function contextWithoutSockets(how) {
  const context = await browser.newContext();
  await context.addInitScript((refused) => {
    window.WebSocket = class {
      constructor() {
        if (!refused) throw new Error('WebSockets are blocked here');
        setTimeout(() => this.onclose && this.onclose({ code: 1006 }), 20);
      }
      close() {}
    };
    window.WebSocket.OPEN = 1;
  }, how === 'refused');
  return context;
}

test('without WebSockets the page polls the snapshot (the status only at its turn) and still reaches it', { timeout: 90000 }, async () => {
  // 100+ ahead: by its place the page would read every 3 s, but a crowd this small may read
  // every 2 s (the snapshot's read_within_s).
  const event = await h.createEvent('polling', { admission: { rate_per_min: 1, max_active: 1000 } });
  for (let i = 0; i < 11; i += 1) await Promise.all(Array.from({ length: 10 }, () => h.joinByApi(event)));
  // A network that blocks WebSockets: the constructor fails.
  const context = await contextWithoutSockets('blocked');
  const page = await h.openPage(browser, `/events/${event}`, { context });
  // The join and every snapshot and status read: when it left and came back (the browser's own
  // timing), what it said and the wait it implies. A 304 reuses the snapshot read before it.
  // The join's answer already tells what a first read would, so the first read waits as asked.
  const polls = [];
  let lastSnapshot = null;
  page.on('response', async (res) => {
    const path = new URL(res.url()).pathname;
    const method = res.request().method();
    const kind = method === 'POST' && /\/queue$/.test(path) ? 'join'
      : method !== 'GET' ? null
      : /\/queue\/status$/.test(path) ? 'status' : /\/queue\/snapshot$/.test(path) ? 'snapshot' : null;
    if (!kind) return;
    const notModified = res.status() === 304;
    const body = notModified ? lastSnapshot : await res.json().catch(() => null);
    if (!body) return;
    if (kind === 'snapshot') lastSnapshot = body;
    // A 304 has no body to finish.
    if (!notModified) await res.finished().catch(() => null);
    const t = res.request().timing();
    const token = (await stored(page, event).catch(() => null))?.token;
    const retry = kind !== 'snapshot' ? body.retry_after_s : token ? snapshotRetry(body, token) : null;
    polls.push({ kind, start: t.startTime, end: t.startTime + t.responseEnd, retry, status: kind === 'snapshot' ? body.state : body.status });
  });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  const reads = (kind) => polls.filter((p) => p.kind === kind).length;
  for (let end = Date.now() + 20000; reads('snapshot') < 3 && Date.now() < end;) await h.sleep(200);
  assert.equal(reads('status'), 0, `far back, only the snapshot is read: ${JSON.stringify(polls)}`);
  await h.setAdmission(event, { rate_per_min: 6000 });
  await h.waitForView(page, 'offered', 60000);
  for (let end = Date.now() + 10000; polls.filter((p) => p.status === 'offered').length < 3 && Date.now() < end;) await h.sleep(200);
  assert.notEqual(await page.textContent('#connection'), 'Live');

  // Each read waits what the answer before it implied (the page adds ±10 % jitter; the rest is
  // timer and network slack). A read that needed the status follows its snapshot read at once.
  polls.sort((a, b) => a.start - b.start);
  const gaps = polls.slice(1).map((p, i) => ({ after: polls[i].status, kind: polls[i].kind, next: p.kind, retry: polls[i].retry, gap: p.start - polls[i].end }))
    .filter((g) => !(g.kind === 'snapshot' && g.next === 'status') && typeof g.retry === 'number');
  assert.ok(gaps.filter((g) => g.after === 'open').length >= 1 && gaps.filter((g) => g.after === 'offered').length >= 2, `reads while waiting and offered: ${JSON.stringify(gaps)}`);
  assert.equal(gaps[0].kind, 'join', `the first read follows the join's answer: ${JSON.stringify(gaps)}`);
  assert.ok(new Set(gaps.map((g) => g.retry)).size >= 2, `different intervals were asked for: ${JSON.stringify(gaps)}`);
  for (const g of gaps) {
    assert.ok(g.gap >= g.retry * 1000 * 0.85 - 150 && g.gap <= g.retry * 1000 * 1.15 + 400,
      `after a "${g.after}" ${g.kind} read implying ${g.retry} s the page waited ${Math.round(g.gap)} ms (all: ${JSON.stringify(gaps)})`);
  }

  await page.click('#claim');
  await h.waitForView(page, 'seats');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('a socket refused before it opens does not bring the join\'s first read forward', { timeout: 60000 }, async () => {
  const event = await h.createEvent('refused', { admission: { rate_per_min: 1, max_active: 1000 } });
  for (let i = 0; i < 11; i += 1) await Promise.all(Array.from({ length: 10 }, () => h.joinByApi(event)));
  // A proxy that refuses the upgrade: each socket closes without ever opening.
  const context = await contextWithoutSockets('refused');
  const page = await h.openPage(browser, `/events/${event}`, { context });
  let joined = null;
  const reads = [];
  page.on('response', async (res) => {
    const path = new URL(res.url()).pathname;
    if (res.request().method() === 'POST' && /\/queue$/.test(path)) {
      const at = Date.now();
      joined = { at, retry: (await res.json()).retry_after_s };
    } else if (/\/queue\/snapshot$/.test(path) && joined) reads.push(Date.now());
  });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  for (let end = Date.now() + 15000; reads.length < 1 && Date.now() < end;) await h.sleep(100);
  assert.ok(joined && joined.retry >= 2 && reads.length >= 1, `a read after the join: ${JSON.stringify({ joined, reads })}`);
  const gap = reads[0] - joined.at;
  assert.ok(gap >= joined.retry * 1000 * 0.85 - 150, `the join asked for ${joined.retry} s and the first read came after ${gap} ms`);
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

/**
 * A waiting tab whose queue socket is cut without a `reconnect` message: the first, live one
 * just after the gateway's first message, the next `cuts - 1` before the gateway says anything
 * (refused outright, or accepted and dropped). Later sockets go through. Math.random is pinned
 * to `draw`, so the jitter the page draws is known. Returns every socket attempt {url, at, cutAt}.
 */
async function cutRepeatedly(event, draw, cuts) {
  const context = await browser.newContext();
  await context.addInitScript((r) => { Math.random = () => r; }, draw);
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  const attempts = [];
  await page.routeWebSocket(/\/queue\/ws/, (ws) => {
    const attempt = { url: ws.url(), at: Date.now(), cutAt: null };
    attempts.push(attempt);
    const cut = () => {
      if (attempt.cutAt) return;
      attempt.cutAt = Date.now();
      ws.close({ code: 1011, reason: 'cut' });
    };
    if (attempts.length === 1) {
      const server = ws.connectToServer();
      server.onMessage((m) => {
        if (attempt.cutAt) return;
        ws.send(m);
        setTimeout(cut, 300);
      });
    } else if (attempts.length <= cuts) {
      // Alternately refused outright and accepted then dropped before a word.
      if (attempts.length % 2 === 0) cut();
      else setTimeout(cut, 150);
    } else {
      ws.connectToServer();
    }
  });
  await page.goto(`${h.BASE}/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await page.waitForFunction(() => /\d|next/.test(document.getElementById('position').textContent));
  return { context, page, attempts };
}

test('a socket cut without warning is retried with growing, jittered delays, keeping the place', { timeout: 90000 }, async () => {
  const event = await h.createEvent('backoff', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event);
  await h.joinByApi(event);
  const cuts = 3;
  // Two tabs whose random draws differ: the draw, not only the failure count, sets the delay.
  const tabs = await Promise.all([cutRepeatedly(event, 0.15, cuts), cutRepeatedly(event, 0.4, cuts)]);
  const delays = [];
  for (const { page, attempts } of tabs) {
    const before = await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event);
    const position = num(await page.textContent('#position'));
    for (let end = Date.now() + 30000; attempts.length <= cuts && Date.now() < end;) await h.sleep(100);
    await page.waitForFunction(() => document.getElementById('connection').dataset.mode === 'live', null, { timeout: 30000 });
    assert.ok(attempts.length > cuts, `the page came back after ${cuts} cuts (${attempts.length} sockets)`);
    const token = (a) => new URL(a.url).searchParams.get('token');
    assert.ok(attempts.every((a) => token(a) === token(attempts[0])), 'every socket carries the same token');
    assert.equal(await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event), before, 'the stored place is untouched');
    await page.waitForFunction(() => /\d|next/.test(document.getElementById('position').textContent));
    assert.equal(await h.view(page), 'waiting');
    assert.ok(num(await page.textContent('#position')) <= position, 'no place lost');
    delays.push(attempts.slice(1, cuts + 1).map((a, i) => a.at - attempts[i].cutAt));
  }
  for (const d of delays) {
    assert.ok(d.every((ms) => ms >= 400), `no immediate retry: ${d}`);
    // Each failure doubles the bound the delay is drawn under: with the draws pinned at 0.15
    // and 0.4, the third wait is 900 and 1,200 ms longer than the first. A busy machine adds
    // up to about 200 ms to each measure (the close reaching the page, its timer, the next
    // socket), enough to hide one step's 300 ms but not two steps' growth.
    assert.ok(d[d.length - 1] - d[0] >= 450, `the retries wait longer and longer: ${d}`);
  }
  const [a, b] = delays;
  a.forEach((ms, i) => assert.ok(Math.abs(ms - b[i]) >= 300, `after failure ${i + 1} the two tabs waited ${ms} and ${b[i]} ms: no jitter`));
  for (const { page, context } of tabs) {
    assert.deepEqual(page.errors, []);
    await context.close();
  }
});
