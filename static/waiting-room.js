// The waiting room: event page, join, pre-opening countdown, queue position, the offer
// and its claim. After the claim, checkout.js takes over (seats, hold, payment).

import { request, requestPatiently, newKey } from './api.js';
import { messageFor, retrying, chanceWords } from './messages.js';
import { t, number, translatePage, mountSwitcher } from './i18n.js';
import { TurnAlerts } from './turn-alerts.js';
import { Announcer } from './announce.js';
import { EventStore } from './store.js';
import { QueueLink } from './queue-link.js';
import { Deadline, clock, waitRange, counted, spokenLeft, when } from './format.js';
import { $, show, say, connection, setText, currentView } from './view.js';
import { Shop } from './checkout.js';
import { showReceipt } from './receipt.js';
import { applyBranding } from './branding.js';

const event = eventFromPath();
const store = new EventStore(event);
const api = (suffix) => `/api/events/${encodeURIComponent(event)}${suffix}`;
let info = null;
let link = null;
let ticker = null;
let paused = false;
let seatsLeft;
let lastOfferCheck = 0;
let offerDeadline = null;

translatePage();
document.title = t('page.title');
mountSwitcher($('language'));
const alerts = new TurnAlerts({ event });
const positionNews = new Announcer($('announce'));
const offerNews = new Announcer($('offer-announce'));

function eventFromPath() {
  const m = location.pathname.match(/^\/events\/([A-Za-z0-9._-]{1,64})\/?$/);
  return m ? m[1] : new URLSearchParams(location.search).get('event') || 'demo';
}

/** Runs fn every quarter second until the next call (one countdown on screen at a time). */
function tick(fn) {
  clearInterval(ticker);
  fn();
  ticker = setInterval(fn, 250);
}

/** The receipt named in the fragment (`#hold=…&receipt=…`), if any. */
function receiptInFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const hold = params.get('hold');
  const receipt = params.get('receipt');
  return hold && receipt ? { hold, receipt } : null;
}

// Following the landing page's order link changes only the fragment of this same page, which
// loads nothing: show the receipt it names.
window.addEventListener('hashchange', () => {
  const named = receiptInFragment();
  if (named) showReceipt(named.hold, named.receipt);
});

async function boot() {
  for (const a of document.querySelectorAll('.fairness-link')) a.href = api('/fairness');
  const named = receiptInFragment();
  if (named) {
    await showReceipt(named.hold, named.receipt);
    return;
  }
  let fetchedAt;
  try {
    const res = await requestPatiently('GET', api(''), {}, (err, s) => say(retrying(err.code, s), 'warn'));
    fetchedAt = performance.now();
    info = res.body;
    info.serverNow = Date.parse(res.headers.get('Date') || '') || null;
  } catch (err) {
    setText('fatal-body', err.code === 'not_found' ? t('fatal.noEvent') : messageFor(err.code));
    show('fatal');
    return;
  }
  say('');
  applyBranding(info.branding, info.name);
  alerts.setEventName(info.name);
  document.title = t('page.titleEvent', { event: info.name || event });
  setText('event-name', info.name || event);
  info.opensIn = secondsUntilOpening(info, fetchedAt);

  const session = store.get('session');
  if (session?.token) {
    shop().resume();
    return;
  }
  const queued = store.get('queue');
  if (queued?.token) {
    enterQueue(queued.token);
    return;
  }
  landing();
}

/** Seconds until opens_at, judged against the server's clock (its Date header), not the device's. */
function secondsUntilOpening(ev, fetchedAt) {
  const opens = Date.parse(ev.opens_at || '');
  if (Number.isNaN(opens)) return null;
  const serverNow = ev.serverNow ?? Date.now();
  const s = (opens - serverNow) / 1000 - (performance.now() - fetchedAt) / 1000;
  return s > 0 ? new Deadline(s) : null;
}

function landing() {
  setText('landing-title', info.name || event);
  const before = info.opensIn && info.opensIn.remaining() > 0;
  setText('landing-when', before ? t('landing.onSaleFrom', { when: when(info.opens_at) }) : t('landing.onSaleNow'));
  setText('landing-seats', typeof info.seats_left === 'number' ? counted('landing.seatsLeft', info.seats_left) : '');
  const receipt = store.get('lastReceipt');
  $('landing-order').hidden = !receipt;
  // Links stored before receipts moved to the fragment carried the key in the query.
  if (receipt) $('landing-order-link').href = receipt.replace('?hold=', '#hold=');
  if (info.status === 'sold_out' || info.status === 'closed') {
    ended(info.status);
    return;
  }
  if (info.status === 'paused') say(messageFor('queue_paused'), 'warn');
  readOrganizerMessage();
  $('landing-countdown').hidden = !before;
  $('landing-fairness').hidden = !before;
  if (before) {
    tick(() => {
      const left = info.opensIn.remaining();
      setText('landing-countdown-value', clock(left));
      if (left <= 0) landing(); // The sale has opened: redraw as "on sale now".
    });
  }
  show('landing');
}

