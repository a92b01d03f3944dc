// The outcome pages: a confirmed order (with its receipt link) and a receipt link opened
// later, which reads the hold and its order with the receipt key alone.

import { request, sleep } from './api.js';
import { messageFor, holdEnding } from './messages.js';
import { t } from './i18n.js';
import { money } from './format.js';
import { $, show, setText, fillSeatList } from './view.js';

/** Hold and order reads: the receipt key outlives the session (which ends at confirmation). */
export function readAuth(token, receipt) {
  return receipt ? { headers: { 'Floodgate-Receipt': receipt } } : { token };
}

export async function renderConfirmed(event, hold, receipt, auth, price) {
  let order = null;
  if (hold.order_id) {
    try {
      order = (await request('GET', `/api/orders/${encodeURIComponent(hold.order_id)}`, auth)).body;
    } catch {
      order = null;
    }
  }
  setText('order-id', hold.order_id || '');
  fillSeatList('order-seats', order?.seats || hold.seats || [], price);
  setText('order-total', order && typeof order.total_cents === 'number' ? price(order.total_cents) : '');
  const link = $('receipt-link');
  if (receipt) {
    // In the fragment, which the browser never sends: the key stays out of requests, logs and
    // referrers (the gateway refuses a `receipt` query).
    link.href = `/events/${encodeURIComponent(event)}#hold=${encodeURIComponent(hold.hold_id)}&receipt=${encodeURIComponent(receipt)}`;
    link.parentElement.hidden = false;
    try {
      localStorage.setItem(`floodgate:${event}:lastReceipt`, JSON.stringify(link.getAttribute('href')));
    } catch {
      // Storage unavailable: the link on screen still works.
    }
  } else {
    link.parentElement.hidden = true;
  }
  show('confirmed');
}

/** A receipt link opened later: read the hold and its order with the receipt key only. */
export async function showReceipt(holdId, receipt) {
  const event = location.pathname.match(/^\/events\/([^/]+)/)?.[1] || 'demo';
  const auth = { headers: { 'Floodgate-Receipt': receipt } };
  for (;;) {
    let hold;
    try {
      hold = (await request('GET', `/api/holds/${encodeURIComponent(holdId)}`, auth)).body;
    } catch (err) {
      setText('fatal-body', err.code === 'not_found' || err.status === 401 ? t('fatal.badReceipt') : messageFor(err.code));
      show('fatal');
      return;
    }
    if (hold.state === 'confirmed') {
      await renderConfirmed(event, hold, receipt, auth, (c) => money(c, 'USD'));
      return;
    }
    if (hold.state === 'held') {
      setText('failed-title', t('failed.notPaid'));
      setText('failed-body', t('failed.notPaidBody'));
      show('failed');
      return;
    }
    if (hold.state === 'paying') {
      show('paying');
      await sleep(2000);
      continue;
    }
    const ending = holdEnding(hold.state);
    setText('failed-title', ending.title);
    setText('failed-body', ending.body);
    show('failed');
    return;
  }
}
