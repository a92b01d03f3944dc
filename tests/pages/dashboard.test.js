// (4) The organizer dashboard: asks the key once, shows the queue, and its controls change
// what the gateway does (rate → offers in stats; pause; close).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { isDeepStrictEqual } = require('node:util');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const num = (t) => Number(String(t).replace(/[^\d]/g, ''));

/** The seats, holds and payments figures as the dashboard shows them, by state. */
const shownCounts = (page) => page.evaluate(() => {
  const read = (id) => Object.fromEntries([...document.querySelectorAll(`#${id} dd`)]
    .map((dd) => [dd.id.slice(id.length + 1), Number(dd.textContent.replace(/[^\d]/g, ''))]));
  return { seats: read('seats-kv'), holds: read('holds-kv'), payments: read('payments-kv') };
});

/**
 * Where the chart's offers and claims are drawn, found by their legend colours in the canvas
 * pixels: for each, the number of pixels and the highest and lowest rows (CSS px, 0 at the top).
 */
const chartLines = (page) => page.evaluate(() => {
  const canvas = document.getElementById('chart');
  const { width, height } = canvas;
  const dpr = window.devicePixelRatio || 1;
  const pixels = canvas.getContext('2d').getImageData(0, 0, width, height).data;
  const rgb = (sel) => getComputedStyle(document.querySelector(sel)).color.match(/\d+/g).slice(0, 3).map(Number);
  const line = (color) => {
    let count = 0;
    let top = Infinity;
    let bottom = -Infinity;
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        const i = (y * width + x) * 4;
        const near = Math.abs(pixels[i] - color[0]) + Math.abs(pixels[i + 1] - color[1]) + Math.abs(pixels[i + 2] - color[2]) < 40;
        if (near && pixels[i + 3] > 200) {
          count += 1;
          top = Math.min(top, y / dpr);
          bottom = Math.max(bottom, y / dpr);
        }
      }
    }
    return { count, top, bottom };
  };
  return { offers: line(rgb('#chart-legend [data-series="offers"]')), claims: line(rgb('#chart-legend [data-series="claims"]')) };
});