async function join() {
  const button = $('join');
  button.disabled = true;
  button.textContent = t('landing.joining');
  // One key per join intent, kept so a retried click (or reload mid-request) is one join.
  const key = store.get('joinKey') || newKey();
  store.set('joinKey', key);
  try {
    const { body } = await requestPatiently('POST', api('/queue'), { idempotencyKey: key, body: {} }, (err, s) =>
      say(retrying(err.code, s), 'warn'),
    );
    say('');
    store.set('queue', { token: body.queue_token, ticket_id: body.ticket_id });
    store.set('maxPosition', body.position ?? 0);
    enterQueue(body.queue_token, body);
  } catch (err) {
    store.remove('joinKey');
    if (err.code === 'sold_out' || err.code === 'queue_closed') ended(err.code === 'sold_out' ? 'sold_out' : 'closed');
    else if (err.code === 'queue_maintenance') {
      // The organizer's own words come with the refusal; ours say what to do.
      if (typeof err.problem.message === 'string') showOrganizerMessage({ text: err.problem.message, level: 'warning' });
      say(messageFor(err.code), 'warn');
    } else say(messageFor(err.code), err.code === 'queue_paused' ? 'warn' : 'error');
  } finally {
    button.disabled = false;
    button.textContent = t('landing.join');
  }
}

function enterQueue(token, joined) {
  if (link) link.stop();
  if (joined) onUpdate(joined.status === 'waiting' || !joined.status ? { type: 'position', ...joined } : { type: 'status', ...joined });
  link = new QueueLink({ event, token, onUpdate, onConnection: connection });
  // The join's answer is what a first read would say: the first read waits as it asks.
  link.start(joined ? Number(joined.retry_after_s) || 0 : 0);
  alerts.joined();
}

/**
 * A poll answer sent before the offer can arrive after the socket's "offered": while a live
 * offer is on screen, updates that would put the buyer back in line are stale and ignored.
 */
function stale(msg) {
  if (currentView() !== 'offered' || !offerDeadline || offerDeadline.remaining() <= 0) return false;
  return msg.type === 'position' || (msg.type === 'status' && ['waiting', 'pre_queue', 'paused'].includes(msg.status));
}

function onUpdate(msg) {
  if (stale(msg)) return;
  switch (msg.type) {
    case 'position':
      showPosition(msg);
      break;
    case 'offered':
      showOffer(msg.offer_expires_in_s);
      break;
    case 'admitted':
      admitted(msg.admission_token, msg.session_expires_at);
      break;
    case 'status':
      onStatus(msg.status, msg);
      break;
    case 'error':
      lostPlace(msg.code);
      break;
    case 'message':
      showOrganizerMessage(msg.message);
      break;
    default:
      break;
  }
}

function onStatus(status, msg) {
  if (status === 'pre_queue') {
    show('prequeue');
    const opens = info.opensIn;
    // At zero the server draws the order and tells us our place; until then, say so.
    tick(() => setText('prequeue-countdown', opens && opens.remaining() > 0 ? clock(opens.remaining()) : t('prequeue.openingNow')));
  } else if (status === 'waiting') {
    paused = false;
    $('paused-banner').hidden = true;
    if (currentView() !== 'waiting') show('waiting');
  } else if (status === 'paused') {
    paused = true;
    if (typeof msg.position === 'number') showPosition({ position: msg.position, estimated_wait_s: null, seat_chance: msg.seat_chance });
    else show('waiting');
    $('paused-banner').hidden = false;
    setText('wait', t('waiting.unknownPaused'));
  } else if (status === 'offer_lapsed') {
    alerts.over();
    clearInterval(ticker);
    dropLink();
    store.forgetQueue();
    show('lapsed');
  } else if (status === 'admitted') {
    claimByPost();
  } else if (status === 'sold_out' || status === 'closed') {
    // Sold out can undo itself when held seats come back, so the link stays open for it.
    if (status === 'closed') {
      dropLink();
      store.forgetQueue();
    }
    ended(status);
  }
}

/** The organizer's message as written: set as text, never parsed as HTML; null hides it. */
function showOrganizerMessage(message) {
  const text = message && typeof message.text === 'string' ? message.text : '';
  const box = $('organizer-message');
  box.dataset.level = message?.level === 'warning' ? 'warning' : 'info';
  setText('organizer-message-text', text);
  box.hidden = !text;
}

/** The message of the moment, for a page not in line yet (one read of the public snapshot). */
async function readOrganizerMessage() {
  try {
    const { body } = await request('GET', api('/queue/snapshot'));
    if (body && !link) showOrganizerMessage(body.message ?? null);
  } catch {
    // The landing page works without it; the line's own reads bring it later.
  }
}

