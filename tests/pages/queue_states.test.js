// Queue states said at once: before opening (countdown + fairness), sold out, paused, closed.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

test('before opening: a countdown, the fairness promise and a working fairness link', { timeout: 60000 }, async () => {
  const opens = new Date(Date.now() + 3600 * 1000).toISOString();
  const event = await h.createEvent('prequeue', { opens_at: opens });
  const page = await h.openPage(browser, `/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.waitForSelector('#landing-countdown:not([hidden])');
  // An hour away by the server's clock (the page reads it from the Date header, to the second).
  const left = (await page.textContent('#landing-countdown-value')).split(':').reduce((a, p) => a * 60 + Number(p), 0);
  assert.ok(left > 3500 && left <= 3602, `countdown shows ${left} s`);
  assert.match(await page.innerText('#landing-fairness'), /random order — arriving earlier gives no advantage/);

  await page.click('#join');
  await h.waitForView(page, 'prequeue');
  assert.match(await page.textContent('#prequeue-countdown'), /\d+:\d\d/);
  const href = await page.getAttribute('[data-panel="prequeue"] .fairness-link', 'href');
  assert.equal(href, `/api/events/${event}/fairness`);
  const fairness = await h.api('GET', href);
  assert.equal(fairness.status, 200);
  assert.ok(fairness.body.seed_commitment, 'the commitment is published before opening');
  assert.deepEqual(page.errors, []);
});

test('sold out is said at once', { timeout: 90000 }, async () => {
  const event = await h.createEvent('soldout', { rows: 1, perRow: 1 });
  const seats = await h.api('GET', `/api/events/${event}/seats`);
  await h.buyByApi(event, [seats.body.seats[0].seat_id]);

  const page = await h.openPage(browser, `/events/${event}`);
  // Either the event page already knows, or the join is refused with sold_out.
  await page.waitForFunction(() => ['landing', 'ended'].includes(document.getElementById('app').dataset.view));
  if ((await h.view(page)) === 'landing') await page.click('#join');
  await h.waitForView(page, 'ended', 10000);
  assert.equal(await page.textContent('#ended-title'), 'Sold out');
  assert.match(await page.textContent('#ended-body'), /reopens by itself/);
  assert.deepEqual(page.errors, []);
});

test('a waiting buyer is told at once when the sale is paused, then closed', { timeout: 90000 }, async () => {
  const event = await h.createEvent('pauseclose', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event); // takes the one offer the meter's burst allows
  await h.joinByApi(event);
  const page = await h.openPage(browser, `/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');

  await h.setAdmission(event, { paused: true });
  await page.waitForSelector('#paused-banner:not([hidden])', { timeout: 10000 });
  assert.match(await page.textContent('#paused-banner'), /keep your place/);
  assert.match(await page.textContent('#wait'), /not known yet/);

  await h.organizer('POST', `/api/admin/events/${event}/close`, {});
  await h.waitForView(page, 'ended', 15000);
  assert.equal(await page.textContent('#ended-title'), 'This sale is closed');
  assert.deepEqual(page.errors, []);
});

test('an unclaimed turn lapses, the page says why, and joining again works', { timeout: 90000 }, async () => {
  const event = await h.createEvent('lapse', { admission: { offer_s: 5 } });
  const page = await h.openPage(browser, `/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.click('#join');
  // The turn comes and, unclaimed, goes (on a slow machine the page may see only the lapse).
  await h.waitForView(page, 'lapsed', 45000);
  assert.match(await page.innerText('[data-panel="lapsed"]'), /wasn't claimed in time/);
  assert.equal(await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event), null, 'the spent token is forgotten');

  await page.click('#rejoin');
  await page.waitForFunction(() => ['waiting', 'offered'].includes(document.getElementById('app').dataset.view));
  assert.ok(await page.evaluate((ev) => localStorage.getItem(`floodgate:${ev}:queue`), event), 'a new place is kept');
  assert.deepEqual(page.errors, []);
});
