// The organizer dashboard: asks for the key once (sessionStorage: this tab only), lists the
// events and makes new ones (`admin-events.js`), polls the chosen event's stats and stuck
// payments, draws offers/claims per minute, applies admission controls (with the version the
// page last read, so two organizers cannot silently undo each other), and runs the event's
// webhooks (`admin-hooks.js`), timings (`admin-timings.js`), access and codes
// (`admin-codes.js`), exports (`admin-exports.js`), the sale since opening with its sold-out
// forecast (`admin-timeline.js`) and the team's keys (`admin-keys.js`). Every text goes
// through i18n.

import { messageFor } from './messages.js';
import { drawChart } from './chart.js';
import { t, translatePage, mountSwitcher } from './i18n.js';
import { $, show, say, setText } from './view.js';
import { call as organizerCall, eventPath, forgetKey, keepKey, key, whenUnauthorized } from './admin-call.js';
import { mountEvents, refreshEvents, remember } from './admin-events.js';
import { mountHooks, refreshDeliveries, showHooksOf } from './admin-hooks.js';
import { showStuck } from './admin-stuck.js';
import { adoptControls, adoptLook, mountControls, showControlsOf, viewOnly } from './admin-controls.js';
import { mountKeys, refreshKeys } from './admin-keys.js';
import { adoptPriority, mountCodes, showCodesOf } from './admin-codes.js';
import { mountExports, showExportsOf } from './admin-exports.js';
import { adoptTimings, mountTimings, showTimingsOf } from './admin-timings.js';
import { legend, showTimelineOf, timelineShown } from './admin-timeline.js';

const STATS_MS = 2000;
const STUCK_MS = 5000;
const WINDOW_S = 600;

let event = new URLSearchParams(location.search).get('event') || '';
let samples = [];
let timers = [];
let paused = false;
let closed = false;
let prefilled = false;
/** The admission settings' version as last read, sent back with every change. */
let version = null;
/** Whether the gateway takes `version` on a change (older ones refuse the field). */
let sendsVersion = true;

const call = (method, suffix, body) => organizerCall(method, eventPath(event, suffix), body);
const pollStuck = () => showStuck(call);

function start() {
  stop();
  setText('event-title', event || t('admin.noEventChosen'));
  show('dashboard');
  for (const el of document.querySelectorAll('[data-needs-event]')) el.hidden = !event;
  history.replaceState(null, '', event ? `/admin?event=${encodeURIComponent(event)}` : '/admin');
  refreshEvents(event);
  showHooksOf(event || null);
  showControlsOf(event || null);
  showCodesOf(event || null);
  showExportsOf(event || null);
  showTimingsOf(event || null);
  showTimelineOf(event || null);
  refreshKeys();
  if (!event) return;
  remember(event);
  loadStored();
  pollStats();
  pollStuck();
  timers = [
    setInterval(pollStats, STATS_MS),
    setInterval(pollStuck, STUCK_MS),
    setInterval(refreshDeliveries, STATS_MS),
    setInterval(() => refreshEvents(event), STUCK_MS),
  ];
}

/** The event as the organizer set it, read once for the branding and timings forms. */
async function loadStored() {
  try {
    const stored = await call('GET', '');
    adoptLook(stored);
    adoptTimings(stored);
  } catch {
    // The stats card already says when the event cannot be read.
  }
}

/** Switches the dashboard to another event. */
async function openEvent(next) {
  event = next;
  samples = [];
  prefilled = false;
  version = null;
  closed = false;
  paused = false;
  $('stale').hidden = true;
  setText('control-status', '');
  start();
}

function stop() {
  timers.forEach(clearInterval);
  timers = [];
  showTimelineOf(null);
}

function signOut(message) {
  stop();
  forgetKey();
  $('key').value = '';
  show('key');
  say(message || '');
}

async function pollStats() {
  let stats;
  try {
    stats = await call('GET', '/stats');
  } catch (err) {
    if (err.status !== 401) say(err.code === 'not_found' ? t('admin.noSuchEvent', { event }) : messageFor(err.code), 'warn');
    return;
  }
  say('');
  const q = stats.queue || {};
  setText('q-waiting', fmt(q.waiting));
  setText('q-offered', fmt(q.offered));
  setText('q-active', fmt(q.active));
  setText('q-admitted', fmt(q.admitted_total));
  setText('q-outflow', fmt(q.outflow_per_min));
  setText('q-pressure', pressureText(stats.backpressure));
  const now = performance.now() / 1000;
  samples.push({ t: now, admitted: Number(q.admitted_total) || 0, outflow: Number(q.outflow_per_min) || 0 });
  samples = samples.filter((s) => s.t >= now - WINDOW_S - 60);
  const claims = claimsPerMinute(samples);
  setText('q-claims', claims === null ? '–' : fmt(Math.round(claims)));
  seats(stats.seats || {});
  kv('holds-kv', stats.holds || {});
  kv('payments-kv', stats.payments || {});
  setText('payments-title', t(stats.payment_provider === 'simulated' ? 'admin.paymentsSimulated' : 'admin.payments'));
  if (stats.admission) adopt(stats.admission);
  chart(stats.timeline);
  const u = $('updated');
  u.hidden = false;
  u.textContent = t('admin.updated', { time: new Date().toLocaleTimeString() });
}

