// The stuck-payments card: payments paying for more than 60 s, as a table in reading order,
// and a warning above it when the payment provider has left some unanswered for long.

import { t } from './i18n.js';
import { $ } from './view.js';

/**
 * The columns of the stuck table, in reading order: which payment, whose hold, where it is
 * and since when. (The answer's own key order is alphabetical, which would put the payment id
 * past the first few columns.)
 */
const STUCK_COLUMNS = [
  ['payment_id', 'admin.col.payment'],
  ['hold_id', 'admin.col.hold'],
  ['state', 'admin.col.state'],
  ['payment_method', 'admin.col.card'],
  ['amount_cents', 'admin.col.amount', (v) => (Number(v) / 100).toFixed(2)], // the event's currency is not in the answer
  ['created_at', 'admin.col.since', (v) => new Date(v).toLocaleTimeString()],
  ['last_error', 'admin.col.error'],
  ['overdue', 'admin.col.provider', (v) => t(v ? 'admin.notAnswering' : 'admin.waitingWord')],
];

/**
 * Payments the provider left unanswered long past their abandon time hold their seats in
 * paying until it answers: say so above the table, in words an organizer can act on.
 */
function showOverdue(rows) {
  const n = rows.filter((r) => r.overdue === true).length;
  const box = $('overdue');
  box.hidden = n === 0;
  box.textContent = n === 0 ? '' : t('admin.overdue', { n });
}

/** Reads the event's stuck payments with `call` and draws them. */
export async function showStuck(call) {
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
    box.replaceChildren(Object.assign(document.createElement('p'), { className: 'muted', textContent: t('admin.nothingStuck') }));
    return;
  }
  const cols = STUCK_COLUMNS.filter(([key]) => rows.some((r) => r[key] !== undefined && r[key] !== null));
  const table = document.createElement('table');
  table.className = 'stuck';
  const head = table.createTHead().insertRow();
  cols.forEach(([, name]) => head.append(Object.assign(document.createElement('th'), { textContent: t(name), scope: 'col' })));
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
