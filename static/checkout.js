// After the claim: choose seats, hold them, pay, and the outcome. Every countdown is
// computed from the server's `expires_in_s` on the monotonic clock, never from the
// device's clock. Idempotency keys are kept so a retried click is the same action.

import { request, requestPatiently, newKey, sleep } from './api.js';
import { messageFor, holdEnding, retrying } from './messages.js';
import { Deadline, clock, money, counted, spokenLeft, when } from './format.js';
import { locale, t } from './i18n.js';
import { Announcer } from './announce.js';
import { $, show, say, setText, fillSeatList, currentView } from './view.js';
import { SeatMap } from './seat-map.js';
import { SectionPicker, quantityForm, sectionsPanel, loadingSection } from './sections.js';
import { readAuth, renderConfirmed } from './receipt.js';
import { renderCards, describeError } from './cards.js';

const SEAT_REFRESH_MS = 5000;

/** Seat ids in a sentence: "A-1, A-2 and A-3" in the buyer's language. */
function seatList(ids) {
  return new Intl.ListFormat(locale, { type: 'conjunction' }).format(ids.map(String));
}

/** This page without what a bank's return added, for the provider to send the buyer back to. */
function returnUrl() {
  const url = new URL(location.href);
  url.hash = '';
  for (const name of ['payment_intent', 'payment_intent_client_secret', 'redirect_status']) url.searchParams.delete(name);
  return url.toString();
}

