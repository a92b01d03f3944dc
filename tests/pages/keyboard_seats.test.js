// Seat selection by keyboard alone: Tab to the map, arrows move a visible focus, Space and
// Enter select, the allowed number is enforced, and the hold goes through.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

test('seats can be chosen with the keyboard, up to the allowed number', { timeout: 120000 }, async () => {
  const event = await h.createEvent('keyboard', { rows: 3, perRow: 6, max_seats_per_hold: 2 });
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  assert.match(await page.textContent('#seats-help'), /^Pick up to 2 seats\./);
  const rows = await h.seatRows(event);
  const at = (r, i) => `Row ${rows[r][i].row}, seat ${rows[r][i].number}`;

  // Tab from the heading reaches the first section's canvas.
  await page.focus('[data-panel="seats"] h1');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'CANVAS');
  const focusText = () => page.textContent('.seat-focus');
  assert.ok((await focusText()).startsWith(`${at(0, 0)},`));
  assert.match(await focusText(), /available$/);
  // The focus ring is drawn: the canvas shows the amber focus colour somewhere.
  const ringDrawn = await page.evaluate(() => {
    const c = document.activeElement;
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < data.length; i += 4) if (data[i] === 0xf0 && data[i + 1] === 0xa5 && data[i + 2] === 0x00) return true;
    return false;
  });
  assert.ok(ringDrawn, 'a visible focus ring is drawn on the focused seat');

  await page.keyboard.press('Space');
  assert.ok((await focusText()).startsWith(`${at(0, 0)},`));
  assert.match(await focusText(), /selected$/);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  assert.ok((await focusText()).startsWith(`${at(1, 1)},`), await focusText());
  await page.keyboard.press('Enter');
  assert.equal((await h.selectedSeats(page)).length, 2);

  // A third seat is refused with a plain message.
  await page.keyboard.press('End');
  assert.ok((await focusText()).startsWith(`${at(1, 5)},`), await focusText());
  await page.keyboard.press('Space');
  assert.equal((await h.selectedSeats(page)).length, 2);
  assert.match(await page.textContent('#alert'), /up to 2 seats/);

  // Space again on a chosen seat unselects it.
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Space');
  assert.equal((await h.selectedSeats(page)).length, 1);

  // Tab on to the hold button and press it.
  await page.focus('#hold');
  await page.keyboard.press('Enter');
  await h.waitForView(page, 'hold');
  assert.equal(await page.$$eval('#hold-seats li', (l) => l.length), 1);
  assert.deepEqual(page.errors, []);
});

test('a large venue (5,000 seats) stays a handful of elements and answers the keyboard', { timeout: 120000 }, async () => {
  const event = await h.createEvent('large', { rows: 50, perRow: 100 });
  const page = await h.openPage(browser, `/events/${event}`);
  await h.joinAndClaim(page);
  // One canvas per section, not one element per seat.
  assert.equal(await page.$$eval('#seat-map canvas', (c) => c.length), 1);
  const elements = await page.$$eval('#seat-map *', (all) => all.length);
  assert.ok(elements < 50, `the 5,000-seat map uses ${elements} elements`);
  await page.focus('#seat-map canvas');
  for (let i = 0; i < 30; i += 1) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('End');
  const rows = await h.seatRows(event);
  assert.ok((await page.textContent('.seat-focus')).startsWith(`Row ${rows[30][99].row}, seat ${rows[30][99].number},`));
  await page.keyboard.press('Space');
  assert.equal((await h.selectedSeats(page)).length, 1);
  assert.deepEqual(page.errors, []);
});
