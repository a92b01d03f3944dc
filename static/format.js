// Formatting helpers shared by the waiting room and the dashboard, in the buyer's locale
// (Intl). Durations come from the server in seconds; we never read the device clock for
// deadlines.

import { locale, t } from './i18n.js';

const unit = (name) => new Intl.NumberFormat(locale, { style: 'unit', unit: name, unitDisplay: 'short' });
const MINUTES = unit('minute');
const HOURS = unit('hour');

/** "4 min", "under a minute", "2 h 10 min" (in the buyer's language). */
export function humanDuration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return t('wait.underMinute');
  const m = Math.round(s / 60);
  if (m < 60) return MINUTES.format(m);
  const h = Math.floor(m / 60);
  const rest = m % 60;
  return rest ? `${HOURS.format(h)} ${MINUTES.format(rest)}` : HOURS.format(h);
}

/** Minutes and seconds left in words, for announcements: "4 min", "30 s". */
export function spokenLeft(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return unit('second').format(s);
  return MINUTES.format(Math.round(s / 60));
}

/**
 * A wait range for people: "3–5 min". The status endpoint may send a range
 * (as [low, high] or {low, high} / {min, max}); the WebSocket only an estimate,
 * which we widen by a quarter on each side because estimates are never exact.
 */
export function waitRange(estimate, range) {
  let lo = null;
  let hi = null;
  if (Array.isArray(range) && range.length === 2) [lo, hi] = range;
  else if (range && typeof range === 'object') {
    lo = range.low ?? range.min ?? range.from ?? null;
    hi = range.high ?? range.max ?? range.to ?? null;
  }
  if ((lo === null || hi === null) && typeof estimate === 'number') {
    lo = estimate * 0.75;
    hi = estimate * 1.25;
  }
  if (typeof lo !== 'number' || typeof hi !== 'number') return null;
  if (hi < 60) return t('wait.underMinute');
  const loM = Math.max(1, Math.floor(lo / 60));
  const hiM = Math.max(loM, Math.ceil(hi / 60));
  if (hiM >= 120) return t('wait.to', { from: humanDuration(lo), to: humanDuration(hi) });
  return loM === hiM ? t('wait.about', { duration: MINUTES.format(loM) }) : MINUTES.formatRange(loM, hiM);
}

/** "4:07" or "1:02:09" for countdowns. */
export function clock(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

export function money(cents, currency = 'USD') {
  try {
    return new Intl.NumberFormat(locale, { style: 'currency', currency }).format(cents / 100);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency}`;
  }
}

/** English only: kept for texts not yet in the dictionaries; new texts use counted(). */
export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

/** "3 seats", "3 Plätze": a counted text of the dictionary ({one, other} by the plural rules). */
export function counted(key, n) {
  return t(key, { n });
}

/**
 * A deadline counted on the monotonic clock from a server-given number of seconds,
 * so a wrong or changed phone clock cannot shorten or lengthen it.
 */
export class Deadline {
  constructor(seconds) {
    this.end = performance.now() + seconds * 1000;
  }
  remaining() {
    return Math.max(0, (this.end - performance.now()) / 1000);
  }
}

/** A human date in the reader's own time zone and locale. */
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(locale, { dateStyle: 'medium', timeStyle: 'short' });
}
