// Page benchmark (not a test): the seat page of a 50,000-seat stadium against the same page
// at 300 seats, in headless Chromium against a running gateway (FLOODGATE_URL and
// FLOODGATE_ORGANIZER_KEY, as for the page tests). For each venue it reports
//   - overview: from claiming the turn to the seat page showing its sections (or, for a venue of
//     one section, its map),
//   - first drawn section: from asking for the farthest section to its seats drawn on the canvas,
//   - interactive: from then to the canvas answering a key press (the focus moves and is said),
//   - bytes for the first view: every seat-page answer until the section is drawn,
//   - bytes for one update: the `?since=` answer after another buyer holds four seats, next to
//     what the whole map (`GET …/seats`) weighs.
// Run: FLOODGATE_URL=… FLOODGATE_ORGANIZER_KEY=… node tests/pages/bench/stadium.js
// (or `bash tests/pages/bench/run.sh`, which starts a gateway). Writes
// tests/pages/reports/stadium-bench.txt.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const h = require('../harness');

const RUNS = Number(process.env.BENCH_RUNS || 3);

async function venue(kind) {
  if (kind === 'small') return h.createEvent('bench-small', { rows: 15, perRow: 20, max_seats_per_hold: 4 });
  const event = await h.createEvent('bench-stadium', { rows: 0, max_seats_per_hold: 4 });
  for (let n = 0; n < 20; n += 1) {
    await h.organizer('POST', `/api/admin/events/${event}/seats`, { generate: { section: String(101 + n), rows: 49, per_row: 50, price_cents: 3000 } });
  }
  const floor = Array.from({ length: 1000 }, (_, i) => ({ seat_id: `FLOOR-${i + 1}`, section: 'Floor', price_cents: 2500 }));
  await h.organizer('POST', `/api/admin/events/${event}/seats`, { seats: floor });
  return event;
}

async function once(browser, event, kind, run) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  const bodies = [];
  page.on('response', async (r) => {
    if (!r.url().includes(`/api/events/${event}`) || r.request().method() !== 'GET') return;
    try {
      bodies.push({ url: r.url(), bytes: (await r.body()).length, at: Date.now() });
    } catch { /* a redirect or an aborted read carries no body */ }
  });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'offered');
  bodies.length = 0;
  const t0 = Date.now();
  await page.click('#claim');
  await h.waitForView(page, 'seats');
  let tOverview;
  let tAsked;
  if (kind === 'small') {
    await page.waitForSelector('#seat-map canvas');
    tOverview = Date.now();
    tAsked = t0;
  } else {
    await page.waitForSelector('#sections-list button[data-section="120"]');
    tOverview = Date.now();
    tAsked = Date.now();
    await page.click('#sections-list button[data-section="120"]');
    await page.waitForSelector('#seat-map canvas[data-section="120"]');
  }
  // Drawn: the canvas has painted pixels (not only been inserted).
  await page.waitForFunction(() => {
    const c = document.querySelector('#seat-map canvas');
    if (!c || !c.width) return false;
    const data = c.getContext('2d').getImageData(0, 0, Math.min(c.width, 200), Math.min(c.height, 60)).data;
    for (let i = 3; i < data.length; i += 4) if (data[i]) return true;
    return false;
  }, null, { polling: 'raf' });
  const tDrawn = Date.now();
  await page.focus('#seat-map canvas');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => /seat 2,/.test(document.querySelector('.seat-focus')?.textContent || ''), null, { polling: 'raf' });
  const tInteractive = Date.now();
  const firstView = bodies.filter((b) => b.at <= tInteractive).reduce((n, b) => n + b.bytes, 0);

  // One update: another buyer holds four seats of the open section; the next `?since=` names them.
  const row = kind === 'small' ? 'A-O' : '120-W';
  const seats = [1, 2, 3, 4].map((n) => `${row}-${4 * run + n}`);
  const marker = bodies.length;
  await h.holdByApi(event, seats);
  let update = null;
  for (let i = 0; i < 200 && !update; i += 1) {
    update = bodies.slice(marker).find((b) => /seats\?since=/.test(b.url) && b.bytes > 40);
    if (!update) await h.sleep(100);
  }
  await context.close();
  return {
    overview: tOverview - t0,
    drawn: tDrawn - tAsked,
    interactive: tInteractive - tDrawn,
    firstView,
    update: update ? update.bytes : NaN,
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main() {
  const browser = await h.launch();
  const lines = [];
  const rows = [];
  try {
    for (const kind of ['small', 'stadium']) {
      const event = await venue(kind);
      const wholeBytes = Buffer.byteLength(JSON.stringify((await h.api('GET', `/api/events/${event}/seats`)).body));
      const runs = [];
      for (let i = 0; i < RUNS; i += 1) runs.push(await once(browser, event, kind, i));
      const pick = (k) => median(runs.map((r) => r[k]));
      rows.push({
        kind: kind === 'small' ? '300 seats (1 section)' : '50,000 seats (21 sections)',
        overview: pick('overview'), drawn: pick('drawn'), interactive: pick('interactive'),
        firstView: pick('firstView'), update: pick('update'), wholeBytes,
      });
    }
  } finally {
    await browser.close();
  }
  const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
  lines.push(`Seat page benchmark (median of ${RUNS} runs each; headless Chromium, gateway at ${h.BASE})`);
  lines.push(`taken ${new Date().toISOString()}${process.env.BENCH_GATEWAY ? `; gateway: ${process.env.BENCH_GATEWAY}` : ''}`);
  lines.push('');
  lines.push('venue                        overview  first section drawn  interactive  first view  one update (?since=)  whole map (GET …/seats)');
  for (const r of rows) {
    lines.push(`${r.kind.padEnd(28)} ${`${r.overview} ms`.padStart(8)}  ${`${r.drawn} ms`.padStart(19)}  ${`${r.interactive} ms`.padStart(11)}  ${kb(r.firstView).padStart(10)}  ${kb(r.update).padStart(20)}  ${kb(r.wholeBytes).padStart(23)}`);
  }
  lines.push('');
  lines.push('overview: claim → sections listed (the 300-seat venue opens its one section at once: claim → map).');
  lines.push('first section drawn: asking for the farthest section → its canvas painted (300 seats: claim → painted).');
  lines.push('interactive: painted → a key press moves the focus and the page says the new seat.');
  lines.push('first view: bytes of every event and seat answer up to interactive; one update: the ?since= answer');
  lines.push('naming four seats held by another buyer (the page before this asked for the whole map instead).');
  const out = lines.join('\n') + '\n';
  process.stdout.write(out);
  const file = path.join(__dirname, '..', 'reports', 'stadium-bench.txt');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, out);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
