// The events card and the new-event form. The list is the organizer API's (GET
// /api/admin/events); where a gateway does not offer it, the events this tab created or
// opened are listed instead, each with its state from the public event summary.

import { request } from './api.js';
import { messageFor } from './messages.js';
import { t } from './i18n.js';
import { $ } from './view.js';
import { call, eventPath, fieldError, problemText } from './admin-call.js';
import { parseSeatList, readSeatFile, sendSeatList } from './admin-seat-list.js';

const SEEN_KEY = 'floodgate:organizer-events';
const ID = /^[A-Za-z0-9._-]{1,64}$/;
const SECTION = /^[A-Za-z0-9._-]{1,40}$/;

let open = () => {};

function remembered() {
  try {
    return JSON.parse(sessionStorage.getItem(SEEN_KEY) || '[]');
  } catch {
    return [];
  }
}

/** Adds an event to the ones this tab knows of. */
export function remember(event) {
  const seen = remembered().filter((e) => e !== event);
  sessionStorage.setItem(SEEN_KEY, JSON.stringify([event, ...seen].slice(0, 20)));
}

async function serverList() {
  try {
    const body = await call('GET', '/api/admin/events');
    const list = Array.isArray(body) ? body : body?.events;
    return Array.isArray(list) ? list : null;
  } catch (err) {
    if (err.status === 404 || err.status === 405) return null;
    throw err;
  }
}

async function summaries(ids) {
  const read = async (id) => {
    try {
      return (await request('GET', `/api/events/${encodeURIComponent(id)}`)).body;
    } catch {
      return null;
    }
  };
  return (await Promise.all(ids.map(read))).filter(Boolean);
}

const stateOf = (e) => e.state || e.status || e.queue?.state || '';

/** Draws the events list; `current` is marked. */
export async function refreshEvents(current) {
  const box = $('events');
  let list;
  let fallback = false;
  try {
    list = await serverList();
  } catch (err) {
    box.textContent = messageFor(err.code);
    return;
  }
  if (!list) {
    fallback = true;
    list = await summaries(remembered());
  }
  if (!list.length) {
    box.replaceChildren(Object.assign(document.createElement('p'), { className: 'muted', textContent: t('admin.noEvents') }));
    return;
  }
  const table = document.createElement('table');
  table.className = 'list';
  const head = table.createTHead().insertRow();
  for (const label of ['admin.eventId', 'admin.name', 'admin.state', 'admin.opens']) {
    head.append(Object.assign(document.createElement('th'), { textContent: t(label), scope: 'col' }));
  }
  const body = table.createTBody();
  for (const e of list) {
    const id = e.event || e.event_id;
    const tr = body.insertRow();
    tr.dataset.event = id;
    const cell = tr.insertCell();
    const button = Object.assign(document.createElement('button'), { type: 'button', className: 'button link', textContent: id });
    if (id === current) button.setAttribute('aria-current', 'true');
    button.addEventListener('click', () => open(id));
    cell.append(button);
    tr.insertCell().textContent = e.name || '';
    tr.insertCell().textContent = stateOf(e) ? t(`admin.stateName.${stateOf(e)}`) : '';
    tr.insertCell().textContent = e.opens_at ? new Date(e.opens_at).toLocaleString() : '';
  }
  const parts = [table];
  if (fallback) parts.push(Object.assign(document.createElement('p'), { className: 'muted small', textContent: t('admin.listFallback') }));
  box.replaceChildren(...parts);
}

const FIELDS = ['new-event', 'new-name', 'new-opens', 'new-section', 'new-rows', 'new-per-row', 'new-price', 'new-seat-list'];

/** The pasted seat list, when there is one: it replaces the generated rows. */
const seatList = () => $('new-seat-list').value.trim();

/** Checks the form before anything is sent: each problem is shown under its field. */
function validate() {
  const v = (id) => $(id).value.trim();
  const errors = {};
  if (!ID.test(v('new-event'))) errors['new-event'] = t('admin.err.id');
  if (!v('new-name') || v('new-name').length > 200) errors['new-name'] = t('admin.err.name');
  if (v('new-opens') && Number.isNaN(new Date(v('new-opens')).getTime())) errors['new-opens'] = t('admin.err.time');
  if (seatList()) {
    const list = parseSeatList(seatList());
    if (list.error) errors['new-seat-list'] = list.error;
  } else {
    if (!SECTION.test(v('new-section'))) errors['new-section'] = t('admin.err.section');
    const whole = (id, min) => /^\d+$/.test(v(id)) && Number(v(id)) >= min;
    if (!whole('new-rows', 1)) errors['new-rows'] = t('admin.err.whole', { min: 1 });
    if (!whole('new-per-row', 1)) errors['new-per-row'] = t('admin.err.whole', { min: 1 });
    if (!whole('new-price', 0)) errors['new-price'] = t('admin.err.whole', { min: 0 });
  }
  for (const id of FIELDS) fieldError(`err-${id}`, errors[id] || '');
  const first = FIELDS.find((id) => errors[id]);
  if (first) $(first).focus();
  return !first;
}

/** Where an API refusal belongs on the form. */
function fieldOf(err, seats) {
  if (err.code === 'event_exists') return 'new-event';
  const field = err.problem?.field;
  const map = { event: 'new-event', name: 'new-name', opens_at: 'new-opens', rows: 'new-rows', per_row: 'new-per-row', price_cents: 'new-price', section: 'new-section' };
  if (field && map[field]) return map[field];
  const detail = String(err.problem?.detail || '');
  if (/event id/.test(detail)) return 'new-event';
  if (/^name/.test(detail)) return 'new-name';
  if (/opens_at/.test(detail)) return 'new-opens';
  return seats ? 'new-rows' : 'new-name';
}

async function create(e) {
  e.preventDefault();
  if (!validate()) return;
  const v = (id) => $(id).value.trim();
  const event = v('new-event');
  const status = $('create-status');
  const body = { event, name: v('new-name') };
  if (v('new-opens')) body.opens_at = new Date(v('new-opens')).toISOString();
  status.textContent = t('admin.creating');
  try {
    await call('POST', '/api/admin/events', body);
  } catch (err) {
    status.textContent = '';
    const field = fieldOf(err, false);
    fieldError(`err-${field}`, problemText(err));
    $(field).focus();
    return;
  }
  remember(event);
  const post = (body) => call('POST', eventPath(event, '/seats'), body);
  const list = seatList() ? parseSeatList(seatList()).seats : null;
  try {
    let n;
    if (list) {
      n = await sendSeatList(post, list);
    } else {
      const generate = { section: v('new-section'), rows: Number(v('new-rows')), per_row: Number(v('new-per-row')), price_cents: Number(v('new-price')) };
      n = (await post({ generate }))?.total ?? generate.rows * generate.per_row;
    }
    status.textContent = t('admin.created', { event, n });
  } catch (err) {
    status.textContent = t('admin.createdNoSeats', { event });
    const field = list ? 'new-seat-list' : fieldOf(err, true);
    fieldError(`err-${field}`, problemText(err));
  }
  await open(event);
}

/** Wires the form; `opener(event)` switches the dashboard to an event. */
export function mountEvents(opener) {
  open = opener;
  $('create-form').addEventListener('submit', create);
  $('new-seat-file').addEventListener('change', () => readSeatFile($('new-seat-file'), $('new-seat-list')));
}
