// (3) A declined card, then a good one: the seats stay the buyer's in between.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

test('a declined card keeps the seats; another card confirms the order', { timeout: 120000 }, async () => {
  const event = await h.createEvent('decline');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 1);
  await h.holdSeats(page);
  const held = await page.$$eval('#hold-seats li', (l) => l.map((li) => li.textContent));

  await h.pay(page, 'pm_card_declined');
  await page.waitForFunction(() => {
    const alert = document.getElementById('alert');
    return document.getElementById('app').dataset.view === 'hold' && !alert.hidden && /declined/i.test(alert.textContent);
  }, null, { timeout: 60000 });
  const message = await page.textContent('#alert');
  assert.match(message, /seats are still yours/i);
  assert.match(message, /no money was taken/i);
  assert.ok(await page.isVisible('#payment-form'), 'the payment form stays open for another card');
  assert.deepEqual(await page.$$eval('#hold-seats li', (l) => l.map((li) => li.textContent)), held);
  assert.notEqual((await page.textContent('#hold-countdown')).trim(), '0:00');

  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  assert.ok((await page.textContent('#order-id')).trim().length > 0);
  assert.deepEqual(page.errors, []);
});
