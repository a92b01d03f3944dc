// An organizer's sale run from the dashboard alone: the event and its seats are made there and
// open a few seconds later, a buyer in another browser waits in line and sees the organizer's
// message; modes, team keys, access codes, the priority lane and the access rule are changed
// there and checked against the API; exports download as files; a view-only key changes
// nothing. Also: the branding form shows the branding and embedding sites stored before the
// dashboard was opened.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const h = require('./harness');

const KEY = process.env.FLOODGATE_ORGANIZER_KEY;

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

/** A dashboard tab signed in with `key`, on `event` (or the events list). */
async function dashboard(key, event = '') {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.BASE });
  const page = await h.openPage(browser, event ? `/admin?event=${event}` : '/admin', { context });
  await h.waitForView(page, 'key');
  await page.fill('#key', key);
  await page.click('#key-form button[type="submit"]');
  await h.waitForView(page, 'dashboard');
  if (event) await page.waitForFunction(() => /\S/.test(document.getElementById('message-current').textContent), null, { timeout: 15000 });
  return page;
}

async function until(read, done, what, tries = 150) {
  let value;
  for (let i = 0; i < tries; i += 1) {
    value = await read();
    if (done(value)) return value;
    await h.sleep(100);
  }
  assert.fail(`never: ${what} (last: ${JSON.stringify(value)})`);
}

const textOf = (page, id, pattern) => page.waitForFunction(
  ([el, re]) => new RegExp(re).test(document.getElementById(el)?.textContent || ''), [id, pattern.source], { timeout: 15000 },
);
const admission = async (event) => (await h.stats(event)).admission;
const codes = async (event) => (await h.organizer('GET', `/api/admin/events/${event}/codes?limit=1000`)).codes;
const keys = async () => (await h.organizer('GET', '/api/admin/keys')).keys;
const access = async (event) => h.organizer('GET', `/api/admin/events/${event}/access`);

/** A datetime-local value for `ms`, in the page's own time zone. */
const localTime = (page, ms) => page.evaluate((at) => {
  const d = new Date(at);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}, ms);

/** Clicks an export button and reads the file the browser saved. */
async function exported(page, name) {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15000 }), page.click(`[data-export="${name}"]`)]);
  const file = await download.path();
  return { name: download.suggestedFilename(), lines: fs.readFileSync(file, 'utf8').split(/\r?\n/).filter(Boolean) };
}