test('the dashboard shows the queue and its controls act on the gateway', { timeout: 120000 }, async () => {
  const event = await h.createEvent('dashboard', { admission: { rate_per_min: 1 } });
  for (let i = 0; i < 4; i += 1) await h.joinByApi(event);

  const page = await h.openPage(browser, `/admin?event=${event}`);
  await h.waitForView(page, 'key');
  // A wrong key is refused plainly and the form stays.
  await page.fill('#key', 'not-the-key');
  await page.click('#key-form button[type="submit"]');
  await page.waitForFunction(() => !document.getElementById('alert').hidden, null, { timeout: 10000 });
  await h.waitForView(page, 'key');
  assert.match(await page.textContent('#alert'), /organizer key was not accepted/);

  await page.fill('#key', process.env.FLOODGATE_ORGANIZER_KEY);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');
  assert.equal(await page.textContent('#event-title'), event);
  // The key is kept for the tab: a reload does not ask again.
  await page.reload();
  await h.waitForView(page, 'dashboard');
  await page.waitForFunction(() => /\d/.test(document.getElementById('q-waiting').textContent));
  const waitingBefore = num(await page.textContent('#q-waiting'));
  assert.ok(waitingBefore >= 2, `most of the 4 buyers wait at 1 offer/min (dashboard says ${waitingBefore})`);
  assert.ok(await page.isVisible('#chart'));
  // A healthy core: admission runs at the full configured rate (backpressure says so).
  assert.match(await page.textContent('#q-pressure'), /^100% of the configured rate/);

  // Raise the rate from the dashboard: the gateway's stats show everyone offered.
  await page.fill('#rate', '600');
  await page.click('#admission-form button[type="submit"]');
  await page.waitForFunction(() => /within a second/.test(document.getElementById('control-status').textContent));
  const end = Date.now() + 15000;
  let s;
  do {
    await h.sleep(500);
    s = await h.stats(event);
  } while (s.queue.waiting > 0 && Date.now() < end);
  assert.equal(s.queue.waiting, 0, `after rate 600/min nobody waits: ${JSON.stringify(s.queue)}`);
  await page.waitForFunction(() => document.getElementById('q-waiting').textContent.trim() === '0', null, { timeout: 10000 });
  assert.ok(num(await page.textContent('#q-offered')) + num(await page.textContent('#q-active')) >= 4);
  await h.screenshot(page, 'dashboard');

  // Give the event seats, holds and payments in several states: a confirmed order, a declined
  // card (the hold is held again), a released hold.
  const rows = await h.seatRows(event);
  const [, declined, released] = await Promise.all([
    h.buyByApi(event, [rows[0][0].seat_id]),
    h.checkoutByApi(event, [rows[0][1].seat_id], 'pm_card_declined'),
    h.holdByApi(event, [rows[0][2].seat_id, rows[0][3].seat_id]),
  ]);
  await h.holdUntil(declined, (x) => x.state === 'held' && x.last_payment_error, 'held again after the decline');
  assert.equal((await h.api('DELETE', `/api/holds/${released.holdId}`, { token: released.token })).status, 204);

  // The figures on the dashboard are the gateway's (the page refreshes every 2 s).
  let want;
  let seen;
  for (const end = Date.now() + 15000; ;) {
    const st = await h.stats(event);
    want = { seats: st.seats, holds: st.holds, payments: st.payments };
    seen = await shownCounts(page);
    if (isDeepStrictEqual(seen, want) || Date.now() > end) break;
    await h.sleep(500);
  }
  assert.ok(want.seats.sold >= 1 && want.seats.held >= 1 && want.seats.available >= 1, `seats in several states: ${JSON.stringify(want.seats)}`);
  assert.ok(Object.keys(want.holds).length >= 3 && Object.keys(want.payments).length >= 2, `holds and payments in several states: ${JSON.stringify(want)}`);
  assert.deepEqual(seen, want, 'the dashboard shows what GET …/stats reports');

  // The chart since opening draws the offers the gateway counted this minute, and
  // its table for screen readers gives the same figures as GET …/timeline.
  await page.waitForSelector('#timeline-table', { state: 'attached', timeout: 20000 });
  let lines;
  for (const end = Date.now() + 20000; ;) {
    lines = await chartLines(page);
    if (lines.offers.count > 0 || Date.now() > end) break;
    await h.sleep(500);
  }
  // Later series may cover the claims where they are equal; the offers are drawn beneath them.
  assert.ok(lines.offers.count > 0, `the offers are drawn: ${JSON.stringify(lines)}`);
  const sum = (rows, at) => rows.reduce((a, r) => a + at(r), 0);
  let shown;
  for (const end = Date.now() + 25000; ;) {
    // The table follows the timeline's next reading (every 15 s).
    shown = await page.$$eval('#timeline-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].slice(1).map((c) => Number(c.textContent.replace(/\D/g, '')))));
    if ((sum(shown, (r) => r[1]) >= 1 && sum(shown, (r) => r[2]) >= 1) || Date.now() > end) break;
    await h.sleep(500);
  }
  const counted = (await h.organizer('GET', `/api/admin/events/${event}/timeline`)).minutes.slice(-10);
  assert.ok(sum(shown, (r) => r[1]) >= 1 && sum(shown, (r) => r[1]) <= sum(counted, (m) => m.offers), 'offers shown as counted');
  assert.ok(sum(shown, (r) => r[2]) >= 1 && sum(shown, (r) => r[2]) <= sum(counted, (m) => m.claims), 'claims shown as counted');

  // Max active, set on the dashboard, is what the gateway then reports.
  const before = (await h.stats(event)).admission;
  const maxActive = before.max_active + 7;
  await page.fill('#max-active', String(maxActive));
  await page.click('#admission-form button[type="submit"]');
  await page.waitForFunction(() => /max active/.test(document.getElementById('control-status').textContent), null, { timeout: 10000 });
  let admission;
  for (const end = Date.now() + 5000; ;) {
    admission = (await h.stats(event)).admission;
    if (admission.max_active === maxActive || Date.now() > end) break;
    await h.sleep(300);
  }
  assert.equal(admission.max_active, maxActive, `max_active in stats: ${JSON.stringify(admission)}`);
  assert.equal(admission.rate_per_min, before.rate_per_min, 'the rate is left as it was');

  // Stuck payments: the page asks for those paying over 60 s, longer than a test can wait (and
  // a card failing that long would slow admission on the whole shared gateway). Its next
  // request goes on with 0 s instead, while a card waits for its buyer at the bank (open until
  // the buyer comes back, however slow the machine), and the table must list what the gateway
  // answered.
  const waiting = await h.holdByApi(event, [rows[1][0].seat_id]);
  await h.payByApi(waiting, 'pm_card_authenticationRequired');
  const answers = [];
  const stuckUrl = (url) => url.pathname.endsWith('/stuck');
  await page.route(stuckUrl, async (route) => {
    const url = new URL(route.request().url());
    const asked = url.searchParams.get('older_than_s');
    url.searchParams.set('older_than_s', '0');
    const res = await route.fetch({ url: url.toString() });
    answers.push({ asked, ids: (await res.json()).payments.map((p) => p.payment_id).sort() });
    await route.fulfill({ response: res });
  });
  for (const end = Date.now() + 10000; !answers.length && Date.now() < end;) await h.sleep(100);
  const [answer] = answers;
  assert.ok(answer?.ids.length, `the payment waiting at the bank is open in GET …/stuck: ${JSON.stringify(answers)}`);
  assert.equal(answer.asked, '60', 'the page asks for payments stuck over 60 s');
  await page.waitForSelector('#stuck table', { timeout: 5000 });
  const shownRows = await page.$$eval('#stuck table tbody tr', (trs) => trs.map((tr) => tr.textContent));
  assert.equal(shownRows.length, answer.ids.length, `one row per open payment: ${JSON.stringify(shownRows)}`);
  for (const id of answer.ids) assert.ok(shownRows.some((row) => row.includes(id)), `payment ${id} is named in the stuck table: ${JSON.stringify(shownRows)}`);
  await page.unroute(stuckUrl);

  // Pause stops offers, not the line: a join while paused gets a place, status `paused`.
  await page.click('#pause');
  await page.waitForFunction(() => document.getElementById('pause').textContent === 'Resume');
  let paused;
  for (let end = Date.now() + 5000; Date.now() < end; await h.sleep(100)) {
    paused = await h.api('POST', `/api/events/${event}/queue`, { body: {} });
    if (paused.body?.status === 'paused') break;
  }
  assert.equal(paused.status, 201);
  assert.equal(paused.body.status, 'paused', JSON.stringify(paused.body));
  assert.equal(typeof paused.body.position, 'number');
  await page.click('#pause');
  await page.waitForFunction(() => document.getElementById('pause').textContent === 'Pause');
  assert.equal((await h.api('POST', `/api/events/${event}/queue`, { body: {} })).status, 201);

  // Close, after the confirmation dialog: joins are refused for good.
  page.once('dialog', (d) => d.accept());
  await page.click('#close');
  await page.waitForFunction(() => document.getElementById('state-pill').textContent === 'closed');
  const closed = await h.api('POST', `/api/events/${event}/queue`, { body: {} });
  assert.equal(closed.status, 409);
  assert.equal(closed.body.code, 'queue_closed');
  assert.deepEqual(page.errors, []);
});

/** A receiver of the organizer's own, on loopback: records each delivery and answers 204. */
function receiver() {
  const http = require('node:http');
  const got = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      got.push({ signature: req.headers['floodgate-signature'], raw: body, body: JSON.parse(body || 'null') });
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, got, url: `http://127.0.0.1:${server.address().port}/hooks` })));
}

