// A human message for every error code of API.md, plus the network failures the
// browser adds. Messages say what happened and what the buyer can do next.
// The texts here are the English ones; the other languages give them in static/i18n/LANG.js
// as `error.CODE`, `ending.STATE.title`/`.body` and `card.ID.label`/`.note`.

import { has, t } from './i18n.js';

const MESSAGES = {
  bad_request: 'Something in that request was not right. Please reload the page and try again.',
  too_many_seats: 'That is more seats than one order may hold (or none at all). Please change your selection.',
  not_found: 'We could not find that. The link may be wrong or the event may have ended.',
  token_missing: 'Your place in the queue could not be read. Please join the queue again.',
  token_invalid: 'Your queue pass is not valid for this page. Please join the queue again.',
  token_expired: 'Your pass has expired. Please join the queue again.',
  wrong_event: 'Your pass belongs to another event. Please join this event\'s queue.',
  not_admitted: 'It is not your turn yet. Please wait in the queue.',
  unauthorized: 'That organizer key was not accepted. Please check it and try again.',
  rate_limited: 'Too many attempts from your network. Please wait a moment; we will retry for you.',
  overloaded: 'We are very busy right now. Stay on this page; we will retry automatically.',
  queue_paused: 'The organizer has paused the sale for a moment. You keep your place; it will continue by itself.',
  queue_closed: 'This queue is closed: no more buyers are being let in.',
  queue_maintenance: 'The queue is closed to new buyers for maintenance. Please try again a little later.',
  stale_version: 'These settings were changed by someone else meanwhile. Reload them and apply your change again.',
  sold_out: 'Sold out: every seat is sold or held. If held seats come back, the queue reopens by itself.',
  not_your_turn: 'It is not your turn yet. Please wait; we will tell you when it is.',
  offer_lapsed: 'Your turn passed because it was not claimed in time, so it went to the next person.',
  seat_unavailable: 'Someone else just took a seat you picked. Please choose another.',
  hold_limit: 'You already have seats on hold. Finish or release that hold first.',
  hold_expired: 'Your hold ran out, so the seats were released. No money was taken.',
  payment_in_progress: 'Your payment is already being processed. Please wait for the result.',
  seats_reload: 'The seat map changed a lot meanwhile. It is being loaded again.',
  idempotency_conflict: 'This request clashed with an earlier one. Please reload the page and try again.',
  // Sent by the organizer API (creating an event), though not in API.md's table.
  event_exists: 'An event with this id already exists. Choose another id, or open that event\'s dashboard.',
  network: 'We could not reach the server. Check your connection; we will keep trying.',
  server_error: 'Something went wrong on our side. Please try again in a moment.',
};

/** The message for a problem+json body (or a bare code). */
export function messageFor(code) {
  const known = code && MESSAGES[code] ? code : 'server_error';
  return inLanguage(`error.${known}`, MESSAGES[known]);
}

/** The buyer's language's text for key, else the English one given. */
function inLanguage(key, english) {
  return has(key) ? t(key) : english;
}

export const ALL_CODES = Object.keys(MESSAGES);

/** What happened to a hold that ended without an order, and to the money. */
export const HOLD_ENDINGS = {
  expired: {
    title: 'Your hold ran out',
    body: 'The time to pay ran out, so the seats went back on sale. No money was taken from your card.',
  },
  released: {
    title: 'Your seats were released',
    body: 'These seats are no longer held for you. No money was taken from your card.',
  },
  abandoned: {
    title: 'We could not confirm your payment in time',
    body:
      'The card provider did not give us a clear answer in time, so we released the seats. ' +
      'Any amount reserved on your card is cancelled, or refunded in full if it was already taken: you will not pay for seats you do not get.',
  },
};

/** How a hold ended without an order, in the buyer's language: {title, body}. */
export function holdEnding(state) {
  const known = HOLD_ENDINGS[state] ? state : 'released';
  return {
    title: inLanguage(`ending.${known}.title`, HOLD_ENDINGS[known].title),
    body: inLanguage(`ending.${known}.body`, HOLD_ENDINGS[known].body),
  };
}

/** Test cards understood by the payment simulator (no real money moves). */
export const TEST_CARDS = [
  { id: 'pm_card_visa', label: 'Visa ending 4242', note: 'approves the payment' },
  { id: 'pm_card_declined', label: 'Declined card', note: 'the bank says no' },
  { id: 'pm_card_slow', label: 'Slow bank', note: 'answers after a delay' },
  { id: 'pm_card_lost', label: 'Lost answer', note: 'approves, but the answer goes missing; we find out later' },
  { id: 'pm_card_authenticationRequired', label: '3-D Secure card', note: 'your bank asks you to confirm the payment on its own page' },
  { id: 'pm_card_error', label: 'Provider error', note: 'the provider fails (5xx)' },
];

/** A test card's label and note in the buyer's language. */
export function cardText(card) {
  return {
    label: inLanguage(`card.${card.id}.label`, card.label),
    note: inLanguage(`card.${card.id}.note`, card.note),
  };
}

/** The English texts above under the keys a language file gives them (checked by the tests). */
export function englishTexts() {
  const texts = {};
  for (const [code, text] of Object.entries(MESSAGES)) texts[`error.${code}`] = text;
  for (const [state, ending] of Object.entries(HOLD_ENDINGS)) {
    texts[`ending.${state}.title`] = ending.title;
    texts[`ending.${state}.body`] = ending.body;
  }
  for (const card of TEST_CARDS) {
    texts[`card.${card.id}.label`] = card.label;
    texts[`card.${card.id}.note`] = card.note;
  }
  return texts;
}

/** "…busy… Retrying in 4 s." while a request waits its turn to be sent again. */
export function retrying(code, seconds) {
  return t('retrying', { message: messageFor(code), n: seconds });
}

/**
 * The chance of a seat in plain words. `seats` left and `ahead` people ahead are named when
 * the answer is "unlikely" or not known yet, so the buyer can judge for themselves.
 */
export function chanceWords(chance, seats, ahead) {
  const known = typeof seats === 'number' && typeof ahead === 'number';
  const why = known ? { seats: t('chance.seats', { n: seats }), people: t('chance.people', { n: ahead }) } : null;
  if (typeof chance !== 'number') return why ? t('chance.unknownWhy', why) : t('chance.unknown');
  if (chance >= 0.9) return t('chance.veryLikely');
  if (chance >= 0.65) return t('chance.likely');
  if (chance >= 0.35) return t('chance.even');
  if (chance <= 0 && seats === 0) return t('chance.soldOut');
  if (chance >= 0.1) return why ? t('chance.unlikelyWhy', why) : t('chance.unlikely');
  return why ? t('chance.veryUnlikelyWhy', why) : t('chance.veryUnlikely');
}
