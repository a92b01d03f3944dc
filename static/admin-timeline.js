// The sale since opening, minute by minute (joins, offers, claims, holds, sales), and when the
// seats will run out at the current pace, from `GET …/timeline` every 15 s. The chart has a
// legend and, for screen readers, a table of the last minutes; the forecast is a sentence.
// A gateway without the route (404) keeps the dashboard's own chart of the last 10 minutes.

import { drawChart } from './chart.js';
import { t } from './i18n.js';
import { $, setText } from './view.js';
import { call, eventPath } from './admin-call.js';

export const TIMELINE_MS = 15000;
/** Minutes listed in the table that stands in for the chart. */
const TABLE_MINUTES = 10;

/** The series drawn, in legend order; colours readable as text on white. */
export const SERIES = [
  { name: 'joins', color: '#6b3fa0' },
  { name: 'offers', color: '#2457c5' },
  { name: 'claims', color: '#1d7a4d' },
  { name: 'holds', color: '#8a5a00' },
  { name: 'sales', color: '#b3261e' },
];
const TABLE_COLUMNS = ['joins', 'offers', 'claims', 'lapsed', 'holds', 'sales'];

let event = null;
let last = null;
/** Whether the gateway answers the route: until it does, the stats chart is drawn instead. */
let available = false;
let timer = null;

export const timelineShown = () => available && last !== null;

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** The legend under the chart: the timeline's five series, or the stats chart's two. */
export function legend(series) {
  $('chart-legend').replaceChildren(...series.map((s) => {
    const span = el('span', { textContent: t(s.label) });
    span.style.color = s.color;
    span.dataset.series = s.name;
    return span;
  }));
}

function duration(seconds) {
  const minutes = Math.round(seconds / 60);
  if (seconds < 60) return t('admin.forecast.underMinute');
  if (minutes < 120) return t('admin.forecast.minutes', { n: minutes });
  return t('admin.forecast.hours', { n: Math.round(minutes / 60) });
}

/** The forecast in words. */
export function forecastText(f) {
  if (!f) return '';
  const state = String(f.state || '');
  if (state === 'sold_out' || f.seats_left === 0) return t('admin.forecast.soldOut');
  if (state === 'paused') return t('admin.forecast.paused');
  if (state === 'closed') return t('admin.forecast.closed');
  if (['scheduled', 'not_open', 'pre_queue', 'before_opening'].includes(state)) return t('admin.forecast.notOpen');
  if (typeof f.sold_out_in_s === 'number') {
    const about = duration(f.sold_out_in_s);
    const at = f.sold_out_at ? new Date(f.sold_out_at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : '';
    if (typeof f.places_to_sell_out === 'number') {
      return t('admin.forecast.pacePlace', { duration: about, n: Math.round(f.places_to_sell_out), at });
    }
    return t('admin.forecast.pace', { duration: about, at });
  }
  return t('admin.forecast.unknown', { n: Number(f.seats_left) || 0 });
}

function table(minutes) {
  const rows = minutes.slice(-TABLE_MINUTES);
  const caption = el('caption', { textContent: t('admin.timelineTable', { n: rows.length }) });
  const tableEl = el('table', { className: 'visually-hidden', id: 'timeline-table' }, caption);
  const head = tableEl.createTHead().insertRow();
  head.append(el('th', { scope: 'col', textContent: t('admin.minute') }));
  for (const name of TABLE_COLUMNS) head.append(el('th', { scope: 'col', textContent: t(`admin.series.${name}`) }));
  const body = tableEl.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    tr.append(el('th', { scope: 'row', textContent: new Date(row.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) }));
    for (const name of TABLE_COLUMNS) tr.insertCell().textContent = (Number(row[name]) || 0).toLocaleString();
  }
  $('chart-table').replaceChildren(tableEl);
}

/** Draws the last answer (also after a resize or a language change). */
export function drawTimeline() {
  if (!timelineShown()) return;
  const minutes = Array.isArray(last.minutes) ? last.minutes : [];
  const serverNow = Date.parse(last.now) || Date.now();
  const nowS = performance.now() / 1000;
  // A minute's count is drawn at the minute's end (or now, for the minute still running).
  const at = (row) => nowS - Math.max(0, serverNow - (Date.parse(row.minute) + 60000)) / 1000;
  const opened = Date.parse(last.opens_at);
  const sinceOpening = Number.isNaN(opened) ? minutes.length * 60 : (serverNow - opened) / 1000;
  const windowS = Math.max(600, Math.ceil(sinceOpening / 60) * 60);
  setText('chart-title', t('admin.chartTimeline'));
  $('chart').setAttribute('aria-label', t('admin.chartTimelineLabel'));
  legend(SERIES.map((s) => ({ ...s, label: `admin.series.${s.name}` })));
  drawChart($('chart'), SERIES.map((s) => ({
    color: s.color,
    points: minutes.map((row) => ({ t: at(row), v: Number(row[s.name]) || 0 })),
  })), { windowS });
  table(minutes);
  const forecast = $('forecast');
  forecast.hidden = false;
  forecast.textContent = forecastText(last.forecast);
}

async function poll() {
  if (!event) return;
  const mine = event;
  try {
    const body = await call('GET', eventPath(mine, '/timeline'));
    if (mine !== event) return;
    available = true;
    last = body;
    drawTimeline();
  } catch (err) {
    if (mine !== event) return;
    // No such route (an older gateway) or not readable now: the stats chart stays.
    if (err.status === 404 || err.status === 405) {
      available = false;
      last = null;
      $('chart-table').replaceChildren();
      $('forecast').hidden = true;
    }
  }
}

/** Starts polling `next`'s timeline (or stops, with none). */
export function showTimelineOf(next) {
  clearInterval(timer);
  timer = null;
  if (next !== event) {
    available = false;
    last = null;
    $('chart-table').replaceChildren();
    $('forecast').hidden = true;
  }
  event = next;
  if (!event) return;
  poll();
  timer = setInterval(poll, TIMELINE_MS);
}