export class Shop {
  constructor({ event, info, store, onSessionEnd }) {
    this.event = event;
    this.info = info;
    this.store = store;
    this.onSessionEnd = onSessionEnd;
    this.currency = (info.currency || 'USD').toUpperCase();
    this.maxSeats = Number(info.max_seats_per_hold) || 6;
    this.map = null;
    this.section = null;
    this.version = null;
    this.hold = null;
    this.holdDeadline = null;
    this.timer = null;
    this.price = (c) => money(c, this.currency);
    this.announcer = new Announcer($('hold-announce'));
    $('hold').addEventListener('click', () => this.holdSeats());
    $('to-payment').addEventListener('click', () => this.openPayment());
    $('payment-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.pay();
    });
    $('release').addEventListener('click', () => this.release());
    $('back-to-seats').addEventListener('click', () => this.enter());
    renderCards();
    // Back from the bank's page: its query tells nothing the hold does not; keep the address clean.
    if (new URLSearchParams(location.search).has('redirect_status')) history.replaceState(null, '', returnUrl());
  }

  get token() {
    return this.store.get('session')?.token;
  }

  /** Reopened tab with a session: find out whether it already has a hold. */
  async resume() {
    // A hold this browser made is read with its receipt key first: the session itself ends
    // when the order is confirmed, and the buyer must still see that order.
    const stored = this.store.get('hold');
    if (stored?.hold_id && stored.receipt_key) {
      try {
        const { body: hold } = await request('GET', `/api/holds/${encodeURIComponent(stored.hold_id)}`, readAuth(null, stored.receipt_key));
        if (['held', 'paying', 'confirmed'].includes(hold.state)) {
          this.route(hold);
          return;
        }
      } catch {
        // Unreadable: ask the session below.
      }
      this.store.remove('hold');
    }
    try {
      const { body } = await request('GET', '/api/session', { token: this.token });
      if (body.hold) {
        const holdId = body.hold.hold_id || body.hold;
        const { body: hold } = await request('GET', `/api/holds/${encodeURIComponent(holdId)}`, { token: this.token });
        this.store.set('hold', { hold_id: hold.hold_id, receipt_key: body.hold.receipt_key || this.store.get('hold')?.receipt_key });
        this.route(hold);
        return;
      }
      this.enter();
    } catch (err) {
      if (err.status === 401 || err.status === 403) this.onSessionEnd(err.code);
      else this.enter();
    }
  }

  /** The seat map: the sections first when there are several, then the chosen one's seats. */
  async enter() {
    this.stopTimer();
    say('');
    setText('seats-help', t('seats.help', { max: counted('seats.count', this.maxSeats) }));
    const session = this.store.get('session');
    setText('session-ends', session?.expires_at ? t('seats.sessionEnds', { when: when(session.expires_at) }) : '');
    if (!this.map) {
      this.map = new SeatMap($('seat-map'), {
        maxSeats: this.maxSeats,
        price: this.price,
        onChange: (seats) => this.renderSelection(seats),
        onLimit: () => say(t('seats.limit', { max: counted('seats.count', this.maxSeats) }), 'warn'),
      });
      this.picker = new SectionPicker($('sections-list'), { onPick: (section) => this.openSection(section) });
    }
    show('seats');
    this.renderSelection(this.map.selected());
    await this.refreshOverview();
    this.timer = setInterval(() => this.refreshSeats(), SEAT_REFRESH_MS);
  }

  get eventPath() {
    return `/api/events/${encodeURIComponent(this.event)}`;
  }

  /** The sections with seats left. A venue of one seated section opens it at once, as before. */
  async refreshOverview() {
    try {
      const { body } = await request('GET', this.eventPath);
      const sections = body.sections || [];
      const single = sections.length === 1 && !sections[0].general_admission;
      sectionsPanel(!single);
      this.picker.render(sections);
      if (single && this.section !== sections[0].section) await this.openSection(sections[0]);
    } catch (err) {
      if (!this.map.hasSeats()) say(messageFor(err.code));
    }
  }

  async openSection(section) {
    this.picker.choose(section.section);
    if (section.general_admission) {
      this.section = section.section;
      this.version = null;
      this.map.reset();
      this.renderSelection([]);
      quantityForm($('seat-map'), section, { max: this.maxSeats, onHold: (n) => this.holdQuantity(section.section, n) });
      return;
    }
    if (this.section !== section.section) this.map.reset();
    loadingSection(section.section);
    try {
      await this.loadSection(section.section);
    } catch (err) {
      say(messageFor(err.code));
    }
  }

  /** One section's seats, with the version they were read at. */
  async loadSection(name) {
    const { body } = await request('GET', `${this.eventPath}/seats?section=${encodeURIComponent(name)}`);
    this.section = name;
    this.version = body.version;
    this.reportLost(this.map.setSeats(body.seats || []));
  }

  /** What changed since the version held: a few seats, not the whole map. */
  async refreshSeats() {
    try {
      if (this.section && this.version != null) {
        try {
          const { body } = await request('GET', `${this.eventPath}/seats?since=${this.version}`);
          this.version = body.version;
          this.reportLost(this.map.applyChanges(body.changes || []));
        } catch (err) {
          if (err.code !== 'seats_reload') throw err;
          await this.loadSection(this.section);
        }
      }
      if (!$('sections').hidden) await this.refreshOverview();
    } catch (err) {
      if (!this.map.hasSeats()) say(messageFor(err.code));
    }
  }

  reportLost(lost) {
    if (lost.length) say(t(lost.length === 1 ? 'seats.lostOne' : 'seats.lostMany', { seats: seatList(lost.map((s) => s.seat_id)) }), 'warn');
  }

  renderSelection(seats) {
    fillSeatList('selection-list', seats, this.price);
    $('selection-empty').hidden = seats.length > 0;
    const total = seats.reduce((sum, s) => sum + (s.price_cents || 0), 0);
    setText('selection-total', this.price(total));
    const button = $('hold');
    button.disabled = seats.length === 0;
    button.textContent = seats.length ? counted('hold.buttonCount', seats.length) : t('hold.button');
    setText('seat-announce', seats.length ? t('selection.announce', { n: seats.length, total: this.price(total) }) : t('selection.none'));
  }

  async holdSeats() {
    const ids = this.map.selected().map((s) => s.seat_id).sort();
    if (!ids.length) return;
    const button = $('hold');
    button.disabled = true;
    button.textContent = t('hold.holding');
    await this.placeHold(ids.join(','), { seats: ids });
  }

  /** General admission: any `quantity` free seats of the section. */
  async holdQuantity(section, quantity) {
    $('ga-hold').disabled = true;
    await this.placeHold(`${section}×${quantity}`, { section, quantity });
    if ($('ga-hold')) $('ga-hold').disabled = false;
  }

  async placeHold(scope, holdBody) {
    // Same selection retried → same key, so a lost response cannot make a second hold.
    const previous = this.store.get('holdKey');
    const key = previous && previous.seats === scope ? previous.key : newKey();
    this.store.set('holdKey', { seats: scope, key });
    try {
      const { body } = await requestPatiently('POST', `${this.eventPath}/holds`, {
        token: this.token, idempotencyKey: key, body: holdBody,
      }, (err, s) => say(retrying(err.code, s), 'warn'));
      this.store.remove('holdKey');
      this.store.set('hold', { hold_id: body.hold_id, receipt_key: body.receipt_key });
      this.map.clearSelection();
      this.showHold(body);
    } catch (err) {
      this.store.remove('holdKey');
      this.renderSelection(this.map.selected());
      if (err.code === 'seat_unavailable') {
        const lost = err.problem.seats || [];
        this.map.markTaken(lost);
        say(lost.length
          ? t(lost.length === 1 ? 'seats.holdLostOne' : 'seats.holdLostMany', { seats: seatList(lost) })
          : messageFor(err.code));
        this.refreshSeats();
      } else if (err.code === 'hold_limit') {
        this.resume();
      } else if (err.status === 401 || err.status === 403) {
        this.onSessionEnd(err.code);
      } else {
        say(messageFor(err.code));
      }
    }
  }

  /** Routes a hold read to its view. */
  route(hold) {
    // Back from the bank's page (or a reload) after a payment that did not go through.
    const unsettled = this.store.get('payKey')?.settled === false;
    if (hold.state === 'held' && hold.last_payment_error && unsettled) this.declined(hold);
    else if (hold.state === 'held') this.showHold(hold);
    else if (hold.state === 'paying') this.waitForPayment(hold.hold_id);
    else if (hold.state === 'confirmed') this.confirmed(hold);
    else this.ended(hold.state);
  }

  showHold(hold) {
    this.stopTimer();
    this.hold = hold;
    this.holdDeadline = new Deadline(Number(hold.expires_in_s) || 0);
    // The hold names seat ids; the map (when loaded) knows their rows and prices.
    const seats = (hold.seats || []).map((s) => (typeof s === 'string' ? this.map?.byId.get(s) || s : s));
    fillSeatList('hold-seats', seats, this.price);
    const known = typeof hold.total_cents === 'number';
    if (known) this.hold.total_cents = hold.total_cents;
    setText('hold-total', known ? this.price(hold.total_cents) : '');
    $('hold-total').parentElement.hidden = !known;
    setText('pay', known ? t('held.payAmount', { amount: this.price(hold.total_cents) }) : t('held.pay'));
    show('hold');
    this.announcer.reset();
    this.timer = setInterval(() => this.tickHold(), 250);
    this.tickHold();
  }

  tickHold() {
    const left = this.holdDeadline.remaining();
    setText('hold-countdown', clock(left));
    // Spoken at most every few seconds (the Announcer's gap), never at every tick.
    this.announcer.say(t('held.announce', { time: spokenLeft(left) }));
    if (left <= 0) {
      this.stopTimer();
      this.checkHold();
    }
  }

  async checkHold() {
    try {
      const { body } = await request('GET', `/api/holds/${encodeURIComponent(this.hold.hold_id)}`, { token: this.token });
      if (body.state === 'held' && body.expires_in_s > 0) this.showHold({ ...this.hold, ...body });
      else this.route(body.state === 'held' ? { ...body, state: 'expired' } : body);
    } catch {
      this.ended('expired');
    }
  }

  async openPayment() {
    $('to-payment').hidden = true;
    $('payment-form').hidden = false;
    try {
      const { body } = await request('POST', `/api/holds/${encodeURIComponent(this.hold.hold_id)}/extend`, { token: this.token, body: {} });
      this.holdDeadline = new Deadline(Number(body.expires_in_s) || 0);
      this.tickHold();
    } catch (err) {
      if (err.code === 'hold_expired') this.ended('expired');
      else if (err.code === 'payment_in_progress') this.waitForPayment(this.hold.hold_id);
      // Other failures leave the current countdown standing; paying may still work.
    }
    document.querySelector('#cards input:checked')?.focus();
  }

  async pay() {
    const card = document.querySelector('#cards input:checked')?.value || 'pm_card_visa';
    const holdId = this.hold.hold_id;
    // The same click retried (network loss, busy server, reload) reuses its key; a new
    // attempt after a decline gets a new one.
    const previous = this.store.get('payKey');
    const key = previous && previous.hold_id === holdId && previous.card === card && !previous.settled ? previous.key : newKey();
    this.store.set('payKey', { hold_id: holdId, card, key, settled: false });
    $('pay').disabled = true;
    say('');
    try {
      await requestPatiently('POST', `/api/holds/${encodeURIComponent(holdId)}/checkout`, {
        token: this.token, idempotencyKey: key, body: { payment_method: card, return_url: returnUrl() },
      }, (err, s) => say(retrying(err.code, s), 'warn'));
      this.waitForPayment(holdId);
    } catch (err) {
      if (err.code === 'payment_in_progress') this.waitForPayment(holdId);
      else if (err.code === 'hold_expired') this.ended('expired');
      else if (err.status === 401 || err.status === 403) this.onSessionEnd(err.code);
      else say(messageFor(err.code));
    } finally {
      $('pay').disabled = false;
    }
  }

  /** Polls the hold until the payment resolves. */
  async waitForPayment(holdId) {
    this.stopTimer();
    show('paying');
    $('paying-slow').hidden = true;
    $('paying-action').hidden = true;
    const started = performance.now();
    const token = this.token;
    const receipt = this.store.get('hold')?.receipt_key;
    for (let delay = 800; currentView() === 'paying'; delay = Math.min(3000, delay * 1.3)) {
      await sleep(delay);
      if (performance.now() - started > 12000) $('paying-slow').hidden = false;
      let hold;
      try {
        hold = (await request('GET', `/api/holds/${encodeURIComponent(holdId)}`, readAuth(token, receipt))).body;
      } catch {
        continue; // A lost poll is retried; the payment goes on without us.
      }
      if (hold.state === 'paying') {
        if (this.followAction(hold)) return;
        continue;
      }
      $('paying-action').hidden = true;
      if (hold.state === 'held') {
        this.declined(hold);
        return;
      }
      this.route(hold);
      return;
    }
  }

  /**
   * The card asks the buyer to authenticate (3-D Secure): go to the bank's page once; it
   * sends the buyer back here, where polling shows the outcome. Back again and still asked
   * (the page was left unfinished), a link offers the bank's page again.
   */
  followAction(hold) {
    const url = hold.next_action?.redirect_to_url?.url;
    if (!url) return false;
    $('paying-action-link').href = url;
    if (this.store.get('followedAction') === url) {
      $('paying-action').hidden = false;
      return false;
    }
    this.store.set('followedAction', url);
    setText('paying-text', t('paying.toBank'));
    location.assign(url);
    return true;
  }

  declined(hold) {
    const previous = this.store.get('payKey');
    if (previous) this.store.set('payKey', { ...previous, settled: true });
    this.showHold({ ...this.hold, ...hold });
    $('to-payment').hidden = true;
    $('payment-form').hidden = false;
    const reason = hold.last_payment_error === 'payment_intent_authentication_failure'
      ? t('held.authFailed')
      : describeError(hold.last_payment_error);
    say(reason ? t('held.declinedReason', { reason }) : t('held.declined'), 'warn');
  }

  async confirmed(hold) {
    this.stopTimer();
    const receipt = this.store.get('hold')?.receipt_key;
    await renderConfirmed(this.event, hold, receipt, readAuth(this.token, receipt), this.price);
    this.store.forgetSession();
    this.store.remove('hold');
  }

  ended(state) {
    this.stopTimer();
    const ending = holdEnding(state);
    setText('failed-title', ending.title);
    setText('failed-body', ending.body);
    $('back-to-seats').hidden = false;
    this.store.remove('hold');
    show('failed');
  }

  async release() {
    try {
      await request('DELETE', `/api/holds/${encodeURIComponent(this.hold.hold_id)}`, { token: this.token });
      this.store.remove('hold');
      this.enter();
    } catch (err) {
      say(messageFor(err.code));
    }
  }

  stopTimer() {
    clearInterval(this.timer);
    this.timer = null;
  }
}