test('the key form is offered only once the page can take it: a page whose script did not arrive cannot lose the sign-in', { timeout: 60000 }, async () => {
  const event = await h.createEvent('noscript');
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // A dropped connection or a loaded machine: the dashboard's script does not arrive. A form
  // on show would be sent by the browser itself, reloading the page without the key.
  await context.route('**/static/admin.js', (route) => route.abort());
  const page = await h.openPage(browser, `/admin?event=${event}`, { context });
  assert.equal(await h.view(page), 'loading');
  assert.equal(await page.isVisible('#key-form'), false, 'no key form before the page can take it');
  assert.match(await page.textContent('[data-panel="loading"]'), /Loading/);
  assert.equal(await page.getAttribute('#app', 'aria-busy'), 'true', 'told busy to assistive technology');

  await context.unroute('**/static/admin.js');
  await page.reload();
  await h.waitForView(page, 'key');
  assert.equal(await page.getAttribute('#app', 'aria-busy'), null, 'no longer busy once the form shows');
  await page.fill('#key', process.env.FLOODGATE_ORGANIZER_KEY);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');
  assert.equal(await page.textContent('#event-title'), event);
  assert.equal(new URL(page.url()).search, `?event=${event}`, 'the form was never sent as a page load');
  await context.close();
});

test('an organizer creates an event with seats from the form, opens it, and tests a webhook', { timeout: 120000 }, async () => {
  const hooks = await receiver();
  try {
    const page = await h.openPage(browser, '/admin');
    await h.waitForView(page, 'key');
    await page.fill('#key', process.env.FLOODGATE_ORGANIZER_KEY);
    await page.click('#key-form button[type="submit"]');
    await h.waitForView(page, 'dashboard');

    // The form judges its fields before anything is sent: errors next to the fields.
    await page.fill('#new-event', 'not an id!');
    await page.fill('#new-name', '');
    await page.fill('#new-rows', '0');
    let posted = 0;
    page.on('request', (r) => { if (r.method() === 'POST' && r.url().endsWith('/api/admin/events')) posted += 1; });
    await page.click('#create-form button[type="submit"]');
    await page.waitForFunction(() => document.getElementById('err-new-event').textContent !== '');
    assert.notEqual(await page.textContent('#err-new-name'), '');
    assert.notEqual(await page.textContent('#err-new-rows'), '');
    assert.equal(await page.getAttribute('#new-event', 'aria-invalid'), 'true');
    assert.equal(posted, 0, 'nothing is sent while the form is wrong');

    // The API's own refusal shows next to its field: an id that is taken.
    const taken = await h.createEvent('taken', { rows: 0 });
    await page.fill('#new-event', taken);
    await page.fill('#new-name', 'Taken');
    await page.fill('#new-rows', '2');
    await page.click('#create-form button[type="submit"]');
    await page.waitForFunction(() => /already exists/.test(document.getElementById('err-new-event').textContent));
    assert.equal(posted, 1);

    // A new event with 2 × 6 seats, made from the form and opened.
    const event = `pages-form-${Date.now().toString(36)}`;
    await page.fill('#new-event', event);
    await page.fill('#new-name', 'Made on the dashboard');
    await page.fill('#new-rows', '2');
    await page.fill('#new-per-row', '6');
    await page.fill('#new-price', '3900');
    await page.click('#create-form button[type="submit"]');
    await page.waitForFunction((id) => document.getElementById('event-title').textContent === id, event);
    assert.equal(await page.textContent('#err-new-event'), '');
    const seats = (await h.api('GET', `/api/events/${event}/seats`)).body.seats;
    assert.equal(seats.length, 12);
    assert.ok(seats.every((s) => s.price_cents === 3900));
    // It is in the list, named and with its state.
    await page.waitForSelector(`#events tr[data-event="${event}"]`);
    assert.match(await page.textContent(`#events tr[data-event="${event}"]`), /Made on the dashboard/);
    await page.waitForFunction(() => /\d/.test(document.getElementById('seats-kv').textContent));

    // Two organizers at once: a change carries the version the page read, and a change
    // someone else made first is said plainly, with a way to reload.
    const version = (await h.stats(event)).admission.version;
    const sent = [];
    const admissionUrl = (url) => url.pathname.endsWith('/admission');
    await page.route(admissionUrl, async (route) => {
      sent.push(JSON.parse(route.request().postData()));
      await route.fulfill({
        status: 409,
        contentType: 'application/problem+json',
        body: JSON.stringify({ type: 'about:blank', title: 'Conflict', status: 409, code: 'stale_version', detail: 'changed meanwhile' }),
      });
    });
    await page.fill('#rate', '77');
    await page.click('#admission-form button[type="submit"]');
    await page.waitForSelector('#stale:not([hidden])');
    assert.match(await page.textContent('#stale'), /Changed by someone else/);
    assert.equal(sent[0].version, version, `the change names the version read: ${JSON.stringify(sent)}`);
    await page.unroute(admissionUrl);
    await page.click('#reload-controls');
    await page.waitForSelector('#stale', { state: 'hidden' });

    // A webhook to the receiver; its secret shown once; the test button; the delivery listed.
    await page.fill('#hook-url', 'ftp://nowhere');
    await page.click('#hook-form button[type="submit"]');
    await page.waitForFunction(() => document.getElementById('err-hook-url').textContent !== '');
    await page.fill('#hook-url', hooks.url);
    await page.click('#hook-form button[type="submit"]');
    await page.waitForSelector('#hook-secret:not([hidden]) code');
    const secret = await page.textContent('#hook-secret code');
    assert.match(secret, /^whsec_/);
    await page.waitForSelector('#hooks li');
    await page.click('#hooks li button:has-text("Send a test event")');
    await page.waitForSelector('#delivery-table tbody tr[data-state="delivered"]', { timeout: 20000 });
    assert.match(await page.textContent('#delivery-table tbody tr[data-state="delivered"]'), /test event.*204/);
    assert.equal(hooks.got.length, 1);
    const [ping] = hooks.got;
    assert.equal(ping.body.type, 'ping');
    assert.equal(ping.body.event, event);
    const [, t, v1] = ping.signature.match(/^t=(\d+),v1=([0-9a-f]{64})$/);
    const expected = require('node:crypto').createHmac('sha256', secret).update(`${t}.${ping.raw}`).digest('hex');
    assert.equal(v1, expected, 'signed with the secret the dashboard showed');
    await h.screenshot(page, 'dashboard-webhooks');
    assert.deepEqual(page.errors, []);
  } finally {
    hooks.server.close();
  }
});

