// (2) Two buyer pages race for one seat: exactly one holds it, the other is told plainly.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

test('two buyers race for one seat: one holds it, the other sees a clear message', { timeout: 120000 }, async () => {
  const event = await h.createEvent('race', { rows: 1, perRow: 4 });
  const [a, b] = await Promise.all([h.openPage(browser, `/events/${event}`), h.openPage(browser, `/events/${event}`)]);
  await Promise.all([h.joinAndClaim(a), h.joinAndClaim(b)]);
  // Both pick the same seat: the first of the first row.
  await h.pickSeatsByKeyboard(a, 1);
  await h.pickSeatsByKeyboard(b, 1);
  assert.deepEqual(await h.selectedSeats(a), await h.selectedSeats(b));

  await Promise.all([a.click('#hold'), b.click('#hold')]);
  const settled = (p) => p.waitForFunction(() => {
    const v = document.getElementById('app').dataset.view;
    const alert = document.getElementById('alert');
    return v === 'hold' || (!alert.hidden && /taken/i.test(alert.textContent));
  }, null, { timeout: 30000 });
  await Promise.all([settled(a), settled(b)]);

  const views = [await h.view(a), await h.view(b)];
  assert.equal(views.filter((v) => v === 'hold').length, 1, `exactly one page holds the seat: ${views}`);
  const loser = views[0] === 'hold' ? b : a;
  assert.equal(await h.view(loser), 'seats');
  assert.match(await loser.textContent('#alert'), /just taken by someone else/i);
  assert.deepEqual(await h.selectedSeats(loser), [], 'the lost seat is no longer selected');
  assert.equal(await loser.isDisabled('#hold'), true);
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('a seat taken by someone else turns grey on an open map and leaves the selection', { timeout: 120000 }, async () => {
  const event = await h.createEvent('refresh', { rows: 1, perRow: 4 });
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 1); // the first seat of the first row
  const first = (await h.seatRows(event))[0][0];
  const label = `Row ${first.row}, seat ${first.number}`;
  assert.ok((await page.textContent('.seat-focus')).startsWith(label));
  assert.match(await page.textContent('.seat-focus'), /selected$/);

  // Another buyer, over the API, holds that very seat.
  const joined = await h.joinByApi(event);
  const token = await h.admitByApi(event, joined.queue_token);
  const hold = await h.api('POST', `/api/events/${event}/holds`, { token, headers: { 'Idempotency-Key': `refresh-${event}` }, body: { seats: [first.seat_id] } });
  assert.equal(hold.status, 201);

  // The map refreshes by itself (ETag polling): the seat leaves the selection, with a word why.
  await page.waitForFunction(() => document.querySelectorAll('#selection-list li').length === 0, null, { timeout: 20000 });
  assert.match(await page.textContent('#alert'), /just taken by someone else/);
  await page.focus('#seat-map canvas');
  assert.ok((await page.textContent('.seat-focus')).startsWith(label));
  assert.match(await page.textContent('.seat-focus'), /taken$/);
  assert.deepEqual(page.errors, []);
});
