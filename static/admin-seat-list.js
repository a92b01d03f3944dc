// A venue's own seat list, pasted or read from a file: one seat a line, "seat id, section, row,
// number, price in cents" (a header line naming seat_id is skipped). Checked line by line before
// anything is sent, so a bad line is named rather than half a venue created.

import { t } from './i18n.js';

const SEAT_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** Seats one request may carry (the gateway's limit for a listed upload). */
export const SEATS_PER_REQUEST = 10000;

/** The seats of `text`, or `{ error }` naming the first bad line. */
export function parseSeatList(text) {
  const seats = [];
  const lines = String(text).split(/\r?\n/);
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i].trim();
    if (!line || (i === 0 && /seat_id/i.test(line))) continue;
    const cells = line.split(',').map((c) => c.trim());
    const [seatId, section, row, number, price] = cells;
    const whole = (v) => /^\d{1,9}$/.test(v ?? '');
    const ok = cells.length === 5 && SEAT_ID.test(seatId) && section && section.length <= 64
      && row.length <= 64 && whole(number) && whole(price);
    if (!ok) return { error: t('admin.err.seatLine', { n: i + 1 }) };
    seats.push({ seat_id: seatId, section, row, number: Number(number), price_cents: Number(price) });
  }
  if (!seats.length) return { error: t('admin.err.seatListEmpty') };
  return { seats };
}

/** Sends `seats` in requests the gateway accepts; answers how many it added. */
export async function sendSeatList(post, seats) {
  let total = 0;
  for (let at = 0; at < seats.length; at += SEATS_PER_REQUEST) {
    const added = await post({ seats: seats.slice(at, at + SEATS_PER_REQUEST) });
    total = added?.total ?? total + Math.min(SEATS_PER_REQUEST, seats.length - at);
  }
  return total;
}

/** Fills the list from a chosen file. */
export async function readSeatFile(input, into) {
  const file = input.files?.[0];
  if (file) into.value = await file.text();
}
