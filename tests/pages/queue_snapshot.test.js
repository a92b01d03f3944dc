// The waiting page computes its own place, wait range and chance of a seat from the public
// queue snapshot and its signed token, and says the chance in plain words.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const num = (text) => (/next/i.test(text) ? 0 : Number(text.replace(/[^\d]/g, '')));

test('the waiting page shows place, wait range and chance from the snapshot', { timeout: 90000 }, async () => {
  // Twenty seats, forty buyers ahead, one offer every three seconds.
  const event = await h.createEvent('snapshot', { rows: 1, perRow: 20, admission: { rate_per_min: 20, max_active: 1000 } });
  for (let i = 0; i < 4; i += 1) await Promise.all(Array.from({ length: 10 }, () => h.joinByApi(event)));
  const context = await browser.newContext();
  // Polling only, so every figure on the page comes from the snapshot.
  await context.addInitScript(() => {
    window.WebSocket = class {
      constructor() {
        throw new Error('WebSockets are blocked here');
      }
    };
    window.WebSocket.OPEN = 1;
  });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  const statusReads = [];
  page.on('request', (req) => {
    if (/\/queue\/status$/.test(new URL(req.url()).pathname)) statusReads.push(req.url());
  });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  // From the first tick the rate gives the wait, read as a range.
  await page.waitForFunction(() => /\d+–\d+ min/.test(document.getElementById('wait').textContent), null, { timeout: 30000 });
  const [lo, hi] = (await page.textContent('#wait')).match(/\d+/g).map(Number);
  assert.ok(lo < hi, `a range: ${lo}–${hi}`);
  // The page's formula on a snapshot gives the server's range for the same place: read both
  // until they fall in the same tick (the same place).
  const { token } = await page.evaluate((ev) => JSON.parse(localStorage.getItem(`floodgate:${ev}:queue`)), event);
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  let agreed = null;
  for (let i = 0; i < 20 && !agreed; i += 1) {
    const s = await h.api('GET', `/api/events/${event}/queue/snapshot`);
    const st = await h.api('GET', `/api/events/${event}/queue/status`, { token });
    const at = s.body.prequeue_left + claims.seq - s.body.fifo_served_through - 1;
    if (st.body.position === at) agreed = { s: s.body, st: st.body, at };
  }
  assert.ok(agreed, 'a snapshot and a status of the same tick');
  const mine = await page.evaluate(async ([s, at]) => (await import('/static/queue-snapshot.js')).waitEstimate(s, at), [agreed.s, agreed.at]);
  assert.deepEqual([mine[1], mine[2]], agreed.st.estimated_wait_range_s, `the page's range is the server's: ${JSON.stringify(agreed.s.cap)}`);
  // Short waits too: neither end nearer the point than five seconds, with the figures wait.rs's
  // tests give for 45 offers a second (ten seconds away, the first in line, a minute away).
  const rateOnly = (free) => ({ cap: { size: free, free, offer_rate_per_min: 2700, held_s: null, held_spread: null } });
  const short = await page.evaluate(async ([few, many]) => {
    const { waitEstimate } = await import('/static/queue-snapshot.js');
    return [waitEstimate(few, 449), waitEstimate(few, 0), waitEstimate(many, 2699)];
  }, [rateOnly(450), rateOnly(3000)]);
  assert.deepEqual(short, [[10, 5, 18], [1, 0, 9], [60, 50, 75]], 'the page draws short and long ranges as the server does');
  // While the cap fills, `W`'s ends 2.5× apart still give a range (wait.rs's figures), 2.56× none.
  const filling = (held) => ({ cap: { size: 450, free: 0, offer_rate_per_min: 2700, held_s: held, held_spread: 0.03 } });
  const unsure = await page.evaluate(async ([near, far]) => {
    const { waitEstimate } = await import('/static/queue-snapshot.js');
    return [waitEstimate(near, 1999), waitEstimate(near, 337), waitEstimate(far, 337)];
  }, [filling([16, 40]), filling([16, 41])]);
  assert.deepEqual(unsure, [[178, 130, 245], [31, 22, 44], null], 'the page gives a range from the same ends as the server');
  // A priority place waits in its own lane, which the snapshot's frontiers do not describe: the
  // page asks the server for it (as the server's own hint does), while a general place a few
  // behind the frontier is placed from the snapshot.
  const lanes = await page.evaluate(async (s) => {
    const { tokenClaims, placeFromSnapshot, updateFromSnapshot } = await import('/static/queue-snapshot.js');
    const token = (claims) => `h.${btoa(JSON.stringify(claims)).replace(/=+$/, '')}.sig`;
    const general = tokenClaims(token({ seq: s.fifo_served_through + 50, ep: s.epoch, tid: 'g' }));
    const priority = tokenClaims(token({ seq: 2 ** 50 + 3, ep: s.epoch, tid: 'p', ln: 'priority' }));
    return [placeFromSnapshot(s, general, null), placeFromSnapshot(s, priority, null), updateFromSnapshot(s, priority, null)];
  }, agreed.s);
  assert.deepEqual(lanes, [agreed.s.prequeue_left + 49, null, null], 'a priority place is never placed in the general line');
  // Hold the line still, then let the page read once more: with offers held the wait is not
  // known, and the page says so.
  await h.setAdmission(event, { rate_per_min: 0 });
  await h.sleep(4500);

  const snap = await h.api('GET', `/api/events/${event}/queue/snapshot`);
  assert.equal(snap.status, 200);
  const place = snap.body.prequeue_left + claims.seq - snap.body.fifo_served_through - 1;
  assert.equal(num(await page.textContent('#position')), place, `the page's place is the snapshot's: ${JSON.stringify(snap.body)}`);
  const st = await h.api('GET', `/api/events/${event}/queue/status`, { token });
  assert.equal(st.body.position, place, 'the status agrees');
  assert.equal(await page.textContent('#wait'), 'not known yet');
  assert.equal(st.body.estimated_wait_range_s, null, 'nor does the server give one');
  const chance = await page.textContent('#chance');
  const words = await page.evaluate(async ([c, seats, ahead]) => (await import('/static/messages.js')).chanceWords(c, seats, ahead),
    [st.body.seat_chance, snap.body.seats_left, place]);
  assert.equal(chance, words, `the server's chance ${st.body.seat_chance} in words`);
  // No offer answered yet: the page says so, with the seats and the people ahead.
  assert.equal(st.body.seat_chance, null, 'the priors alone are not stated');
  assert.match(chance, /^not known yet: 20 seats left for \d+ people ahead of you$/);
  assert.deepEqual(statusReads, [], 'far back, the page never asked its per-token status');
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('far back, the page reads again within the snapshot\'s read_within_s', async () => {
  // The page's own module, as the browser loads it: far back a small crowd reads every two
  // minutes, a large one as often as the front answers (the snapshot's read_within_s).
  const { nextReadS } = await import('../../static/queue-snapshot.js');
  const open = { state: 'open', retry_after_s: 2 };
  assert.equal(nextReadS(open, 400000, null), 120);
  assert.equal(nextReadS({ ...open, read_within_s: 49 }, 400000, null), 49);
  assert.equal(nextReadS({ ...open, read_within_s: 49 }, 300, null), 5, 'near the front the place decides');
  assert.equal(nextReadS({ ...open, read_within_s: 49 }, 400000, [40, 30, 60]), 15, 'half the soonest wait');
  // Paused or sold out the crowd keeps its spacing: a pause may last minutes, and tabs stay
  // open after a sell-out in case seats come back; the front still reads at the snapshot's pace.
  const paused = { ...open, state: 'paused', retry_after_s: 5, read_within_s: 49 };
  assert.equal(nextReadS(paused, 400000, null), 49, 'paused, far back: the crowd\'s spacing');
  assert.equal(nextReadS(paused, 150, null), 5, 'paused, near the front: the snapshot\'s pace');
  const soldOut = { ...open, state: 'sold_out', retry_after_s: 10, read_within_s: 49 };
  assert.equal(nextReadS(soldOut, 400000, null), 49, 'sold out, far back: the crowd\'s spacing');
  assert.equal(nextReadS(soldOut, 150, null), 10, 'sold out, near the front: the snapshot\'s pace');
  assert.equal(nextReadS(soldOut, undefined, null), 10, 'no place known: the snapshot\'s pace');
  // Offers resuming at 15,000 a minute reach 4,700 ahead within 18 s: it reads within 9 s.
  assert.equal(nextReadS({ ...paused, rate_per_min: 15000 }, 4700, null), 9, 'half the soonest once offers resume');
  // The cap full and the wait not known yet: 3,000 ahead at 150 a second come no sooner than
  // 20 s, so the page reads again within 10 s and hears its wait once it is known.
  const filling = { ...open, read_within_s: 49, cap: { size: 1500, free: 0, offer_rate_per_min: 9000, held_s: null } };
  assert.equal(nextReadS(filling, 3000, null), 10, 'half the soonest by the rate');
  assert.equal(nextReadS({ ...filling, cap: { ...filling.cap, offer_rate_per_min: 0 } }, 3000, null), 32, 'offers held: the place');
});

test('before the opening, the page reads again a second past it', async () => {
  // Offers start at the opening and last only the offer's seconds: a pre-queue page that read
  // ten seconds late would spend half its offer not knowing of it.
  const { nextReadS } = await import('../../static/queue-snapshot.js');
  const pre = { state: 'pre_queue', opened: false, retry_after_s: 10, opens_at: '2026-12-03T18:00:00Z' };
  const opens = Date.parse(pre.opens_at);
  assert.equal(nextReadS(pre, undefined, null, opens - 60_000), 10, 'a minute before: the usual interval');
  assert.equal(nextReadS(pre, undefined, null, opens - 3_400), 4, 'a second past the opening');
  assert.equal(nextReadS(pre, undefined, null, opens + 500), 1, 'opened by the clock, not yet in the snapshot');
  assert.equal(nextReadS(pre, undefined, null, Number.NaN), 10, 'no Date header: the usual interval');
});

test('a large pre-queue wakes over the opening spread, once, at the moment its ticket gives', async () => {
  // 50,000 in the pre-queue at 10,000 reads a second: each page wakes at its own moment in the
  // five seconds after the opening rather than all in the one second after it.
  const { nextReadS, openingShare } = await import('../../static/queue-snapshot.js');
  const pre = {
    state: 'pre_queue',
    opened: false,
    retry_after_s: 10,
    read_within_s: 60,
    opening_spread_s: 5,
    opens_at: '2026-12-03T18:00:00Z',
  };
  const opens = Date.parse(pre.opens_at);
  assert.equal(nextReadS(pre, undefined, null, opens - 3_400, 0), 4, 'the front of the spread');
  assert.equal(nextReadS(pre, undefined, null, opens - 3_400, 0.5), 6, 'its middle');
  assert.equal(nextReadS(pre, undefined, null, opens - 3_400, 0.99), 8, 'its end');
  assert.equal(nextReadS(pre, undefined, null, opens - 3_400), 4, 'no share: a second past the opening');
  // Before it, the snapshot's pace whatever the crowd: the opening may be brought forward.
  assert.equal(nextReadS(pre, undefined, null, opens - 300_000, 0.5), 10, 'the snapshot\'s pace');
  // Told "pre-queue" once the opening has passed (a tick behind, or a cached copy): again in a
  // second, not a second moment later.
  assert.equal(nextReadS(pre, undefined, null, opens + 4_000, 0.99), 1, 'the moment is waited once');
  // The page's share is the one the server's status answers give its ticket (opening.rs).
  assert.equal(await openingShare('t-1'), 0.27700401574000877);
});
