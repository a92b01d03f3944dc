// The dashboard's view of a sale over time and its timings: the chart since opening with five
// series, a legend and a table for screen readers, and the sold-out forecast in words; the event's name and
// timings edited before opening, checked before sending, and refused plainly once open.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

const KEY = process.env.FLOODGATE_ORGANIZER_KEY;

let browser;
let openapi;
before(async () => {
  browser = await h.launch();
  openapi = (await h.api('GET', '/api/openapi.json')).body;
});
after(async () => { await browser?.close(); });

const hasPath = (path) => Boolean(openapi?.paths?.[path]);

async function dashboard(event) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await h.openPage(browser, `/admin?event=${event}`, { context });
  await h.waitForView(page, 'key');
  await page.fill('#key', KEY);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');
  await page.waitForFunction(() => /\S/.test(document.getElementById('message-current').textContent), null, { timeout: 15000 });
  return page;
}

const textOf = (page, id, pattern, timeout = 15000) => page.waitForFunction(
  ([el, re]) => new RegExp(re).test(document.getElementById(el)?.textContent || ''), [id, pattern.source], { timeout },
);
const legend = (page) => page.$$eval('#chart-legend span', (spans) => spans.map((s) => s.textContent));

test('the chart since opening: five series with a legend and a table, and the forecast in words', { timeout: 120000 }, async () => {
  const event = await h.createEvent('timeline', { rows: 4, perRow: 10 });
  const page = await dashboard(event);
  assert.ok(hasPath('/api/admin/events/{event}/timeline'), 'the gateway documents its timeline');
  await h.holdByApi(event, [(await h.seatRows(event))[0][0].seat_id]);
  await h.joinByApi(event);
  const page2 = await dashboard(event);
  await page.close();
  await page2.waitForSelector('#timeline-table', { state: 'attached', timeout: 20000 });
  assert.deepEqual(await legend(page2), ['Joins', 'Offers', 'Claims', 'Holds', 'Sales']);
  assert.match(await page2.textContent('#chart-title'), /since opening/);
  const answer = await h.organizer('GET', `/api/admin/events/${event}/timeline`);
  const headers = await page2.$$eval('#timeline-table thead th', (ths) => ths.map((th) => th.textContent));
  assert.deepEqual(headers, ['Minute', 'Joins', 'Offers', 'Claims', 'Lapsed', 'Holds', 'Sales']);
  const rows = await page2.$$eval('#timeline-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].slice(1).map((c) => Number(c.textContent.replace(/\D/g, '')))));
  const sum = (i) => rows.reduce((a, r) => a + r[i], 0);
  const total = (name) => answer.minutes.slice(-10).reduce((a, m) => a + m[name], 0);
  assert.ok(sum(0) >= 2 && sum(0) <= total('joins'), `joins ${sum(0)} of ${total('joins')}`);
  assert.ok(sum(4) >= 1, 'the hold is counted');
  const forecast = await page2.textContent('#forecast');
  if (answer.forecast.sold_out_in_s !== null) assert.match(forecast, /At the current pace seats run out in/);
  else assert.match(forecast, /not known yet/);

  // Paused, the forecast says it cannot know (on its next reading, within 15 s).
  await page2.click('#pause');
  await textOf(page2, 'forecast', /unknown while paused/, 25000);
  assert.deepEqual(page2.errors, []);
});

test('the event\'s name and timings are changed before opening, and refused plainly once open', { timeout: 120000 }, async () => {
  const later = new Date(Date.now() + 3600 * 1000).toISOString();
  const event = await h.createEvent('timings', { opens_at: later });
  const page = await dashboard(event);
  await page.waitForFunction(() => document.getElementById('tm-name').value !== '', null, { timeout: 15000 });
  assert.equal(await page.inputValue('#tm-name'), 'Page test: timings');
  assert.equal(await page.isHidden('#timings-opened'), true);
  // Every field starts from the event as stored.
  const stored = await h.organizer('GET', `/api/admin/events/${event}`);
  for (const [id, field] of [['tm-hold-ttl', 'hold_ttl_s'], ['tm-max-hold', 'max_hold_s'], ['tm-max-seats', 'max_seats_per_hold'], ['tm-resolve', 'resolve_s'], ['tm-abandon', 'abandon_s']]) {
    assert.equal(await page.inputValue(`#${id}`), String(stored[field]), field);
  }

  // Checked before anything is sent.
  await page.fill('#tm-hold-ttl', '0');
  await page.click('#timings-form button[type="submit"]');
  assert.match(await page.textContent('#err-tm-hold-ttl'), /whole number of at least 1/);
  assert.equal(await page.getAttribute('#tm-hold-ttl', 'aria-invalid'), 'true');

  const opensAt = Date.now() + 2 * 3600 * 1000;
  const local = await page.evaluate((at) => {
    const d = new Date(at);
    const two = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }, opensAt);
  await page.fill('#tm-name', 'Second show');
  await page.fill('#tm-opens', local);
  await page.fill('#tm-hold-ttl', '240');
  await page.click('#timings-form button[type="submit"]');
  await textOf(page, 'timings-status', /Timings saved/);
  assert.equal(await page.textContent('#err-tm-hold-ttl'), '');
  assert.equal(await page.inputValue('#tm-hold-ttl'), '240');
  const summary = (await h.api('GET', `/api/events/${event}`)).body;
  assert.equal(summary.name, 'Second show');
  assert.ok(Math.abs(Date.parse(summary.opens_at) - opensAt) < 1500, summary.opens_at);
  assert.equal((await h.organizer('GET', `/api/admin/events/${event}`)).hold_ttl_s, 240);

  // A refusal the gateway gives is shown beside its field.
  await page.fill('#tm-max-hold', '1');
  await page.click('#timings-form button[type="submit"]');
  await page.waitForFunction(() => /\S/.test(document.getElementById('err-tm-max-hold').textContent), null, { timeout: 15000 });
  await page.fill('#tm-max-hold', '');

  // Once open: timings are refused and the card says so; the name still changes. The opening
  // is on a whole minute, which the time field shows without seconds: still not a change.
  const open = await h.createEvent('timings-open', { opens_at: new Date(Math.floor(Date.now() / 60000) * 60000 - 60000).toISOString() });
  const opened = await dashboard(open);
  await opened.waitForSelector('#timings-opened:not([hidden])', { timeout: 15000 });
  await opened.waitForFunction(() => document.getElementById('tm-hold-ttl').value !== '', null, { timeout: 15000 });
  const kept = await opened.inputValue('#tm-hold-ttl');
  await opened.fill('#tm-hold-ttl', String(Number(kept) + 60));
  await opened.click('#timings-form button[type="submit"]');
  await textOf(opened, 'timings-status', /has opened/);
  await opened.fill('#tm-hold-ttl', kept);
  await opened.fill('#tm-name', 'Renamed while open');
  await opened.click('#timings-form button[type="submit"]');
  await textOf(opened, 'timings-status', /Timings saved/);
  assert.equal((await h.api('GET', `/api/events/${open}`)).body.name, 'Renamed while open');
  assert.deepEqual(page.errors, []);
  assert.deepEqual(opened.errors, []);
});
