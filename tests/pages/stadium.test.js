// A 50,000-seat stadium: the seat page opens on an overview of sections with their seats left,
// draws only the chosen section (one canvas), keeps it fresh with `?since=` changes, and a buyer
// picks a seat in the farthest section with the keyboard and holds it. A standing section is
// bought as a quantity, at phone width. axe-core finds nothing serious on the new states.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const SECTIONS = 20;
const ROWS = 49;
const PER_ROW = 50;
const STANDING = 1000;

/** 20 seated sections "101"…"120" of 49 × 50 seats, and a standing "Floor" of 1,000. */
async function stadium() {
  const event = await h.createEvent('stadium', { rows: 0, max_seats_per_hold: 4 });
  for (let n = 0; n < SECTIONS; n += 1) {
    await h.organizer('POST', `/api/admin/events/${event}/seats`, {
      generate: { section: String(101 + n), rows: ROWS, per_row: PER_ROW, price_cents: 3000 + 500 * (n % 4) },
    });
  }
  const floor = Array.from({ length: STANDING }, (_, i) => ({ seat_id: `FLOOR-${i + 1}`, section: 'Floor', price_cents: 2500 }));
  await h.organizer('POST', `/api/admin/events/${event}/seats`, { seats: floor });
  return event;
}

async function claimed(page) {
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'offered');
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#sections-list button');
}

async function seriousViolations(page) {
  return (await h.axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

test('a 50,000-seat stadium: pick a seat in the farthest section and hold it', { timeout: 300000 }, async () => {
  const event = await stadium();
  const info = await h.api('GET', `/api/events/${event}`);
  assert.equal(info.body.sections.length, SECTIONS + 1);
  assert.equal(info.body.sections.reduce((n, s) => n + s.seats, 0), 50000);

  const context = await h.axeContext(browser);
  const page = await h.openPage(browser, `/events/${event}`, { context });
  const fetched = [];
  page.on('request', (r) => { if (r.url().includes('/seats')) fetched.push(r.url()); });
  await claimed(page);

  // The overview: one button per section with its seats left; no seat drawn yet.
  const buttons = await page.$$eval('#sections-list button', (all) => all.map((b) => b.textContent));
  assert.equal(buttons.length, SECTIONS + 1);
  assert.match(buttons[0], /^Section 101\s*2,450 of 2,450 left/);
  assert.match(buttons[SECTIONS], /^Section Floor.*1,000 of 1,000 left.*Standing/);
  assert.equal(await page.$$eval('#seat-map canvas', (c) => c.length), 0);
  assert.deepEqual(await seriousViolations(page), [], 'axe on the stadium overview');
  await h.screenshot(page, 'stadium-overview');

  // The farthest section, chosen with the keyboard: its seats only, as one canvas.
  await page.focus('#sections-list button[data-section="120"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#seat-map canvas[data-section="120"]');
  assert.equal(await page.$$eval('#seat-map canvas', (c) => c.length), 1);
  const elements = await page.$$eval('#seat-map *', (all) => all.length);
  assert.ok(elements < 20, `a 2,450-seat section uses ${elements} elements`);
  assert.equal(await page.getAttribute('#sections-list button[data-section="120"]', 'aria-current'), 'true');
  // Only that section's seats were fetched, never the whole map.
  assert.ok(fetched.some((u) => u.endsWith('/seats?section=120')), fetched.join(' '));
  assert.ok(!fetched.some((u) => /\/seats$/.test(u)), fetched.join(' '));

  // Rows in the page's natural order (A, AA, …, AW, B, …): the 41st row, its last seat.
  const natural = new Intl.Collator(undefined, { numeric: true }).compare;
  const section = (await h.api('GET', `/api/events/${event}/seats?section=120`)).body.seats;
  const row = [...new Set(section.map((s) => s.row))].sort(natural)[40];
  await page.focus('#seat-map canvas');
  for (let i = 0; i < 40; i += 1) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('End');
  assert.match(await page.textContent('.seat-focus'), new RegExp(`^Row ${row}, seat 50, .*available$`));
  await page.keyboard.press('Space');
  assert.equal((await h.selectedSeats(page)).length, 1);
  assert.deepEqual(await seriousViolations(page), [], 'axe on a chosen stadium section');
  await h.screenshot(page, 'stadium-section');

  // Availability stays fresh by changes: a seat held elsewhere turns taken on this map.
  await h.holdByApi(event, ['120-A-1']);
  await page.focus('#seat-map canvas');
  await page.keyboard.press('Home');
  for (let i = 0; i < 40; i += 1) await page.keyboard.press('ArrowUp');
  await page.waitForFunction(() => /taken$/.test(document.querySelector('.seat-focus').textContent), null, { timeout: 20000 });
  assert.match(await page.textContent('.seat-focus'), /^Row A, seat 1, .*taken$/);
  assert.ok(fetched.some((u) => /\/seats\?since=\d+$/.test(u)), fetched.join(' '));

  await page.click('#hold');
  await h.waitForView(page, 'hold');
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), 1);
  assert.match(await page.textContent('#hold-seats'), new RegExp(`Row ${row}`));
  const seat = async () => (await h.api('GET', `/api/events/${event}/seats?section=120`)).body.seats.find((s) => s.seat_id === `120-${row}-50`);
  for (let i = 0; i < 50 && (await seat()).state !== 'taken'; i += 1) await h.sleep(200);
  assert.equal((await seat()).state, 'taken');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('a standing section is bought as a quantity, at phone width', { timeout: 300000 }, async () => {
  const event = await h.createEvent('standing', { rows: 2, perRow: 10, max_seats_per_hold: 4 });
  const floor = Array.from({ length: 30 }, (_, i) => ({ seat_id: `FLOOR-${i + 1}`, section: 'Floor', price_cents: 2500 }));
  await h.organizer('POST', `/api/admin/events/${event}/seats`, { seats: floor });
  const context = await h.axeContext(browser, { viewport: { width: 375, height: 740 } });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await claimed(page);
  const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scroll <= 375, `the overview is ${scroll} px wide at 375 px`);
  await h.screenshot(page, 'phone-stadium-overview');
  await page.click('#sections-list button[data-section="Floor"]');
  await page.waitForSelector('#ga-quantity');
  assert.equal(await page.$$eval('#seat-map canvas', (c) => c.length), 0);
  assert.deepEqual(await seriousViolations(page), [], 'axe on a standing section');
  await page.fill('#ga-quantity', '3');
  await page.click('#ga-hold');
  await h.waitForView(page, 'hold');
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), 3);
  assert.deepEqual(page.errors, []);
  await context.close();
});
