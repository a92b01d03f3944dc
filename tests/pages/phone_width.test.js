// A whole purchase at phone width (375 px): nothing overflows sideways at any step.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

async function fitsPhone(page, step) {
  const { scroll, font } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    font: parseFloat(getComputedStyle(document.body).fontSize),
  }));
  assert.ok(scroll <= 375, `${step}: the page is ${scroll} px wide at a 375 px screen`);
  assert.ok(font >= 16, `${step}: body text is ${font} px`);
}

test('a buyer can buy at 375 px width', { timeout: 180000 }, async () => {
  // Wide rows: the map must scroll inside its section, not push the page sideways.
  const event = await h.createEvent('phone', { rows: 6, perRow: 40, admission: { rate_per_min: 1 } });
  for (let i = 0; i < 2; i += 1) await h.joinByApi(event);
  const page = await h.openPage(browser, `/events/${event}`, { width: 375, height: 740 });
  await h.waitForView(page, 'landing');
  await fitsPhone(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  await page.waitForFunction(() => /\d|next/.test(document.getElementById('position').textContent));
  await fitsPhone(page, 'waiting');
  await h.screenshot(page, 'phone-1-waiting');

  await h.setAdmission(event, { rate_per_min: 60 });
  await h.waitForView(page, 'offered', 60000);
  await fitsPhone(page, 'your turn');
  await h.screenshot(page, 'phone-2-your-turn');
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  await fitsPhone(page, 'seat map');
  await h.screenshot(page, 'phone-seat-map');

  // A tap on the canvas picks the seat under the finger (row A, seat 1 sits at the top left).
  const box = await page.locator('#seat-map canvas').first().boundingBox();
  await page.mouse.click(box.x + 34 + 2 + 9, box.y + 2 + 9);
  assert.equal((await h.selectedSeats(page)).length, 1, 'one seat picked by tapping');
  await page.locator('#hold').scrollIntoViewIfNeeded();
  assert.ok(await page.locator('#hold').isVisible());
  await h.holdSeats(page);
  await page.click('#to-payment');
  await fitsPhone(page, 'hold');
  await h.screenshot(page, 'phone-3-held');
  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  await fitsPhone(page, 'confirmed');
  await h.screenshot(page, 'phone-4-confirmed');
  assert.deepEqual(page.errors, []);
});
