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
