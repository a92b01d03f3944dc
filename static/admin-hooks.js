// The webhooks card: add a receiver (its secret shown once), list the event's webhooks, send a
// test event, and read a webhook's deliveries with each attempt.

import { t } from './i18n.js';
import { $ } from './view.js';
import { call, eventPath, fieldError, problemText } from './admin-call.js';

const KINDS = ['queue.opened', 'queue.paused', 'queue.resumed', 'event.sold_out', 'order.confirmed', 'order.refunded', 'payment.stuck'];

let event = null;
let watching = null;

const path = (suffix = '') => eventPath(event, `/webhooks${suffix}`);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

function kindBoxes() {
  const set = $('hook-kinds');
  for (const kind of KINDS) {
    const input = el('input', { type: 'checkbox', value: kind, checked: kind === 'order.confirmed' });
    set.append(el('label', { className: 'check' }, input, el('span', { textContent: t(`admin.kind.${kind}`) })));
  }
}

async function add(e) {
  e.preventDefault();
  const url = $('hook-url').value.trim();
  const events = [...$('hook-kinds').querySelectorAll('input:checked')].map((i) => i.value);
  const bad = { url: !/^https?:\/\/\S+$/i.test(url) || url.length > 2048, events: !events.length };
  fieldError('err-hook-url', bad.url ? t('admin.err.url') : '');
  fieldError('err-hook-kinds', bad.events ? t('admin.err.kinds') : '');
  if (bad.url || bad.events) return;
  let made;
  try {
    made = await call('POST', path(), { url, events });
  } catch (err) {
    const field = err.problem?.field === 'events' ? 'err-hook-kinds' : 'err-hook-url';
    fieldError(field, err.code === 'webhook_limit' ? t('admin.err.hookLimit', { n: err.problem?.max ?? 10 }) : problemText(err));
    return;
  }
  $('hook-url').value = '';
  const secret = $('hook-secret');
  secret.replaceChildren(t('admin.hookSecret'), ' ', el('code', { textContent: made.secret }));
  secret.hidden = false;
  await refreshHooks();
}

async function test(id) {
  try {
    await call('POST', path(`/${encodeURIComponent(id)}/test`));
  } catch (err) {
    $('deliveries').textContent = problemText(err);
    return;
  }
  watching = id;
  await refreshDeliveries();
}

async function remove(id) {
  if (!confirm(t('admin.hookDeleteConfirm'))) return;
  try {
    await call('DELETE', path(`/${encodeURIComponent(id)}`));
  } catch (err) {
    $('deliveries').textContent = problemText(err);
  }
  if (watching === id) watching = null;
  await refreshHooks();
}

/** Draws the event's webhooks. */
export async function refreshHooks() {
  if (!event) return;
  let body;
  try {
    body = await call('GET', path());
  } catch (err) {
    $('hooks').textContent = problemText(err);
    return;
  }
  const hooks = body?.webhooks || [];
  if (!hooks.length) {
    $('hooks').replaceChildren(el('p', { className: 'muted', textContent: t('admin.noHooks') }));
    $('deliveries').replaceChildren();
    return;
  }
  const list = el('ul', { className: 'hook-list' });
  for (const hook of hooks) {
    const button = (label, action) => el('button', { type: 'button', className: 'button', textContent: t(label), onclick: action });
    list.append(el('li', { id: `hook-${hook.webhook_id}` },
      el('code', { textContent: hook.url }), ' ',
      el('span', { className: 'muted small', textContent: hook.events.map((k) => t(`admin.kind.${k}`)).join(', ') }), ' ',
      button('admin.hookTest', () => test(hook.webhook_id)),
      button('admin.hookDeliveries', () => { watching = hook.webhook_id; refreshDeliveries(); }),
      button('admin.hookDelete', () => remove(hook.webhook_id))));
  }
  $('hooks').replaceChildren(list);
  await refreshDeliveries();
}

/** Draws the deliveries of the webhook being watched, newest first, each attempt a line. */
export async function refreshDeliveries() {
  if (!event || !watching) return;
  let body;
  try {
    body = await call('GET', path(`/${encodeURIComponent(watching)}/deliveries`));
  } catch (err) {
    $('deliveries').textContent = problemText(err);
    return;
  }
  const rows = body?.deliveries || [];
  const caption = el('caption', { textContent: t('admin.deliveriesOf', { id: watching }) });
  const table = el('table', { className: 'list', id: 'delivery-table' }, caption);
  const head = table.createTHead().insertRow();
  for (const label of ['admin.dType', 'admin.dState', 'admin.dAttempts']) head.append(el('th', { scope: 'col', textContent: t(label) }));
  const tbody = table.createTBody();
  for (const d of rows) {
    const tr = tbody.insertRow();
    tr.dataset.state = d.state;
    tr.insertCell().textContent = d.type === 'ping' ? t('admin.kind.ping') : t(`admin.kind.${d.type}`);
    tr.insertCell().textContent = t(`admin.dState.${d.state}`);
    tr.insertCell().textContent = d.attempts.map((a) => t('admin.attempt', {
      at: new Date(a.at).toLocaleTimeString(),
      result: a.status ?? a.error ?? '',
      ms: a.duration_ms,
    })).join(' · ') || t('admin.notYet');
  }
  if (!rows.length) tbody.insertRow().insertCell().textContent = t('admin.noDeliveries');
  $('deliveries').replaceChildren(table);
}

/** Shows the card for `next` (or nothing). */
export function showHooksOf(next) {
  if (event !== next) {
    watching = null;
    $('hook-secret').hidden = true;
    $('deliveries').replaceChildren();
  }
  event = next;
  refreshHooks();
}

export function mountHooks() {
  kindBoxes();
  $('hook-form').addEventListener('submit', add);
}
