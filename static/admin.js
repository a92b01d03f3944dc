// The organizer dashboard: asks for the key once (sessionStorage: this tab only), polls
// stats and stuck payments, draws offers/claims per minute, and applies admission controls.

import { request } from './api.js';
import { messageFor } from './messages.js';
import { drawChart } from './chart.js';
import { $, show, say, setText } from './view.js';

const KEY_NAME = 'floodgate:organizer-key';
const STATS_MS = 2000;
const STUCK_MS = 5000;
const WINDOW_S = 600;

let event = new URLSearchParams(location.search).get('event') || 'demo';
let samples = [];
let timers = [];
let paused = false;
let closed = false;
let prefilled = false;

const key = () => sessionStorage.getItem(KEY_NAME);
const base = () => `/api/admin/events/${encodeURIComponent(event)}`;

async function call(method, suffix, body) {
  try {
    return (await request(method, base() + suffix, { token: key(), body })).body;
  } catch (err) {
    if (err.code === 'unauthorized' || err.status === 401) signOut(messageFor('unauthorized'));
    throw err;
  }
}

function start() {
  stop();
  setText('event-title', event);
  show('dashboard');
  history.replaceState(null, '', `/admin?event=${encodeURIComponent(event)}`);
  pollStats();
  pollStuck();
  timers = [setInterval(pollStats, STATS_MS), setInterval(pollStuck, STUCK_MS)];
}

function stop() {
  timers.forEach(clearInterval);
  timers = [];
}

function signOut(message) {
  stop();
  sessionStorage.removeItem(KEY_NAME);
  $('key').value = '';
  show('key');
  say(message || '');
}

async function pollStats() {
  let stats;
  try {
    stats = await call('GET', '/stats');
  } catch (err) {
    if (err.status !== 401) say(err.code === 'not_found' ? `There is no event "${event}".` : messageFor(err.code), 'warn');
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
  const t = performance.now() / 1000;
  samples.push({ t, admitted: Number(q.admitted_total) || 0, outflow: Number(q.outflow_per_min) || 0 });
  samples = samples.filter((s) => s.t >= t - WINDOW_S - 60);
  const claims = claimsPerMinute(samples);
  setText('q-claims', claims === null ? '–' : fmt(Math.round(claims)));
  seats(stats.seats || {});
  kv('holds-kv', stats.holds || {});
  kv('payments-kv', stats.payments || {});
  $('payments-kv').previousElementSibling.textContent = stats.payment_provider === 'simulated' ? 'Payments by state (simulated: no money taken)' : 'Payments by state';
  if (stats.admission) adopt(stats.admission);
  drawChart($('chart'), [
    { color: '#2457c5', points: samples.map((s) => ({ t: s.t, v: s.outflow })) },
    { color: '#1d7a4d', points: samples.map((s, i) => ({ t: s.t, v: claimsPerMinute(samples.slice(0, i + 1)) ?? 0 })) },
  ], { windowS: WINDOW_S });
  const u = $('updated');
  u.hidden = false;
  u.textContent = `Updated ${new Date().toLocaleTimeString()}`;
}

const PRESSURE_REASONS = {
  hold_p99: 'holds are slow',
  database: 'the database is not answering',
  outbox_age: 'payments are falling behind',
};

/** The share of the configured rate admission uses, and why it is lower. */
function pressureText(p) {
  if (!p || typeof p.share !== 'number') return '–';
  const pct = `${Math.round(p.share * 100)}% of the configured rate`;
  const why = (p.reasons || []).map((r) => PRESSURE_REASONS[r] || r).join(', ');
  if (p.share >= 1) return why ? `${pct} (recovering: ${why})` : pct;
  if (p.share === 0) return `offers held: ${why || 'recovering'}`;
  return `slowed to ${pct}${why ? `: ${why}` : ''}`;
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
    prefilled = true;
  }
  if (typeof admission.paused === 'boolean') paused = admission.paused;
  if (typeof admission.closed === 'boolean') closed = closed || admission.closed;
  renderState();
}

function renderState() {
  const state = closed ? 'closed' : paused ? 'paused' : 'running';
  const pill = $('state-pill');
  pill.dataset.state = state;
  pill.textContent = state;
  setText('pause', paused ? 'Resume' : 'Pause');
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
      span.title = `${name}: ${n}`;
      return span;
    }),
  );
}

function kv(id, obj) {
  const entries = Object.entries(obj);
  const dl = $(id);
  if (!entries.length) {
    dl.replaceChildren(Object.assign(document.createElement('dt'), { textContent: 'none yet' }));
    return;
  }
  dl.replaceChildren(
    ...entries.flatMap(([k, v]) => [
      Object.assign(document.createElement('dt'), { textContent: k.replace(/_/g, ' ') }),
      Object.assign(document.createElement('dd'), { textContent: typeof v === 'object' ? JSON.stringify(v) : fmt(v), id: `${id}-${k}` }),
    ]),
  );
}