/**
 * The chart: per minute since opening when the gateway reports a timeline (`stats.timeline`,
 * [{minute, offers, claims}]); else the page's own samples of the last 10 minutes.
 */
function chart(timeline) {
  // The timeline route's chart (five series since opening) is drawn by admin-timeline.js.
  if (timelineShown()) return;
  statsLegend();
  if (Array.isArray(timeline) && timeline.length) {
    const now = performance.now() / 1000;
    const last = Date.parse(timeline[timeline.length - 1].minute) / 1000;
    const at = (row) => now - (last - Date.parse(row.minute) / 1000);
    const windowS = Math.max(600, (timeline.length + 1) * 60);
    setText('chart-title', t('admin.chartSinceOpening'));
    drawChart($('chart'), [
      { color: '#2457c5', points: timeline.map((row) => ({ t: at(row), v: Number(row.offers) || 0 })) },
      { color: '#1d7a4d', points: timeline.map((row) => ({ t: at(row), v: Number(row.claims) || 0 })) },
    ], { windowS });
    return;
  }
  drawChart($('chart'), [
    { color: '#2457c5', points: samples.map((s) => ({ t: s.t, v: s.outflow })) },
    { color: '#1d7a4d', points: samples.map((s, i) => ({ t: s.t, v: claimsPerMinute(samples.slice(0, i + 1)) ?? 0 })) },
  ], { windowS: WINDOW_S });
}

/** The stats chart's legend: offers and claims. */
function statsLegend() {
  if ($('chart-legend').children.length === 2) return;
  legend([
    { name: 'offers', color: '#2457c5', label: 'admin.offers' },
    { name: 'claims', color: '#1d7a4d', label: 'admin.claimsLegend' },
  ]);
  setText('chart-title', t('admin.chart'));
  $('chart').setAttribute('aria-label', t('admin.chartLabel'));
}

const PRESSURE_REASONS = ['hold_p99', 'admitted_wait', 'database', 'outbox_age'];

/** The share of the configured rate admission uses, and why it is lower. */
function pressureText(p) {
  if (!p || typeof p.share !== 'number') return '–';
  const pct = t('admin.pressure.pct', { n: Math.round(p.share * 100) });
  const why = (p.reasons || []).map((r) => (PRESSURE_REASONS.includes(r) ? t(`admin.pressure.${r}`) : r)).join(', ');
  if (p.share >= 1) return why ? t('admin.pressure.recovering', { pct, why }) : pct;
  if (p.share === 0) return t('admin.pressure.held', { why: why || t('admin.pressure.recoveringWord') });
  return why ? t('admin.pressure.slowedWhy', { pct, why }) : t('admin.pressure.slowed', { pct });
}

/** Claims per minute over the last minute of samples (admitted_total is a counter). */
function claimsPerMinute(list) {
  if (list.length < 2) return null;
  const last = list[list.length - 1];
  const first = list.find((s) => s.t >= last.t - 60) || list[0];
  const dt = last.t - first.t;
  return dt > 0 ? ((last.admitted - first.admitted) / dt) * 60 : null;
}

/** Uses the server's admission settings when stats carries them. */
function adopt(admission) {
  if (!prefilled) {
    if (admission.rate_per_min !== undefined) $('rate').value = admission.rate_per_min;
    if (admission.max_active !== undefined) $('max-active').value = admission.max_active;
    if (admission.offer_s !== undefined) $('offer-s').value = admission.offer_s;
    if (admission.session_s !== undefined) $('session-s').value = admission.session_s;
    prefilled = true;
  }
  if (admission.version !== undefined) version = admission.version;
  if (typeof admission.paused === 'boolean') paused = admission.paused;
  if (typeof admission.closed === 'boolean') closed = closed || admission.closed;
  adoptControls(admission);
  adoptPriority(admission);
  renderState();
}