function showPosition(msg) {
  if (!['waiting'].includes(currentView())) {
    clearInterval(ticker);
    show('waiting');
  }
  $('paused-banner').hidden = !paused;
  const position = Number(msg.position) || 0;
  const max = Math.max(store.get('maxPosition') ?? 0, position);
  store.set('maxPosition', max);
  const done = Math.round(((max - position) / (max + 1)) * 100);
  $('progress-fill').style.width = `${done}%`;
  $('progress').setAttribute('aria-valuenow', String(done));
  setText('position', position === 0 ? t('waiting.next') : number(position));
  const range = paused ? null : waitRange(msg.estimated_wait_s, msg.estimated_wait_range_s);
  setText('wait', range ?? t(paused ? 'waiting.unknownPaused' : 'waiting.unknown'));
  if (typeof msg.seats_left === 'number') seatsLeft = msg.seats_left;
  const chance = chanceWords(msg.seat_chance, seatsLeft ?? info?.seats_left, position);
  setText('chance', chance);
  // Announce politely, but not at every tick: a screen reader user needs calm updates.
  positionNews.say(
    position === 0
      ? t('waiting.announceNext')
      : `${t('waiting.announce', { n: position, wait: range ?? t('waiting.unknown') })} ${t('chance.announce', { words: chance })}`,
    { urgent: position === 0 },
  );
}

function showOffer(seconds) {
  paused = false;
  const deadline = new Deadline(Number(seconds) || 0);
  offerDeadline = deadline;
  // A buyer in another tab or app is told: title, icon, tone, notification.
  if (currentView() !== 'offered') {
    alerts.offered(deadline);
    offerNews.reset();
    offerNews.say(t('offered.announce', { time: spokenLeft(deadline.remaining()) }), { urgent: true });
  }
  show('offered');
  if (!claiming) $('claim').disabled = false;
  tick(() => {
    const left = deadline.remaining();
    setText('offer-countdown', clock(left));
    offerNews.say(t('offered.announceLeft', { time: spokenLeft(left) }));
    // The server decides whether the offer lapsed: ask it (every 2 s until it says)
    // rather than guess from our own countdown.
    if (left <= 0 && performance.now() - lastOfferCheck > 2000) {
      lastOfferCheck = performance.now();
      link?.poll();
    }
  });
}

let claimFallback = null;
let claiming = false;
function claim() {
  claiming = true;
  $('claim').disabled = true;
  setText('claim', t('offered.claiming'));
  if (link?.claim()) {
    // The admitted message should follow at once; if it does not, ask over HTTP (claiming twice is safe).
    claimFallback = setTimeout(claimByPost, 4000);
  } else {
    claimByPost();
  }
}

async function claimByPost() {
  const queued = store.get('queue');
  if (!queued?.token) return;
  try {
    const { body } = await requestPatiently('POST', api('/queue/claim'), { token: queued.token, body: {} }, (err, s) =>
      say(retrying(err.code, s), 'warn'),
    );
    admitted(body.admission_token, body.session_expires_at);
  } catch (err) {
    claiming = false;
    $('claim').disabled = false;
    setText('claim', t('offered.claim'));
    if (err.code === 'offer_lapsed') onStatus('offer_lapsed', {});
    else if (err.code === 'sold_out' || err.code === 'queue_closed') ended(err.code === 'sold_out' ? 'sold_out' : 'closed');
    else if (err.code === 'not_your_turn') show('waiting');
    else if (err.status === 401 || err.status === 403) lostPlace(err.code);
    else say(messageFor(err.code));
  }
}

function admitted(token, expiresAt) {
  alerts.over();
  clearTimeout(claimFallback);
  clearInterval(ticker);
  if (!token) return;
  dropLink();
  say('');
  store.set('session', { token, expires_at: expiresAt });
  store.forgetQueue();
  shop().enter();
}

function ended(status) {
  clearInterval(ticker);
  alerts.over();
  const soldOut = status === 'sold_out';
  setText('ended-title', t(soldOut ? 'ended.soldOut' : 'ended.closed'));
  setText('ended-body', t(soldOut ? 'ended.soldOutBody' : 'ended.closedBody'));
  show('ended');
}

function dropLink() {
  link?.stop();
  link = null;
  connection(null);
}

function lostPlace(code) {
  alerts.over();
  dropLink();
  store.forgetQueue();
  landing();
  say(messageFor(code));
}

let shopInstance = null;
function shop() {
  shopInstance ??= new Shop({ event, info, store, onSessionEnd: (code) => { store.forgetSession(); landing(); say(messageFor(code)); } });
  return shopInstance;
}

$('join').addEventListener('click', join);
$('claim').addEventListener('click', claim);
$('rejoin').addEventListener('click', () => {
  store.forgetQueue();
  landing();
  join();
});

boot();
