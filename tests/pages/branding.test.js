// The organizer's brand and the embed mode, in Chromium: the branded room shows the logo, the
// colours and the texts (as text, never markup) with nothing serious for axe-core; the room
// works inside an iframe of a page served by another origin that the event allows, and is
// refused inside one it does not allow.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const h = require('./harness');

let browser;
let host;
before(async () => {
  browser = await h.launch();
  // The organizer's own site: another origin (another port), one page framing the room.
  host = http.createServer((req, res) => {
    const src = new URL(req.url, 'http://x').searchParams.get('src') || '';
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><title>Club site</title></head><body>
      <h1>Club tickets</h1><iframe id="room" title="Ticket waiting room" src="${src.replace(/"/g, '')}" width="1000" height="820"></iframe></body></html>`);
  });
  await new Promise((resolve) => host.listen(0, '127.0.0.1', resolve));
});
after(async () => {
  await browser?.close();
  await new Promise((resolve) => host?.close(resolve));
});

const HEADING = 'Welcome to the <b>final</b>';
const TEXT = 'Doors open at 18:00.\n<script>alert(1)</script> No bags larger than A4.';

function hostOrigin() {
  return `http://127.0.0.1:${host.address().port}`;
}

async function brandedEvent(label, frameAncestors) {
  const event = await h.createEvent(label);
  await h.organizer('PATCH', `/api/admin/events/${event}`, {
    branding: {
      logo_url: '/static/brand-example.svg',
      colors: { primary: '#7a1f5c', background: '#fff7ee' },
      heading: HEADING,
      text: TEXT,
    },
    frame_ancestors: frameAncestors,
  });
  return event;
}

test('the branded room: logo, colours and texts as text; axe finds nothing serious', { timeout: 120000 }, async () => {
  const event = await brandedEvent('brand', []);
  const context = await h.axeContext(browser);
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  await page.waitForSelector('#brand:not([hidden])');
  assert.equal(await page.textContent('#brand-heading'), HEADING);
  assert.equal(await page.textContent('#brand-text'), TEXT);
  assert.equal(await page.$$eval('#brand b, #brand script', (n) => n.length), 0, 'no markup from the organizer');
  await page.waitForFunction(() => document.getElementById('brand-logo').complete && document.getElementById('brand-logo').naturalWidth > 0);
  assert.match(await page.getAttribute('#brand-logo', 'alt'), /logo/);
  const colours = await page.evaluate(() => ({
    button: getComputedStyle(document.getElementById('join')).backgroundColor,
    ink: getComputedStyle(document.getElementById('join')).color,
    page: getComputedStyle(document.body).backgroundColor,
  }));
  assert.deepEqual(colours, { button: 'rgb(122, 31, 92)', ink: 'rgb(255, 255, 255)', page: 'rgb(255, 247, 238)' });
  const serious = (await h.axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious, [], 'axe on the branded room');
  await h.screenshot(page, 'branded-room');
  // The brand stays through the purchase: the seat map of a branded event.
  await page.click('#join');
  await h.waitForView(page, 'offered');
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  const seatsSerious = (await h.axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(seatsSerious, [], 'axe on the branded seat map');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('embedded: framed by an allowed origin it works; by another it is refused', { timeout: 120000 }, async () => {
  const allowed = await brandedEvent('embed', [hostOrigin()]);
  const closed = await brandedEvent('no-embed', ['https://someone-else.example']);
  const context = await browser.newContext({ viewport: { width: 1100, height: 950 } });

  const page = await context.newPage();
  await page.goto(`${hostOrigin()}/?src=${encodeURIComponent(`${h.BASE}/events/${allowed}`)}`);
  const frame = await (await page.waitForSelector('#room')).contentFrame();
  await frame.waitForSelector('#app[data-view="landing"]', { timeout: 30000 });
  assert.equal(await frame.textContent('#brand-heading'), HEADING);
  await frame.click('#join');
  await frame.waitForSelector('#app[data-view="offered"]', { timeout: 30000 });
  await frame.click('#claim');
  await frame.waitForSelector('#seat-map canvas', { timeout: 30000 });
  await h.screenshot(page, 'embedded-room');

  const refused = await context.newPage();
  const blocked = [];
  refused.on('console', (m) => { if (/frame-ancestors|Refused to frame/i.test(m.text())) blocked.push(m.text()); });
  await refused.goto(`${hostOrigin()}/?src=${encodeURIComponent(`${h.BASE}/events/${closed}`)}`);
  const other = await (await refused.waitForSelector('#room')).contentFrame();
  // Chromium replaces a frame its policy refuses with an error page (and says why).
  for (let i = 0; i < 50 && !other.url().startsWith('chrome-error:') && blocked.length === 0; i += 1) await h.sleep(100);
  assert.ok(other.url().startsWith('chrome-error:') || blocked.length > 0, `frame at ${other.url()}, console: ${blocked}`);
  assert.equal(await other.$('#app'), null, 'no waiting room inside a frame the event does not allow');
  await context.close();
});