test('an organizer uploads the venue\'s own seat list: a bad line is named and nothing is made, then the file creates every seat', { timeout: 120000 }, async () => {
  const page = await h.openPage(browser, '/admin');
  await h.waitForView(page, 'key');
  await page.fill('#key', process.env.FLOODGATE_ORGANIZER_KEY);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');

  const event = `pages-list-${Date.now().toString(36)}`;
  let posted = 0;
  page.on('request', (r) => { if (r.method() === 'POST' && r.url().endsWith('/api/admin/events')) posted += 1; });
  await page.fill('#new-event', event);
  await page.fill('#new-name', 'Own seat list');
  await page.fill('#new-seat-list', 'seat_id,section,row,number,price_cents\nS1-A-1,Stalls,A,1,4500\nS1-A-2,Stalls,A,two,4500');
  await page.click('#create-form button[type="submit"]');
  await page.waitForFunction(() => /Line 3/.test(document.getElementById('err-new-seat-list').textContent));
  assert.equal(posted, 0, 'nothing is sent while a line is wrong');
  assert.equal((await h.api('GET', `/api/events/${event}`)).status, 404);

  // The venue's file: three seats in two rows, read into the list and sent.
  await page.setInputFiles('#new-seat-file', {
    name: 'venue.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('seat_id,section,row,number,price_cents\r\nS1-A-1,Stalls,A,1,4500\r\nS1-A-2,Stalls,A,2,4500\r\nS1-B-1,Stalls,B,1,3900\r\n'),
  });
  await page.waitForFunction(() => /S1-B-1/.test(document.getElementById('new-seat-list').value));
  await page.click('#create-form button[type="submit"]');
  await page.waitForFunction((id) => document.getElementById('event-title').textContent === id, event);
  assert.equal(await page.textContent('#err-new-seat-list'), '');
  const seats = (await h.api('GET', `/api/events/${event}/seats`)).body;
  const list = (seats.seats || seats).map((s) => [s.seat_id, s.row, s.price_cents]).sort();
  assert.deepEqual(list, [['S1-A-1', 'A', 4500], ['S1-A-2', 'A', 4500], ['S1-B-1', 'B', 3900]]);
  assert.deepEqual(page.errors, []);
});
