// Shared helpers for the browser tests: the gateway under test, headless Chromium, and
// buyer verbs (join, claim, pick seats, hold, pay) acted out through the page or the API.
//
// The gateway is NOT started here: FLOODGATE_URL names a running one (with its organizer
// key in FLOODGATE_ORGANIZER_KEY). Each test creates its own event, so tests can share it.

'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { chromium } = require('playwright-core');

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: the page tests need a running gateway (FLOODGATE_URL, e.g. http://127.0.0.1:8080) and its organizer key (FLOODGATE_ORGANIZER_KEY)`);
  }
  return value;
}

const BASE = required('FLOODGATE_URL').replace(/\/$/, '');
const ORGANIZER_KEY = required('FLOODGATE_ORGANIZER_KEY');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const SHOTS = process.env.FLOODGATE_SCREENSHOTS || '';

/** Raw JSON call to the gateway: {status, body, headers}. */
async function api(method, urlPath, { token, body, headers = {} } = {}) {
  const h = { Accept: 'application/json', ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(BASE + urlPath, {
      method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(20000),
    });
  } catch (err) {
    throw new Error(`gateway at FLOODGATE_URL=${BASE} does not answer ${method} ${urlPath}: ${err.message}`);
  }
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** An organizer call that must succeed. */
async function organizer(method, urlPath, body) {
  const res = await api(method, urlPath, { token: ORGANIZER_KEY, body });
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${urlPath} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/**
 * A fresh event owned by the calling test. Defaults: open now, one section "A" of
 * rows × perRow seats, a brisk queue. `admission` and other fields override.
 */
async function createEvent(label, { rows = 3, perRow = 8, priceCents = 4500, admission = {}, ...fields } = {}) {
  const event = `pages-${label}-${crypto.randomBytes(4).toString('hex')}`;
  await organizer('POST', '/api/admin/events', {
    event,
    name: `Page test: ${label}`,
    opens_at: new Date(Date.now() - 2000).toISOString(),
    max_seats_per_hold: 4,
    ...fields,
    admission: { rate_per_min: 600, max_active: 50, session_s: 1800, offer_s: 120, ...admission },
  });
  if (rows > 0) {
    await organizer('POST', `/api/admin/events/${event}/seats`, {
      generate: { section: 'A', rows, per_row: perRow, price_cents: priceCents },
    });
  }
  return event;
}

async function setAdmission(event, patch) {
  return organizer('PATCH', `/api/admin/events/${event}/admission`, patch);
}

async function stats(event) {
  return organizer('GET', `/api/admin/events/${event}/stats`);
}

/** Joins over the API (a buyer without a page); returns the join answer. */
async function joinByApi(event) {
  const res = await api('POST', `/api/events/${event}/queue`, { headers: { 'Idempotency-Key': crypto.randomUUID() }, body: {} });
  assert.equal(res.status, 201, `join ${event} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Waits (polling the status endpoint) for an offer, claims it; returns the admission token. */
async function admitByApi(event, queueToken, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const st = await api('GET', `/api/events/${event}/queue/status`, { token: queueToken });
    assert.equal(st.status, 200, `status → ${st.status} ${JSON.stringify(st.body)}`);
    if (st.body.status === 'offered' || st.body.status === 'admitted') {
      const claim = await api('POST', `/api/events/${event}/queue/claim`, { token: queueToken, body: {} });
      assert.equal(claim.status, 200, `claim → ${claim.status} ${JSON.stringify(claim.body)}`);
      return claim.body.admission_token;
    }
    await sleep(300);
  }
  throw new Error(`no offer for ${event} within ${timeoutMs} ms`);
}

/** A buyer without a page who joins, is admitted and holds `seats`: {token, holdId}. */
async function holdByApi(event, seats) {
  const joined = await joinByApi(event);
  const token = await admitByApi(event, joined.queue_token);
  const hold = await api('POST', `/api/events/${event}/holds`, { token, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { seats } });
  assert.equal(hold.status, 201, `hold → ${hold.status} ${JSON.stringify(hold.body)}`);
  return { token, holdId: hold.body.hold_id };
}

/** Pays for a hold of holdByApi with `card`; returns once the checkout is accepted (202). */
async function payByApi({ token, holdId }, card) {
  const pay = await api('POST', `/api/holds/${holdId}/checkout`, {
    token, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { payment_method: card },
  });
  assert.equal(pay.status, 202, `checkout → ${pay.status} ${JSON.stringify(pay.body)}`);
  return pay.body;
}

/** holdByApi, then payByApi: returns {token, holdId}, the payment running on. */
async function checkoutByApi(event, seats, card) {
  const held = await holdByApi(event, seats);
  await payByApi(held, card);
  return held;
}

/** Polls the hold until `done(hold)` holds; returns that hold. */
async function holdUntil({ token, holdId }, done, what, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    last = (await api('GET', `/api/holds/${holdId}`, { token })).body;
    if (done(last)) return last;
    await sleep(300);
  }
  throw new Error(`hold ${holdId} not ${what} within ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

/** A whole purchase over the API with pm_card_visa: returns the confirmed hold. */
async function buyByApi(event, seats) {
  const paying = await checkoutByApi(event, seats, 'pm_card_visa');
  return holdUntil(paying, (h) => {
    assert.ok(['paying', 'held', 'confirmed'].includes(h?.state), `hold went ${JSON.stringify(h)}`);
    return h.state === 'confirmed';
  }, 'confirmed');
}

/**
 * The event's seats as the page lays them out: rows of the first section in natural order
 * (A < B < … or 1 < 2 < … 10), seats by number. The generator's naming is the gateway's.
 */
async function seatRows(event) {
  const res = await api('GET', `/api/events/${event}/seats`);
  assert.equal(res.status, 200);
  const natural = new Intl.Collator(undefined, { numeric: true }).compare;
  const sections = [...new Set(res.body.seats.map((s) => s.section))].sort(natural);
  const mine = res.body.seats.filter((s) => s.section === sections[0]);
  const names = [...new Set(mine.map((s) => String(s.row)))].sort(natural);
  return names.map((row) => mine.filter((s) => String(s.row) === row).sort((a, b) => Number(a.number) - Number(b.number)));
}

async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/**
 * A buyer's tab in its own browser context (its own localStorage). Page errors are
 * collected so a test can assert the page ran without script errors.
 */
async function openPage(browser, urlPath, { width = 1280, height = 900, context } = {}) {
  const ctx = context || (await browser.newContext({ viewport: { width, height } }));
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (err) => page.errors.push(err.message));
  // What went wrong on the wire, for a failure's message only: some tests expect refusals.
  page.trouble = [];
  page.on('requestfailed', (r) => page.trouble.push(`${r.url()} failed: ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 500) page.trouble.push(`${r.url()} answered ${r.status()}`); });
  page.on('console', (m) => { if (m.type() === 'error') page.trouble.push(`console: ${m.text()}`); });
  await page.goto(BASE + urlPath);
  return page;
}

async function waitForView(page, view, timeout = 30000) {
  try {
    await page.waitForSelector(`#app[data-view="${view}"]`, { timeout });
  } catch {
    const now = await page.getAttribute('#app', 'data-view').catch(() => '?');
    const alert = await page.textContent('#alert').catch(() => '');
    const trouble = (page.trouble || []).slice(-5).join('; ') || 'none';
    throw new Error(`page did not reach view "${view}" within ${timeout} ms (it shows "${now}", alert: "${alert}", `
      + `at ${page.url()}, errors: ${JSON.stringify(page.errors || [])}, trouble: ${trouble})`);
  }
}

async function view(page) {
  return page.getAttribute('#app', 'data-view');
}

/** From the event page: join, wait for the offer, claim it; ends on the seat map. */
async function joinAndClaim(page) {
  await waitForView(page, 'landing');
  await page.click('#join');
  await waitForView(page, 'offered');
  await page.click('#claim');
  await waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
}

/** Selects `count` seats of the first section with the keyboard, left to right. */
async function pickSeatsByKeyboard(page, count) {
  await page.focus('#seat-map canvas');
  for (let i = 0; i < count; i += 1) {
    if (i > 0) await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Space');
  }
}

async function selectedSeats(page) {
  return page.$$eval('#selection-list li', (lis) => lis.map((li) => li.textContent));
}

async function holdSeats(page) {
  await page.click('#hold');
  await waitForView(page, 'hold');
}

/** From the hold panel: open the payment form, choose the card, pay. */
async function pay(page, card) {
  if (await page.isVisible('#to-payment')) await page.click('#to-payment');
  await page.check(`#cards input[value="${card}"]`);
  await page.click('#pay');
}

/**
 * A browser context with axe-core (tests/pages/node_modules, pinned by package-lock.json)
 * loaded into every page before the page's own scripts. It comes in as an init script, which
 * the pages' Content-Security-Policy does not govern: nothing is added to static/.
 */
async function axeContext(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  await context.addInitScript({ path: require.resolve('axe-core/axe.min.js') });
  return context;
}

/** Every axe-core violation on the page as it is now: [{id, impact, help, nodes}]. */
async function axeViolations(page) {
  return page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5),
    }));
  });
}

/** Presses Tab (at most `max` times) until the focused element matches selector. */
async function tabTo(page, selector, max = 40) {
  for (let i = 0; i < max; i += 1) {
    if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  const at = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120));
  throw new Error(`Tab never reached ${selector} (focus is on ${at})`);
}

async function screenshot(page, name) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

module.exports = {
  BASE, api, organizer, createEvent, seatRows, setAdmission, stats, joinByApi, admitByApi, holdByApi, payByApi, checkoutByApi, holdUntil, buyByApi,
  launch, openPage, waitForView, view, joinAndClaim, pickSeatsByKeyboard, selectedSeats,
  holdSeats, pay, screenshot, sleep, axeContext, axeViolations, tabTo,
};
