// The event's name and timings, changeable until its queue opens: the form is filled from the
// event as the organizer set it (`GET /api/admin/events/{event}`, read once by the dashboard),
// checked before it is sent, and only what the organizer changed is sent. Once the queue has
// opened the gateway refuses (409 `event_opened`) and the card says so plainly.

import { t } from './i18n.js';
import { $, setText } from './view.js';
import { call, eventPath, fieldError, problemText } from './admin-call.js';
import { viewOnly } from './admin-controls.js';
import { localValue } from './admin-codes.js';

/** Form field → API field. */
const FIELDS = [
  ['tm-name', 'name'],
  ['tm-opens', 'opens_at'],
  ['tm-hold-ttl', 'hold_ttl_s'],
  ['tm-max-hold', 'max_hold_s'],
  ['tm-max-seats', 'max_seats_per_hold'],
  ['tm-resolve', 'resolve_s'],
  ['tm-abandon', 'abandon_s'],
];

let event = null;
/** The values the form was filled with, so only changes are sent. */
let shown = {};

function opened(yes) {
  $('timings-opened').hidden = !yes;
}

/** Fills the form from the event as stored (a change answers with it too). */
function fill(stored) {
  const values = Object.fromEntries(FIELDS.slice(2).map(([id, name]) => [id, String(stored[name] ?? '')]));
  values['tm-name'] = stored.name ?? '';
  values['tm-opens'] = stored.opens_at ? localValue(stored.opens_at) : '';
  for (const [id, value] of Object.entries(values)) {
    $(id).value = value;
    // As the field holds it: a time on the whole minute reads back without its seconds.
    shown[id] = $(id).value;
  }
  if (stored.opens_at) opened(Date.parse(stored.opens_at) <= Date.now());
}

/** The event as stored, read by the dashboard when it switched to it. */
export function adoptTimings(stored) {
  if (stored.event === event) fill(stored);
}

/** The change to send, or the errors per field. */
function read() {
  const errors = {};
  const body = {};
  const v = (id) => $(id).value.trim();
  const changed = (id) => v(id) !== (shown[id] ?? '');
  if (changed('tm-name')) {
    if (!v('tm-name') || [...v('tm-name')].length > 200) errors['tm-name'] = t('admin.err.name');
    else body.name = v('tm-name');
  }
  if (changed('tm-opens')) {
    const at = new Date(v('tm-opens'));
    if (!v('tm-opens') || Number.isNaN(at.getTime())) errors['tm-opens'] = t('admin.err.timeNeeded');
    else body.opens_at = at.toISOString();
  }
  for (const [id, name] of FIELDS.slice(2)) {
    if (!v(id) || !changed(id)) continue;
    if (!/^\d+$/.test(v(id)) || Number(v(id)) < 1) errors[id] = t('admin.err.whole', { min: 1 });
    else body[name] = Number(v(id));
  }
  return { errors, body };
}

/** Where a refusal belongs: the field it names, else the first field sent. */
function fieldOf(err, body) {
  const named = err.problem?.field || String(err.problem?.detail || '').match(/^([a-z_]+)/)?.[1];
  const hit = FIELDS.find(([, name]) => name === named);
  if (hit) return hit[0];
  const sent = FIELDS.find(([, name]) => name in body);
  return sent ? sent[0] : 'tm-name';
}

async function save(e) {
  e.preventDefault();
  const { errors, body } = read();
  for (const [id] of FIELDS) fieldError(`err-${id}`, errors[id] || '');
  const first = FIELDS.find(([id]) => errors[id]);
  if (first) {
    setText('timings-status', '');
    $(first[0]).focus();
    return;
  }
  if (!Object.keys(body).length) {
    setText('timings-status', t('admin.nothingChanged'));
    return;
  }
  setText('timings-status', t('admin.applying'));
  try {
    const answer = await call('PATCH', eventPath(event), body);
    fill(answer);
    setText('timings-status', t('admin.timingsDone'));
  } catch (err) {
    if (viewOnly(err)) {
      setText('timings-status', t('admin.viewOnly'));
      return;
    }
    if (err.code === 'event_opened') {
      opened(true);
      setText('timings-status', t('admin.timingsOpened'));
      return;
    }
    setText('timings-status', '');
    const id = fieldOf(err, body);
    fieldError(`err-${id}`, problemText(err));
    $(id).focus();
  }
}

/** Switches the card to `next` (or none). */
export function showTimingsOf(next) {
  if (next !== event) {
    shown = {};
    for (const [id] of FIELDS) {
      $(id).value = '';
      fieldError(`err-${id}`, '');
    }
    setText('timings-status', '');
    opened(false);
  }
  event = next;
}

export function mountTimings() {
  $('timings-form').addEventListener('submit', save);
}
