// The organizer's night on the dashboard: a message set there reaches a waiting buyer's page,
// maintenance is switched on and off in one click each, a branding heading is saved; a
// view-only key is told it may only view and changes nothing.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

async function dashboard(event, key) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await h.openPage(browser, `/admin?event=${event}`, { context });
  await h.waitForView(page, 'key');
  await page.fill('#key', key);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');
  // The controls carry the version of the settings once the stats have been read.
  await page.waitForFunction(() => /\S/.test(document.getElementById('message-current').textContent), null, { timeout: 15000 });
  return page;
}

async function until(read, done, what) {
  for (let i = 0; i < 150; i += 1) {
    const value = await read();
    if (done(value)) return value;
    await h.sleep(100);
  }
  assert.fail(`never: ${what}`);
}

const admission = async (event) => (await h.stats(event)).admission;
const look = async (event) => (await h.api('GET', `/api/events/${event}`)).body;

test('an organizer sets a message, maintenance and a heading from the dashboard; a viewer key changes nothing', { timeout: 120000 }, async () => {
  const event = await h.createEvent('night', { admission: { rate_per_min: 1, max_active: 1 } });
  await h.joinByApi(event); // takes the one slot: the buyer below waits

  const buyerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const buyer = await h.openPage(browser, `/events/${event}`, { context: buyerContext });
  await h.waitForView(buyer, 'landing');
  await buyer.click('#join');
  await h.waitForView(buyer, 'waiting');

  const page = await dashboard(event, process.env.FLOODGATE_ORGANIZER_KEY);

  // A message over the limit is refused beside the field, nothing sent.
  await page.fill('#message-text', 'x'.repeat(281));
  await page.$eval('#message-text', (el) => { el.removeAttribute('maxlength'); });
  await page.fill('#message-text', 'x'.repeat(281));
  await page.click('#message-form button[type="submit"]');
  assert.match(await page.textContent('#err-message-text'), /280/);
  assert.equal((await admission(event)).message ?? null, null);

  await page.fill('#message-text', 'Doors open at 19:30.');
  await page.selectOption('#message-level', 'warning');
  await page.click('#message-form button[type="submit"]');
  await page.waitForFunction(() => /Doors open at 19:30\./.test(document.getElementById('message-current').textContent), null, { timeout: 15000 });
  await buyer.waitForSelector('#organizer-message:not([hidden])', { timeout: 15000 });
  assert.equal(await buyer.textContent('#organizer-message-text'), 'Doors open at 19:30.');
  assert.equal(await buyer.getAttribute('#organizer-message', 'data-level'), 'warning');

  await page.click('#mode-maintenance');
  await until(() => admission(event), (a) => a.mode === 'maintenance', 'maintenance');
  await page.waitForSelector('#mode-maintenance[aria-pressed="true"]', { timeout: 15000 });
  await page.click('#mode-normal');
  await until(() => admission(event), (a) => a.mode === 'normal', 'back to normal');
  await page.waitForSelector('#mode-normal[aria-pressed="true"]', { timeout: 15000 });

  // A bad colour is refused beside its field before anything is sent.
  await page.fill('#brand-primary', 'red');
  await page.fill('#brand-background', '#ffffff');
  await page.click('#look-form button[type="submit"]');
  assert.match(await page.textContent('#err-primary'), /#rrggbb/);
  assert.equal(await page.getAttribute('#brand-primary', 'aria-invalid'), 'true');
  await page.fill('#brand-primary', '');
  await page.fill('#brand-background', '');
  await page.fill('#brand-heading', 'Final night');
  await page.click('#look-form button[type="submit"]');
  await page.waitForFunction(() => /saved/.test(document.getElementById('look-status').textContent), null, { timeout: 15000 });
  assert.equal((await look(event)).branding?.heading, 'Final night');
  assert.equal(await page.textContent('#err-primary'), '');

  // A viewer key: every change is refused with the same words, and nothing changes.
  const made = await h.organizer('POST', '/api/admin/keys', { name: `viewer-${event}`, role: 'viewer' });
  const viewer = await dashboard(event, made.key);
  const before = await admission(event);
  await viewer.click('#mode-maintenance');
  await viewer.waitForFunction(() => /may only view/.test(document.getElementById('control-status').textContent), null, { timeout: 15000 });
  assert.equal(await viewer.getAttribute('#mode-normal', 'aria-pressed'), 'true');
  await viewer.click('#message-clear');
  await viewer.fill('#brand-heading', 'Not allowed');
  await viewer.click('#look-form button[type="submit"]');
  await viewer.waitForFunction(() => /may only view/.test(document.getElementById('look-status').textContent), null, { timeout: 15000 });
  assert.equal(await viewer.isHidden('#stale'), true);
  const after = await admission(event);
  assert.equal(after.mode, 'normal');
  assert.equal(after.version, before.version);
  assert.equal(after.message?.text, 'Doors open at 19:30.');
  assert.equal((await look(event)).branding?.heading, 'Final night');
  assert.equal(await h.view(buyer), 'waiting', 'the buyer is still in line');
  assert.deepEqual(page.errors, []);
  assert.deepEqual(viewer.errors, []);
  await buyerContext.close();
});
