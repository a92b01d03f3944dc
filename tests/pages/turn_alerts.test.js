// Never miss a turn: the offer reaching a buyer's tab while they look at another one changes
// the tab's title (with the offer's countdown) and icon, plays the tone they turned on, and
// shows a system notification — permission asked only when they press the button after
// joining, never on load. The page uses the real Notification API; an init script wraps it
// to record what the page asked for and showed.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

function recordAlerts() {
  const Real = window.Notification;
  window.recorded = { asked: 0, shown: [], tones: 0 };
  class Recorded extends Real {
    constructor(title, options) {
      window.recorded.shown.push({ title, body: options?.body, focused: document.hasFocus() });
      super(title, options);
    }
    static get permission() {
      return Real.permission;
    }
    static requestPermission(...args) {
      window.recorded.asked += 1;
      return Real.requestPermission(...args);
    }
  }
  window.Notification = Recorded;
  const oscillator = AudioContext.prototype.createOscillator;
  AudioContext.prototype.createOscillator = function createOscillator() {
    window.recorded.tones += 1;
    return oscillator.call(this);
  };
}

test('the offer reaches a background tab: title, icon, tone and notification', { timeout: 120000 }, async () => {
  const event = await h.createEvent('alerts', { admission: { rate_per_min: 1 } });
  await h.joinByApi(event);
  await h.joinByApi(event);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['notifications'], { origin: h.BASE });
  await context.addInitScript(recordAlerts);
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  const recorded = () => page.evaluate(() => window.recorded);
  assert.equal((await recorded()).asked, 0, 'no permission asked on load');
  assert.ok(await page.isHidden('#turn-alerts'), 'the alerts are offered only after joining');

  await page.click('#join');
  await h.waitForView(page, 'waiting');
  assert.ok(await page.isVisible('#turn-alerts'));
  assert.equal((await recorded()).asked, 0, 'joining asks nothing by itself');
  // Sound is off until the buyer turns it on; the choice is remembered.
  assert.equal(await page.isChecked('#turn-sound'), false);
  await page.check('#turn-sound');
  assert.equal(await page.evaluate(() => localStorage.getItem('floodgate:turn-sound')), 'on');
  // Permission already granted by the browser: the page says so instead of offering the button.
  assert.ok(await page.isHidden('#turn-notify'));
  assert.match(await page.textContent('#turn-notify-status'), /notification/i);
  const plainTitle = await page.title();
  assert.match(plainTitle, /Page test: alerts/);

  // The buyer looks at another tab. (Playwright tells every page it has the focus unless asked
  // not to; headless Chromium keeps every tab "visible", so the focus is what moves.)
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  const other = await context.newPage();
  await other.goto('about:blank');
  await other.bringToFront();
  await page.waitForFunction(() => !document.hasFocus(), null, { timeout: 10000 });

  await h.setAdmission(event, { rate_per_min: 1200 });
  await page.waitForFunction(() => /your turn/i.test(document.title), null, { timeout: 30000 });
  const title = await page.title();
  assert.match(title, /^\(\d+:\d\d\) It's your turn · Page test: alerts$/, title);
  assert.match(await page.getAttribute('#favicon', 'href'), /^data:image\/svg\+xml/);
  const { shown, tones } = await recorded();
  assert.equal(shown.length, 1, JSON.stringify(shown));
  assert.equal(shown[0].title, "It's your turn");
  assert.match(shown[0].body, /Claim it within \d+:\d\d .*Page test: alerts/);
  assert.equal(shown[0].focused, false, 'shown while the buyer looked at another tab');
  assert.ok(tones >= 1, 'the tone the buyer turned on played');

  // The countdown in the title runs.
  const first = title.match(/\((\d+):(\d\d)\)/).slice(1).map(Number);
  await page.waitForFunction((t0) => {
    const m = document.title.match(/\((\d+):(\d\d)\)/);
    return m && Number(m[1]) * 60 + Number(m[2]) < t0;
  }, first[0] * 60 + first[1], { timeout: 10000 });

  // Back on the tab and claimed: the plain title and icon again.
  await page.bringToFront();
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  assert.equal(await page.title(), plainTitle);
  assert.equal(await page.getAttribute('#favicon', 'href'), 'data:,');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('the permission is asked only when the buyer presses the button after joining', { timeout: 60000 }, async () => {
  const event = await h.createEvent('alerts-ask', { opens_at: new Date(Date.now() + 3600 * 1000).toISOString() });
  const context = await browser.newContext();
  await context.addInitScript(recordAlerts);
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await page.waitForSelector('#turn-alerts:not([hidden])');
  assert.equal(await page.evaluate(() => Notification.permission), 'default');
  assert.equal(await page.evaluate(() => window.recorded.asked), 0);
  assert.ok(await page.isVisible('#turn-notify'));
  await page.click('#turn-notify');
  await page.waitForFunction(() => window.recorded.asked === 1);
  assert.deepEqual(page.errors, []);
  await context.close();
});