test('an organizer runs a sale from the dashboard alone; a view-only key changes nothing', { timeout: 180000 }, async () => {
  const event = `pages-sale-${crypto.randomBytes(4).toString('hex')}`;
  const page = await dashboard(KEY);

  // The event and its seats, opening a few seconds from now.
  const opensAt = Date.now() + 12000;
  await page.fill('#new-event', event);
  await page.fill('#new-name', 'Closing night');
  await page.fill('#new-opens', await localTime(page, opensAt));
  await page.fill('#new-rows', '2');
  await page.fill('#new-per-row', '5');
  await page.fill('#new-price', '3500');
  await page.click('#create-form button[type="submit"]');
  await textOf(page, 'create-status', /created with 10 seats/);
  await textOf(page, 'event-title', new RegExp(`^${event}$`));
  const summary = (await h.api('GET', `/api/events/${event}`)).body;
  assert.equal(summary.name, 'Closing night');
  assert.ok(Math.abs(Date.parse(summary.opens_at) - opensAt) < 1500, `opens at ${summary.opens_at}`);
  assert.equal((await h.stats(event)).seats.available, 10);

  // One offer a minute and one buyer at a time: the second buyer waits in line.
  await page.waitForFunction(() => document.getElementById('rate').value !== '', null, { timeout: 15000 });
  await page.fill('#rate', '1');
  await page.fill('#max-active', '1');
  await page.click('#admission-form button[type="submit"]');
  await until(() => admission(event), (a) => a.rate_per_min === 1 && a.max_active === 1, 'rate 1, max active 1');

  await h.sleep(Math.max(0, opensAt - Date.now() + 1000));
  await h.joinByApi(event);
  const buyerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const buyer = await h.openPage(browser, `/events/${event}`, { context: buyerContext });
  await h.waitForView(buyer, 'landing');
  await buyer.click('#join');
  await h.waitForView(buyer, 'waiting');

  // A message the waiting buyer's page shows.
  await page.fill('#message-text', 'Doors open at 19:30.');
  await page.click('#message-form button[type="submit"]');
  await textOf(page, 'message-current', /Doors open at 19:30\./);
  await buyer.waitForSelector('#organizer-message:not([hidden])', { timeout: 15000 });
  assert.equal(await buyer.textContent('#organizer-message-text'), 'Doors open at 19:30.');

  // Modes: maintenance and back, one click each.
  await page.click('#mode-maintenance');
  await until(() => admission(event), (a) => a.mode === 'maintenance', 'maintenance');
  await page.click('#mode-normal');
  await until(() => admission(event), (a) => a.mode === 'normal', 'normal again');
  await page.waitForSelector('#mode-normal[aria-pressed="true"]', { timeout: 15000 });

  // Team keys: a viewer key shown once, copied; an operator key made and revoked.
  await page.click('#team-key-form button[type="submit"]');
  assert.match(await page.textContent('#err-team-key-name'), /1–64/);
  await page.fill('#team-key-name', `Box office ${event}`);
  await page.selectOption('#team-key-role', 'viewer');
  await page.click('#team-key-form button[type="submit"]');
  await page.waitForSelector('#team-key-new:not([hidden])', { timeout: 15000 });
  const viewerKey = await page.textContent('#team-key-value');
  assert.match(viewerKey, /^fgk_[0-9a-f]{48}$/);
  assert.match(await page.textContent('#team-key-new'), /shown only once/);
  await page.click('#team-key-copy');
  await textOf(page, 'keys-status', /Copied/);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), viewerKey);
  await page.click('#team-key-done');
  assert.equal(await page.isHidden('#team-key-new'), true);
  assert.equal(await page.textContent('#team-key-value'), '', 'the key is gone from the page');
  const listedViewer = (await keys()).find((k) => k.name === `Box office ${event}`);
  assert.equal(listedViewer?.role, 'viewer');
  await page.waitForSelector(`#team-key-table tr[data-key="${listedViewer.id}"]`, { timeout: 15000 });
  assert.equal(await page.textContent(`#team-key-table tr[data-key="${listedViewer.id}"] td:nth-of-type(2)`), `…${viewerKey.slice(-4)}`);

  await page.fill('#team-key-name', `Door ${event}`);
  await page.selectOption('#team-key-role', 'operator');
  await page.click('#team-key-form button[type="submit"]');
  await page.waitForSelector('#team-key-new:not([hidden])', { timeout: 15000 });
  const doorKey = await page.textContent('#team-key-value');
  const door = (await keys()).find((k) => k.name === `Door ${event}`);
  assert.equal(door?.role, 'operator');
  assert.equal((await h.api('GET', `/api/admin/events/${event}/stats`, { token: doorKey })).status, 200);
  let asked = '';
  page.once('dialog', (dialog) => { asked = dialog.message(); dialog.accept(); });
  await page.click(`#team-key-table tr[data-key="${door.id}"] button`);
  await page.waitForSelector(`#team-key-table tr[data-key="${door.id}"]`, { state: 'detached', timeout: 15000 });
  assert.match(asked, new RegExp(`Door ${event}`));
  await textOf(page, 'keys-status', /revoked/);
  assert.equal((await keys()).some((k) => k.id === door.id), false);
  await until(async () => (await h.api('GET', `/api/admin/events/${event}/stats`, { token: doorKey })).status, (s) => s === 401, 'the revoked key refused');

  // Codes: five generated with two uses each, shown once; a list checked line by line, then
  // added, also from a file.
  await page.fill('#code-uses', '2');
  await page.fill('#code-count', '5');
  await page.click('#codes-form button[value="generate"]');
  await textOf(page, 'codes-status', /^5 codes added\.$/);
  const made = (await page.inputValue('#codes-made-list')).split('\n');
  assert.equal(made.length, 5);
  const stored = await codes(event);
  assert.deepEqual(stored.map((c) => c.code).sort(), [...made].sort());
  assert.ok(stored.every((c) => c.uses === 2 && c.uses_left === 2));
  await page.waitForFunction(() => document.querySelectorAll('#code-table tbody tr').length === 5, null, { timeout: 15000 });
  assert.match(await page.textContent(`#code-table tr[data-code="${made[0]}"]`), /2 of 2/);

  await page.fill('#code-list', 'FRIEND-0001\nno good');
  await page.click('#codes-form button[value="upload"]');
  assert.match(await page.textContent('#err-code-list'), /Line 2/);
  assert.equal((await codes(event)).length, 5, 'nothing sent');
  await page.fill('#code-list', '');
  await page.setInputFiles('#code-file', { name: 'friends.txt', mimeType: 'text/plain', buffer: Buffer.from('FRIEND-0001\nFRIEND-0002\n') });
  await page.waitForFunction(() => document.getElementById('code-list').value === 'FRIEND-0001\nFRIEND-0002', null, { timeout: 15000 });
  await page.click('#codes-form button[value="upload"]');
  await textOf(page, 'codes-status', /^2 codes added\.$/);
  assert.equal(await page.textContent('#err-code-list'), '');
  assert.deepEqual((await codes(event)).filter((c) => c.code.startsWith('FRIEND')).map((c) => c.code), ['FRIEND-0001', 'FRIEND-0002']);

  // The priority lane's share, sent with the settings' version.
  await page.fill('#priority-share', '25');
  await page.click('#priority-form button[type="submit"]');
  await until(() => admission(event), (a) => a.priority_share === 0.25, 'priority share 25 %');
  await textOf(page, 'priority-status', /25%/);

  // Exports: files with their header and rows; a failed one says why.
  const audit = await exported(page, 'audit');
  assert.equal(audit.name, `${event}-audit.csv`);
  assert.equal(audit.lines[0], 'at,actor,key_id,action,detail');
  assert.ok(audit.lines.some((line) => line.includes('add_codes')), audit.lines.join('\n'));
  await textOf(page, 'export-status', /downloaded/);
  const sales = await exported(page, 'sales');
  assert.equal(sales.lines[0], 'seat,section,row,number,price_cents,order,sold_at');
  await page.route('**/exports/holds.csv', (route) => route.fulfill({
    status: 503, contentType: 'application/problem+json', body: JSON.stringify({ code: 'overloaded', title: 'busy' }),
  }));
  await page.click('[data-export="holds"]');
  await textOf(page, 'export-status', /Holds could not be downloaded: We are very busy/);
  await page.unroute('**/exports/holds.csv');

  // A view-only key: each change refused with the same words, and nothing changes.
  const before = await admission(event);
  const accessBefore = await access(event);
  const keysBefore = (await keys()).length;
  const viewer = await dashboard(viewerKey, event);
  await textOf(viewer, 'keys-status', /only an admin key/);
  assert.equal(await viewer.isDisabled('#team-key-form button[type="submit"]'), true);
  await viewer.click('#mode-maintenance');
  await textOf(viewer, 'control-status', /may only view/);
  await viewer.fill('#code-count', '3');
  await viewer.click('#codes-form button[value="generate"]');
  await textOf(viewer, 'codes-status', /may only view/);
  await viewer.fill('#priority-share', '90');
  await viewer.click('#priority-form button[type="submit"]');
  await textOf(viewer, 'priority-status', /may only view/);
  await viewer.check('input[name="access-rule"][value="invite_only"]');
  await viewer.click('#access-form button[type="submit"]');
  await textOf(viewer, 'access-status', /may only view/);
  await viewer.fill('#tm-name', 'Not allowed');
  await viewer.click('#timings-form button[type="submit"]');
  await textOf(viewer, 'timings-status', /may only view/);
  const viewed = await exported(viewer, 'orders');
  assert.equal(viewed.lines[0], 'order,created_at,seats,seat_count,amount_cents,currency,status,payment_status,hold');
  const afterViewer = await admission(event);
  assert.equal(afterViewer.version, before.version);
  assert.equal(afterViewer.mode, 'normal');
  assert.equal(afterViewer.priority_share, 0.25);
  assert.equal((await codes(event)).length, 7);
  assert.deepEqual(await access(event), accessBefore);
  assert.equal((await keys()).length, keysBefore);
  assert.equal((await h.api('GET', `/api/events/${event}`)).body.name, 'Closing night');
  assert.equal(await h.view(buyer), 'waiting', 'the buyer is still in line');

  // The access rule: a presale needs its general opening, said beside the field.
  await page.check('input[name="access-rule"][value="presale"]');
  await page.fill('#access-general', '');
  await page.click('#access-form button[type="submit"]');
  assert.match(await page.textContent('#err-access-general'), /general opening/);
  assert.equal((await access(event)).access, 'open', 'nothing sent');
  const general = Date.now() + 3600 * 1000;
  await page.fill('#access-general', await localTime(page, general));
  await page.click('#access-form button[type="submit"]');
  await textOf(page, 'access-status', /Access saved/);
  const presale = await access(event);
  assert.equal(presale.access, 'presale');
  assert.ok(Math.abs(Date.parse(presale.general_opens_at) - general) < 1500);
  await textOf(page, 'access-current', /Presale/);

  assert.deepEqual(page.errors, []);
  assert.deepEqual(viewer.errors, []);
  await buyerContext.close();
});

