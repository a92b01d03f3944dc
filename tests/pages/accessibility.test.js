// Accessibility: axe-core finds no violation of impact serious or critical on any state of
// any page; the whole purchase works with the keyboard alone; a buyer who asked for reduced
// motion gets no animation or transition; announcements are polite and spaced out.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

/** Each state checked, with what axe found there (for the summary and the assertion). */
const results = [];
async function check(page, state) {
  const all = await h.axeViolations(page);
  const found = all.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const lesser = all.filter((v) => !found.includes(v)).map((v) => `${v.impact} ${v.id}`);
  results.push({ state, found, lesser });
}

async function newPage(urlPath, options) {
  const context = await h.axeContext(browser, options);
  const page = await h.openPage(browser, urlPath, { context });
  return { context, page };
}

/** Pre-queue: the event opens in an hour; the landing countdown, then joined early. */
async function prequeue() {
  const event = await h.createEvent('a11y-pre', { opens_at: new Date(Date.now() + 3600 * 1000).toISOString() });
  const { context, page } = await newPage(`/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.waitForSelector('#landing-countdown:not([hidden])');
  await check(page, 'landing before opening');
  await page.click('#join');
  await h.waitForView(page, 'prequeue');
  await check(page, 'pre-queue');
  await context.close();
}

/** Waiting → paused → offered → seat map → held → payment form → paying → confirmed. */
async function purchase() {
  const event = await h.createEvent('a11y-buy', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event);
  await h.joinByApi(event);
  const { context, page } = await newPage(`/events/${event}`);
  await h.waitForView(page, 'landing');
  await check(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await page.waitForFunction(() => document.getElementById('position').textContent !== '…');
  await check(page, 'waiting');
  await h.setAdmission(event, { paused: true });
  await page.waitForSelector('#paused-banner:not([hidden])', { timeout: 10000 });
  await check(page, 'paused');
  await h.setAdmission(event, { paused: false, rate_per_min: 1200 });
  await h.waitForView(page, 'offered');
  await check(page, 'offered');
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  await h.pickSeatsByKeyboard(page, 2);
  await check(page, 'seat map');
  await h.holdSeats(page);
  await check(page, 'held with countdown');
  await page.click('#to-payment');
  await page.waitForSelector('#payment-form:not([hidden])');
  await check(page, 'held, payment form');
  await h.pay(page, 'pm_card_slow');
  await h.waitForView(page, 'paying');
  await check(page, 'paying');
  await h.waitForView(page, 'confirmed', 60000);
  await check(page, 'confirmed');
  await context.close();
}

/** 3-D Secure: the bank's page, a failed check, back on the shop with the error. */
async function threeDSecure() {
  const event = await h.createEvent('a11y-3ds');
  const { context, page } = await newPage(`/events/${event}`);
  await h.joinAndClaim(page);
  await h.pickSeatsByKeyboard(page, 1);
  await h.holdSeats(page);
  await h.pay(page, 'pm_card_authenticationRequired');
  await page.waitForURL(/\/_sim\/authenticate\/pi_/, { timeout: 60000 });
  await check(page, "3-D Secure bank's page");
  await page.click('text=Fail authentication');
  await page.waitForFunction(() => document.getElementById('app')?.dataset.view === 'hold' && !document.getElementById('alert').hidden, null, { timeout: 60000 });
  await check(page, '3-D Secure return (declined, error shown)');
  await h.pay(page, 'pm_card_authenticationRequired');
  await page.waitForURL(/\/_sim\/authenticate\/pi_/, { timeout: 60000 });
  await page.click('text=Complete authentication');
  await h.waitForView(page, 'confirmed', 60000);
  await check(page, '3-D Secure return (confirmed)');
  await context.close();
}

/** Sold out; an unknown event (the error page); a turn left to lapse. */
async function endings() {
  const full = await h.createEvent('a11y-full', { rows: 1, perRow: 1 });
  const seats = await h.api('GET', `/api/events/${full}/seats`);
  await h.buyByApi(full, [seats.body.seats[0].seat_id]);
  const sold = await newPage(`/events/${full}`);
  await sold.page.waitForFunction(() => ['landing', 'ended'].includes(document.getElementById('app').dataset.view));
  if ((await h.view(sold.page)) === 'landing') await sold.page.click('#join');
  await h.waitForView(sold.page, 'ended', 10000);
  await check(sold.page, 'sold out');
  await sold.context.close();

  const shut = await h.createEvent('a11y-closed');
  await h.organizer('POST', `/api/admin/events/${shut}/close`, {});
  const closed = await newPage(`/events/${shut}`);
  await h.waitForView(closed.page, 'ended');
  await check(closed.page, 'sale closed');
  await closed.context.close();

  const missing = await newPage('/events/no-such-event-here');
  await h.waitForView(missing.page, 'fatal');
  await check(missing.page, 'error page (no such event)');
  await missing.context.close();

  const event = await h.createEvent('a11y-lapse', { admission: { offer_s: 3 } });
  const { context, page } = await newPage(`/events/${event}`);
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'lapsed', 45000);
  await check(page, 'turn lapsed');
  await context.close();
}

/** The organizer dashboard: the sign-in, then the dashboard with its figures. */
async function dashboard() {
  const event = await h.createEvent('a11y-admin');
  await h.checkoutByApi(event, [(await h.seatRows(event))[0][0].seat_id], 'pm_card_slow');
  const { context, page } = await newPage(`/admin?event=${event}`);
  await page.waitForSelector('#key-form');
  await check(page, 'dashboard sign-in');
  await page.fill('#key', process.env.FLOODGATE_ORGANIZER_KEY);
  await page.click('#key-form button[type="submit"]');
  await page.waitForSelector('[data-panel="dashboard"]:not([hidden])');
  await page.waitForFunction(() => /\d/.test(document.getElementById('q-admitted').textContent));
  await check(page, 'dashboard');
  await context.close();
}

test('axe-core: no serious or critical violation on any state of any page', { timeout: 180000 }, async (t) => {
  await Promise.all([prequeue(), purchase(), threeDSecure(), endings(), dashboard()]);
  for (const { state, found, lesser } of results) {
    const serious = found.length ? found.map((v) => `${v.impact} ${v.id}`).join(', ') : 'none serious or critical';
    t.diagnostic(`${state}: ${serious}${lesser.length ? ` (also ${lesser.join(', ')})` : ''}`);
  }
  assert.ok(results.length >= 20, `states checked: ${results.map((r) => r.state)}`);
  const failing = results.filter((r) => r.found.length).map(({ state, found }) => ({ state, found }));
  assert.deepEqual(failing, [], JSON.stringify(failing, null, 2));
});

test('the whole purchase with the keyboard alone: join, claim, pick a seat, hold, pay', { timeout: 120000 }, async () => {
  const event = await h.createEvent('keyboard-only');
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  await h.tabTo(page, '#join');
  await page.keyboard.press('Enter');
  await h.waitForView(page, 'offered');
  await h.tabTo(page, '#claim');
  await page.keyboard.press('Enter');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  await h.tabTo(page, '#seat-map canvas');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Space');
  assert.equal((await h.selectedSeats(page)).length, 1);
  await h.tabTo(page, '#hold');
  await page.keyboard.press('Enter');
  await h.waitForView(page, 'hold');
  await h.tabTo(page, '#to-payment');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#payment-form:not([hidden])');
  // The first card is chosen and focused; the arrow keys choose another, Tab reaches Pay.
  await page.waitForFunction(() => document.activeElement?.matches('#cards input[value="pm_card_visa"]'));
  await h.tabTo(page, '#pay');
  await page.keyboard.press('Enter');
  await h.waitForView(page, 'confirmed', 60000);
  assert.equal(await page.$$eval('#order-seats li', (l) => l.length), 1);
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('reduced motion: no animation and no transition anywhere', { timeout: 30000 }, async () => {
  const styles = async (reducedMotion) => {
    const context = await browser.newContext({ reducedMotion });
    const page = await h.openPage(browser, '/events/demo', { context });
    await page.waitForFunction(() => document.getElementById('app').dataset.view !== 'loading');
    const found = await page.evaluate(() => [...document.querySelectorAll('*')]
      .map((el) => ({ el: el.id || el.className || el.tagName, s: getComputedStyle(el) }))
      .filter(({ s }) => s.animationName !== 'none' || s.transitionDuration.split(',').some((d) => parseFloat(d) > 0))
      .map(({ el, s }) => `${el}: animation ${s.animationName}, transition ${s.transitionDuration}`));
    await context.close();
    return found;
  };
  // Without the preference the spinner turns and the progress bar slides (so the check can fail) …
  const moving = await styles('no-preference');
  assert.ok(moving.some((m) => m.startsWith('spinner')), moving.join('; '));
  assert.ok(moving.some((m) => m.startsWith('progress-fill')), moving.join('; '));
  // … and with it nothing moves.
  assert.deepEqual(await styles('reduce'), []);
});

test('announcements are polite and spaced out; the turn is said at once', { timeout: 30000 }, async () => {
  const page = await h.openPage(browser, '/events/demo');
  for (const id of ['announce', 'offer-announce', 'hold-announce', 'seat-announce']) {
    assert.equal(await page.getAttribute(`#${id}`, 'aria-live'), 'polite', id);
  }
  const said = await page.evaluate(async () => {
    const { Announcer, ANNOUNCE_GAP_MS } = await import('/static/announce.js');
    let now = 0;
    const region = document.createElement('p');
    const a = new Announcer(region, { now: () => now });
    const log = [];
    // A position changing every second for half a minute, then the turn.
    for (let s = 0; s <= 30; s += 1) {
      now = s * 1000;
      if (a.say(`${40 - s} people ahead`)) log.push([now, region.textContent]);
    }
    now = 30500;
    if (a.say('Your turn', { urgent: true })) log.push([now, region.textContent]);
    return { log, gap: ANNOUNCE_GAP_MS };
  });
  assert.ok(said.gap >= 3000, `at most one announcement every ${said.gap} ms`);
  const times = said.log.map(([at]) => at);
  assert.deepEqual(times.slice(0, -1), [0, 10000, 20000, 30000]);
  assert.equal(said.log.at(-1)[1], 'Your turn', 'the turn is announced at once');
});
