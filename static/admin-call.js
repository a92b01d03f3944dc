// The organizer's session on the dashboard: the key (sessionStorage: this tab only), calls
// to the organizer API with it, and API errors shown next to the form field they name.

import { request } from './api.js';
import { messageFor } from './messages.js';
import { t } from './i18n.js';
import { $ } from './view.js';

const KEY_NAME = 'floodgate:organizer-key';

export const key = () => sessionStorage.getItem(KEY_NAME);
export const keepKey = (value) => sessionStorage.setItem(KEY_NAME, value);
export const forgetKey = () => sessionStorage.removeItem(KEY_NAME);

let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/** An organizer call; a refused key signs the organizer out. Returns the body. */
export async function call(method, path, body) {
  try {
    return (await request(method, path, { token: key(), body })).body;
  } catch (err) {
    if (err.code === 'unauthorized' || err.status === 401) onUnauthorized(messageFor('unauthorized'));
    throw err;
  }
}

/** The path of one event's organizer routes. */
export const eventPath = (event, suffix = '') => `/api/admin/events/${encodeURIComponent(event)}${suffix}`;

/** Sets (or clears, with '') the error shown under a field, and marks the field invalid. */
export function fieldError(errorId, text) {
  const el = $(errorId);
  if (!el) return;
  el.textContent = text;
  const input = document.querySelector(`[aria-describedby~="${errorId}"]`);
  if (input) {
    if (text) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

/** What the API said, in the organizer's language: the field's own text where it names one. */
export function problemText(err) {
  if (err.code === 'out_of_range' && err.problem?.field) {
    return t('admin.err.range', { field: err.problem.field, max: err.problem.max ?? '' });
  }
  if (err.code === 'bad_request' && err.problem?.detail) return err.problem.detail;
  return messageFor(err.code);
}
