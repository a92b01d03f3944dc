// The payment method choices: the payment simulator's test cards, labelled as such.

import { TEST_CARDS, cardText } from './messages.js';
import { $ } from './view.js';

/** A decline reason in words, whatever shape the provider's error came in. */
export function describeError(e) {
  if (!e) return '';
  if (typeof e === 'string') return e.replace(/_/g, ' ');
  return (e.message || e.decline_code || e.code || '').toString().replace(/_/g, ' ');
}

/** The simulator's test cards as radio choices, the first one checked. */
export function renderCards() {
  $('cards').replaceChildren(
    ...TEST_CARDS.map((card, i) => {
      const label = document.createElement('label');
      label.innerHTML = `<input type="radio" name="card" value="${card.id}"${i === 0 ? ' checked' : ''}>
        <span><strong></strong><br><span class="muted small"></span> <code>${card.id}</code></span>`;
      const text = cardText(card);
      label.querySelector('strong').textContent = text.label;
      label.querySelector('.muted').textContent = text.note;
      return label;
    }),
  );
}
