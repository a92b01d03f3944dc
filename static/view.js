// Which panel of the waiting room is on screen, the alert line and the connection badge.

import { t } from './i18n.js';

export const $ = (id) => document.getElementById(id);

/** Shows one panel; moves focus to its heading so screen readers hear the change. */
export function show(view, { focus = true } = {}) {
  const app = $('app');
  if (app.dataset.view === view) return;
  app.dataset.view = view;
  // The page is busy only until its script shows a first view.
  app.removeAttribute('aria-busy');
  for (const panel of app.querySelectorAll('[data-panel]')) {
    panel.hidden = panel.dataset.panel !== view;
  }
  if (focus) {
    const heading = app.querySelector(`[data-panel="${view}"] h1`);
    if (heading) heading.focus({ preventScroll: false });
  }
}

export function currentView() {
  return $('app').dataset.view;
}

/** kind: 'error' | 'warn' | 'info'. An empty text hides the alert. */
export function say(text, kind = 'error') {
  const el = $('alert');
  if (!text) {
    el.hidden = true;
    el.textContent = '';
    return;
  }
  el.dataset.kind = kind;
  el.textContent = text;
  el.hidden = false;
}

export function connection(mode) {
  const el = $('connection');
  if (!mode) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  el.dataset.mode = mode;
  el.textContent = t(`connection.${mode}`);
}

export function setText(id, text) {
  const el = $(id);
  if (el) el.textContent = text;
}

/** Renders seats as list items: "Section A · Row B · Seat 12 … $45.00". */
export function fillSeatList(id, seats, formatPrice) {
  const ul = $(id);
  ul.replaceChildren(
    ...seats.map((seat) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = describeSeat(seat);
      li.append(name);
      if (typeof seat.price_cents === 'number') {
        const price = document.createElement('span');
        price.textContent = formatPrice(seat.price_cents);
        li.append(price);
      }
      return li;
    }),
  );
}

/** Holds and orders may list seats as ids or as objects. */
export function describeSeat(seat) {
  if (typeof seat === 'string') return t('seat.id', { id: seat });
  if (seat.section && seat.row !== undefined) return t('seat.full', { section: seat.section, row: String(seat.row), number: String(seat.number) });
  return t('seat.id', { id: seat.seat_id });
}