test('the branding form shows the branding stored before the dashboard was opened', { timeout: 60000 }, async () => {
  const event = await h.createEvent('brand-load');
  const frames = ['https://tickets.example.com', 'https://*.partner.example'];
  await h.organizer('PATCH', `/api/admin/events/${event}`, {
    branding: { heading: 'Summer tour', text: 'Two nights only.', colors: { primary: '#123456', background: '#fafafa' } },
    frame_ancestors: frames,
  });
  const page = await dashboard(KEY, event);
  await page.waitForFunction(() => document.getElementById('brand-heading').value === 'Summer tour', null, { timeout: 15000 });
  assert.equal(await page.inputValue('#brand-text'), 'Two nights only.');
  assert.equal(await page.inputValue('#brand-primary'), '#123456');
  assert.equal(await page.inputValue('#brand-background'), '#fafafa');
  assert.equal(await page.inputValue('#brand-frames'), frames.join('\n'));
  // Saving another heading keeps the colours and the sites it was shown with.
  await page.fill('#brand-heading', 'Summer tour, third night');
  await page.click('#look-form button[type="submit"]');
  await textOf(page, 'look-status', /saved/);
  const branding = (await h.api('GET', `/api/events/${event}`)).body.branding;
  assert.equal(branding.heading, 'Summer tour, third night');
  assert.deepEqual(branding.colors, { primary: '#123456', background: '#fafafa' });
  assert.deepEqual((await h.organizer('GET', `/api/admin/events/${event}`)).frame_ancestors, frames);
  assert.deepEqual(page.errors, []);
});
