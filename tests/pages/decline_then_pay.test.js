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

  const keys = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && /\/checkout$/.test(r.url())) keys.push(r.headers()['idempotency-key']);
  });
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
  assert.equal(keys.length, 2);
  assert.notEqual(keys[0], keys[1], 'a new attempt after a decline gets a new key');
  assert.deepEqual(page.errors, []);
});

test('a checkout lost on the network is retried with the same Idempotency-Key', { timeout: 120000 }, async () => {
  const event = await h.createEvent('retrypay');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 1);
  await h.holdSeats(page);
  const keys = [];
  // The first checkout dies on the way (as on a flaky phone network); later ones go through.
  await page.route(/\/checkout$/, async (route) => {
    keys.push(route.request().headers()['idempotency-key']);
    if (keys.length === 1) await route.abort('connectionreset');
    else await route.continue();
  });
  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  assert.ok(keys.length >= 2, `the page retried (${keys.length} attempts)`);
  assert.ok(keys.every((k) => k && k === keys[0]), `one key for one click: ${keys}`);
  assert.deepEqual(page.errors, []);
});
