// (10) A card that asks for 3-D Secure: the page follows the provider's `next_action` to the
// bank's challenge page, the buyer completes it, comes back, and sees the confirmed order.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

test('a 3-D Secure card: the bank page, then back to the confirmed order', { timeout: 120000 }, async () => {
  const event = await h.createEvent('threeds');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 2);
  await h.holdSeats(page);
  const held = await page.$$eval('#hold-seats li', (l) => l.map((li) => li.textContent));

  const bodies = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && /\/checkout$/.test(r.url())) bodies.push(JSON.parse(r.postData() || '{}'));
  });
  await h.pay(page, 'pm_card_authenticationRequired');

  // The bank's page, reached by following the hold's next_action.
  await page.waitForURL(/\/_sim\/authenticate\/pi_/, { timeout: 60000 });
  await h.screenshot(page, 'three-d-secure-challenge');
  assert.match(await page.textContent('h1'), /authenticate your payment/i);
  // Its inline style is allowed by the gateway's Content-Security-Policy (by hash): styled.
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).maxWidth), '480px');
  await page.click('text=Complete authentication');

  // Back on the shop's own page, which polls until the order is confirmed.
  await h.waitForView(page, 'confirmed', 60000);
  assert.ok(page.url().startsWith(`${h.BASE}/events/${event}`), page.url());
  assert.ok(!/redirect_status/.test(page.url()), `the bank's query is cleaned from the address: ${page.url()}`);
  assert.ok((await page.textContent('#order-id')).trim().length > 0, 'order id shown');
  assert.equal(await page.$$eval('#order-seats li', (l) => l.length), held.length);
  assert.equal(bodies.length, 1);
  assert.equal(bodies[0].payment_method, 'pm_card_authenticationRequired');
  assert.ok(bodies[0].return_url.startsWith(`${h.BASE}/events/${event}`), `return_url ${bodies[0].return_url}`);
  await h.screenshot(page, 'three-d-secure-confirmed');
  assert.deepEqual(page.errors, []);
});

test('a failed 3-D Secure check: back on the shop, the seats still the buyer\'s', { timeout: 120000 }, async () => {
  const event = await h.createEvent('threedsfail');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 1);
  await h.holdSeats(page);
  const held = await page.$$eval('#hold-seats li', (l) => l.map((li) => li.textContent));
  await h.pay(page, 'pm_card_authenticationRequired');
  await page.waitForURL(/\/_sim\/authenticate\/pi_/, { timeout: 60000 });
  await page.click('text=Fail authentication');
  await page.waitForFunction(() => {
    const alert = document.getElementById('alert');
    return document.getElementById('app')?.dataset.view === 'hold' && !alert.hidden && /declined/i.test(alert.textContent);
  }, null, { timeout: 60000 });
  assert.match(await page.textContent('#alert'), /seats are still yours/i);
  // The page came back from the bank's site: the same seat, named by its id until the map loads.
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), held.length);
  assert.match(await page.textContent('#hold-seats'), /A-A-1|Seat 1/);
  assert.ok(await page.isVisible('#payment-form'), 'the payment form is open for another try');
  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  assert.deepEqual(page.errors, []);
});