function renderState() {
  const state = closed ? 'closed' : paused ? 'paused' : 'running';
  const pill = $('state-pill');
  pill.dataset.state = state;
  pill.textContent = t(`admin.stateName.${state}`);
  setText('pause', t(paused ? 'admin.resume' : 'admin.pause'));
  $('pause').disabled = closed;
  $('close').disabled = closed;
}

const SEAT_COLORS = { available: '#2457c5', held: '#f0a500', paying: '#8a5a00', sold: '#1d7a4d' };
function seats(s) {
  kv('seats-kv', s);
  const total = Object.values(s).reduce((a, b) => a + (Number(b) || 0), 0) || 1;
  $('seat-bar').replaceChildren(
    ...Object.entries(s).map(([name, n]) => {
      const span = document.createElement('span');
      span.style.width = `${((Number(n) || 0) / total) * 100}%`;
      span.style.background = SEAT_COLORS[name] || '#c9ced6';
      span.title = `${t(`admin.count.${name}`)}: ${n}`;
      return span;
    }),
  );
}

function kv(id, obj) {
  const entries = Object.entries(obj);
  const dl = $(id);
  if (!entries.length) {
    dl.replaceChildren(Object.assign(document.createElement('dt'), { textContent: t('admin.noneYet') }));
    return;
  }
  dl.replaceChildren(
    ...entries.flatMap(([k, v]) => [
      Object.assign(document.createElement('dt'), { textContent: label(k) }),
      Object.assign(document.createElement('dd'), { textContent: typeof v === 'object' ? JSON.stringify(v) : fmt(v), id: `${id}-${k}` }),
    ]),
  );
}

/** A state or count name from the API, in the organizer's language when it is a known one. */
function label(name) {
  const k = `admin.count.${name}`;
  const text = t(k);
  return text === k ? name.replace(/_/g, ' ') : text;
}

async function applyAdmission(patch, done, statusId = 'control-status') {
  setText(statusId, t('admin.applying'));
  $('stale').hidden = true;
  try {
    let changed;
    try {
      changed = await call('PATCH', '/admission', sendsVersion && version !== null ? { ...patch, version } : patch);
    } catch (err) {
      // A gateway that does not know `version` refuses the field: change without it.
      if (!(err.status === 400 && /version/.test(err.problem?.detail || '') && sendsVersion)) throw err;
      sendsVersion = false;
      changed = await call('PATCH', '/admission', patch);
    }
    if (changed?.version !== undefined) version = changed.version;
    setText(statusId, t('admin.applied', { done }));
    return true;
  } catch (err) {
    if (err.code === 'stale_version') {
      $('stale').hidden = false;
      setText(statusId, statusId === 'control-status' ? '' : t('admin.stale'));
    } else if (viewOnly(err)) {
      setText(statusId, t('admin.viewOnly'));
    } else {
      setText(statusId, messageFor(err.code));
    }
    return false;
  }
}

$('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  keepKey($('key').value.trim());
  say('');
  openEvent($('event').value.trim());
});

$('reload-controls').addEventListener('click', () => {
  prefilled = false;
  $('stale').hidden = true;
  pollStats();
});

$('admission-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const patch = {};
  const fields = [['rate', 'rate_per_min'], ['max-active', 'max_active'], ['offer-s', 'offer_s'], ['session-s', 'session_s']];
  for (const [id, name] of fields) if ($(id).value !== '') patch[name] = Number($(id).value);
  if (!Object.keys(patch).length) return;
  const parts = Object.entries(patch).map(([k, v]) => `${t(`admin.setting.${k}`)} ${v}`).join(', ');
  await applyAdmission(patch, t('admin.set', { parts }));
});

$('pause').addEventListener('click', async () => {
  const next = !paused;
  if (await applyAdmission({ paused: next }, t(next ? 'admin.pausedDone' : 'admin.resumedDone'))) {
    paused = next;
    renderState();
  }
});

$('close').addEventListener('click', async () => {
  if (!confirm(t('admin.closeConfirm', { event }))) return;
  try {
    await call('POST', '/close', {});
    closed = true;
    renderState();
    setText('control-status', t('admin.closedDone'));
  } catch (err) {
    setText('control-status', viewOnly(err) ? t('admin.viewOnly') : messageFor(err.code));
  }
});

$('sign-out').addEventListener('click', () => signOut());

function fmt(v) {
  return typeof v === 'number' ? v.toLocaleString() : v === undefined || v === null ? '–' : String(v);
}

translatePage();
mountSwitcher($('language'));
renderState();
whenUnauthorized(signOut);
mountEvents(openEvent);
mountHooks();
mountControls(applyAdmission);
mountCodes(applyAdmission);
mountExports();
mountTimings();
mountKeys();
$('event').value = event;
if (key()) start();
else show('key');
