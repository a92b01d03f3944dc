// (4) The organizer dashboard: asks the key once, shows the queue, and its controls change
// what the gateway does (rate → offers in stats; pause; close).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const num = (t) => Number(String(t).replace(/[^\d]/g, ''));

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

  // Pause: joins are refused while paused; resume lets them in again.
  await page.click('#pause');
  await page.waitForFunction(() => document.getElementById('pause').textContent === 'Resume');
  const paused = await h.api('POST', `/api/events/${event}/queue`, { body: {} });
  assert.equal(paused.status, 409);
  assert.equal(paused.body.code, 'queue_paused');
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