/**
 * The columns of the stuck table, in reading order: which payment, whose hold, where it is
 * and since when. (The answer's own key order is alphabetical, which would put the payment id
 * past the first few columns.)
 */
const STUCK_COLUMNS = [
  ['payment_id', 'Payment'],
  ['hold_id', 'Hold'],
  ['state', 'State'],
  ['payment_method', 'Card'],
  ['amount_cents', 'Amount', (v) => (Number(v) / 100).toFixed(2)], // the event's currency is not in the answer
  ['created_at', 'Paying since', (v) => new Date(v).toLocaleTimeString()],
  ['last_error', 'Last error'],
  ['overdue', 'Provider', (v) => (v ? 'Not answering' : 'Waiting')],
];

/**
 * Payments the provider left unanswered long past their abandon time hold their seats in
 * paying until it answers: say so above the table, in words an organizer can act on.
 */
function showOverdue(rows) {
  const n = rows.filter((r) => r.overdue === true).length;
  const box = $('overdue');
  box.hidden = n === 0;
  box.textContent = n === 0 ? '' : `${n} payment${n === 1 ? ' has' : 's have'} had no answer from the payment provider long after the buyer's time ran out. Their seats stay reserved until the provider answers: check the provider's status.`;
}

async function pollStuck() {
  let body;
  try {
    body = await call('GET', '/stuck?older_than_s=60');
  } catch {
    return;
  }
  // The contract lists holds and payment attempts; accept an array or named arrays.
  const rows = Array.isArray(body)
    ? body
    : Object.values(body || {}).flatMap((list) => (Array.isArray(list) ? list : []));
  showOverdue(rows);
  const box = $('stuck');
  if (!rows.length) {
    box.innerHTML = '<p class="muted">Nothing is stuck.</p>';
    return;
  }
  const cols = STUCK_COLUMNS.filter(([key]) => rows.some((r) => r[key] !== undefined && r[key] !== null));
  const table = document.createElement('table');
  table.className = 'stuck';
  const head = table.createTHead().insertRow();
  cols.forEach(([, label]) => head.append(Object.assign(document.createElement('th'), { textContent: label })));
  const tbody = table.createTBody();
  rows.forEach((r) => {
    const tr = tbody.insertRow();
    if (r.overdue === true) tr.className = 'overdue';
    cols.forEach(([key, , show]) => {
      const v = r[key];
      tr.insertCell().textContent = v === undefined || v === null ? '' : show ? show(v) : typeof v === 'object' ? JSON.stringify(v) : String(v);
    });
  });
  box.replaceChildren(table);
}

async function applyAdmission(patch, done) {
  setText('control-status', 'Applying…');
  try {
    await call('PATCH', '/admission', patch);
    setText('control-status', `${done} Every gateway applies it within a second.`);
    return true;
  } catch (err) {
    setText('control-status', messageFor(err.code));
    return false;
  }
}

$('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY_NAME, $('key').value.trim());
  event = $('event').value.trim() || 'demo';
  samples = [];
  prefilled = false;
  say('');
  start();
});

$('admission-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const patch = {};
  if ($('rate').value !== '') patch.rate_per_min = Number($('rate').value);
  if ($('max-active').value !== '') patch.max_active = Number($('max-active').value);
  if (!Object.keys(patch).length) return;
  const parts = Object.entries(patch).map(([k, v]) => `${k.replace(/_/g, ' ')} ${v}`).join(', ');
  await applyAdmission(patch, `Set ${parts}.`);
});

$('pause').addEventListener('click', async () => {
  const next = !paused;
  if (await applyAdmission({ paused: next }, next ? 'Paused: no new offers.' : 'Resumed.')) {
    paused = next;
    renderState();
  }
});

$('close').addEventListener('click', async () => {
  if (!confirm(`Close the queue of ${event}? No one new can join or be offered a turn. Buyers already choosing seats can finish.`)) return;
  try {
    await call('POST', '/close', {});
    closed = true;
    renderState();
    setText('control-status', 'The queue is closed.');
  } catch (err) {
    setText('control-status', messageFor(err.code));
  }
});

$('sign-out').addEventListener('click', () => signOut());

function fmt(v) {
  return typeof v === 'number' ? v.toLocaleString() : v === undefined || v === null ? '–' : String(v);
}

$('event').value = event;
if (key()) start();
else show('key');
