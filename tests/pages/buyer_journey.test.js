// (1) A buyer goes from the queue to a confirmed order, seeing the progress bar and the
// hold countdown change, and the receipt link works later in a fresh browser.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const num = (text) => (/next/i.test(text) ? 0 : Number(text.replace(/[^\d]/g, '')));
const secs = (text) => text.split(':').reduce((acc, part) => acc * 60 + Number(part), 0);

test('a buyer goes from the queue to a confirmed order', { timeout: 180000 }, async () => {
  // Forty buyers ahead, served one every four seconds: the page starts far back, and the line
  // moves slowly enough to be seen moving before the turn comes.
  const event = await h.createEvent('journey', { admission: { rate_per_min: 15 } });
  for (let i = 0; i < 4; i += 1) await Promise.all(Array.from({ length: 10 }, () => h.joinByApi(event)));

  const page = await h.openPage(browser, `/events/${event}`);
  await h.waitForView(page, 'landing');
  assert.match(await page.textContent('#landing-title'), /Page test: journey/);
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await page.waitForFunction(() => /\d/.test(document.getElementById('position').textContent));
  const ahead = num(await page.textContent('#position'));
  assert.ok(ahead >= 10, `expected people ahead, page says ${ahead}`);
  const progress0 = Number(await page.getAttribute('#progress', 'aria-valuenow'));
  assert.equal(await page.getAttribute('#announce', 'aria-live'), 'polite');

  // The bar must rise while this buyer still waits (not only jump to the offer) ...
  const rose = await page.waitForFunction((p0) => {
    const app = document.getElementById('app').dataset.view;
    const now = Number(document.getElementById('progress').getAttribute('aria-valuenow'));
    return app !== 'waiting' ? { app, now } : now > p0 && { app, now };
  }, progress0, { timeout: 30000 }).then((handle) => handle.jsonValue());
  assert.equal(rose.app, 'waiting', `the offer came before the progress bar moved (it stayed at ${progress0})`);
  assert.ok(rose.now > progress0 && rose.now < 100, `progress ${progress0} → ${rose.now}`);
  assert.ok(num(await page.textContent('#position')) < ahead, 'fewer people ahead once the bar moved');

  // ... and once the wait is known, it reads as a range of minutes that
  // holds the server's own estimate for this ticket.
  await page.waitForFunction(() => document.getElementById('app').dataset.view !== 'waiting'
    || /^\d+–\d+ min$/.test(document.getElementById('wait').textContent), null, { timeout: 30000 });
  assert.equal(await h.view(page), 'waiting', 'the offer came before a wait range was shown');
  const [lo, hi] = (await page.textContent('#wait')).match(/\d+/g).map(Number);
  assert.ok(lo < hi, `a range, low to high: ${lo}–${hi}`);
  const { token } = await page.evaluate((ev) => JSON.parse(localStorage.getItem(`floodgate:${ev}:queue`)), event);
  const st = await h.api('GET', `/api/events/${event}/queue/status`, { token });
  assert.equal(st.body.status, 'waiting');
  assert.equal(typeof st.body.estimated_wait_s, 'number', `wait known: ${JSON.stringify(st.body)}`);
  const minutes = st.body.estimated_wait_s / 60;
  assert.ok(minutes >= lo - 1 && minutes <= hi + 1, `the page says ${lo}–${hi} min, the server ${st.body.estimated_wait_s} s`);
  await h.screenshot(page, 'desktop-1-waiting');

  // Speed the queue up: the offer arrives.
  await h.setAdmission(event, { rate_per_min: 1200 });
  await h.waitForView(page, 'offered', 30000);
  assert.match(await page.textContent('[data-panel="offered"] h1'), /your turn/i);
  const offer1 = secs(await page.textContent('#offer-countdown'));
  await h.sleep(1500);
  const offer2 = secs(await page.textContent('#offer-countdown'));
  assert.ok(offer2 < offer1 && offer2 > 0, `offer countdown should run: ${offer1} → ${offer2}`);
  await h.screenshot(page, 'desktop-2-your-turn');

  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  await h.pickSeatsByKeyboard(page, 2);
  assert.equal((await h.selectedSeats(page)).length, 2);
  await h.screenshot(page, 'desktop-seat-map');
  const [holdReq] = await Promise.all([
    page.waitForRequest((r) => r.method() === 'POST' && /\/holds$/.test(r.url())),
    h.holdSeats(page),
  ]);
  assert.ok(holdReq.headers()['idempotency-key'], 'the hold carries an Idempotency-Key');
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), 2);
  const hold1 = secs(await page.textContent('#hold-countdown'));
  await h.sleep(2200);
  const hold2 = secs(await page.textContent('#hold-countdown'));
  assert.ok(hold1 > 0 && hold2 < hold1, `hold countdown should run: ${hold1} → ${hold2}`);
  // Opening the payment form extends the hold.
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && /\/extend$/.test(r.url()) && r.status() === 200),
    page.click('#to-payment'),
  ]);
  await page.waitForSelector('#payment-form:not([hidden])');
  assert.match(await page.innerText('#payment-form fieldset'), /simulator test cards/i);
  for (const card of ['pm_card_visa', 'pm_card_declined', 'pm_card_slow', 'pm_card_lost', 'pm_card_error', 'pm_card_authenticationRequired']) {
    assert.ok(await page.isVisible(`#cards input[value="${card}"]`), `${card} is offered`);
  }
  await h.screenshot(page, 'desktop-3-held');

  const [payReq] = await Promise.all([
    page.waitForRequest((r) => r.method() === 'POST' && /\/checkout$/.test(r.url())),
    h.pay(page, 'pm_card_visa'),
  ]);
  assert.ok(payReq.headers()['idempotency-key'], 'the checkout carries an Idempotency-Key');
  // The page names itself as the return page, for a card whose bank asks for 3-D Secure.
  assert.deepEqual(JSON.parse(payReq.postData()), { payment_method: 'pm_card_visa', return_url: `${h.BASE}/events/${event}` });
  await h.waitForView(page, 'confirmed', 60000);
  const orderId = (await page.textContent('#order-id')).trim();
  assert.ok(orderId.length > 0, 'order id shown');
  assert.equal(await page.$$eval('#order-seats li', (l) => l.length), 2);
  await h.screenshot(page, 'desktop-4-confirmed');

  // The receipt link works in a browser that has nothing stored.
  const href = await page.getAttribute('#receipt-link', 'href');
  assert.match(href, /receipt=/);
  const later = await h.openPage(browser, href);
  await h.waitForView(later, 'confirmed');
  assert.equal((await later.textContent('#order-id')).trim(), orderId);
  assert.deepEqual([...page.errors, ...later.errors], []);
});

test('reloading keeps the hold and its countdown, and then the confirmed order', { timeout: 120000 }, async () => {
  const event = await h.createEvent('reload');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 2);
  await h.holdSeats(page);
  const seats = await page.$$eval('#hold-seats li', (l) => l.length);
  const before = secs(await page.textContent('#hold-countdown'));

  await page.reload();
  await h.waitForView(page, 'hold');
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), seats);
  const after = secs(await page.textContent('#hold-countdown'));
  assert.ok(after > 0 && after <= before, `the countdown goes on from the server's figure: ${before} → ${after}`);

  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  const orderId = (await page.textContent('#order-id')).trim();
  await page.reload();
  await h.waitForView(page, 'landing');
  assert.ok(await page.isVisible('#landing-order-link'), 'the landing page links to the order');
  await page.click('#landing-order-link');
  await h.waitForView(page, 'confirmed');
  assert.equal((await page.textContent('#order-id')).trim(), orderId);
  assert.deepEqual(page.errors, []);
});
