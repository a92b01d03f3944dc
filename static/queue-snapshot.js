// A buyer's place, wait and chance of a seat, computed on the page from the public queue
// snapshot (the same for everyone, cacheable) and the buyer's own signed queue token: the
// gateway does per-buyer work only when the turn may have come. The formulas are the server's
// (admission/src/status.rs and chance.rs), so the page and `…/queue/status` agree.

/** The queue token's claims (its payload is readable; the server checks the signature). */
export function tokenClaims(token) {
  try {
    const part = String(token).split('.')[1];
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
    const c = JSON.parse(atob(b64));
    return { seq: Number(c.seq), pre: !!c.pre, epoch: c.ep, ticket: c.tid };
  } catch {
    return null;
  }
}

/**
 * A pre-queue ticket's score: the top 52 bits of HMAC-SHA256(seed, ticket) as a fraction in
 * [0, 1) (admission/src/fairness.rs `pre_score`). `null` where WebCrypto is missing (a plain
 * HTTP page away from localhost): the page then asks the server.
 */
export async function preScore(seed, ticket) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) return null;
  const enc = new TextEncoder();
  const key = await subtle.importKey('raw', enc.encode(seed), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = await subtle.sign('HMAC', key, enc.encode(ticket));
  const top = new DataView(mac).getBigUint64(0) >> 12n;
  return Number(top) / 2 ** 52;
}

/**
 * Where in the opening's spread this ticket's page wakes, in [0, 1): the top 53 bits of
 * SHA-256 of the ticket id, the moment the server's status answers give it too (opening.rs);
 * a random one where the browser has no Web Crypto.
 */
export async function openingShare(ticket) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle || typeof ticket !== 'string') return Math.random();
  const digest = await subtle.digest('SHA-256', new TextEncoder().encode(ticket));
  return Number(new DataView(digest).getBigUint64(0) >> 11n) / 2 ** 53;
}

/** Priority places are numbered from 2^50 (admission/src/entry.rs `PRIORITY_BASE`). */
const PRIORITY_BASE = 2 ** 50;

/**
 * Buyers ahead of this token by the snapshot, or `null` when the snapshot cannot tell (the
 * turn may have come, the place was re-registered in a new epoch, the pre-queue score is
 * unknown, or the place is in the priority lane, whose line the snapshot's frontiers do not
 * describe). FIFO places are exact; pre-queue places are the expected rank among the pre-queue
 * still waiting, between the served frontier and 1.
 */
export function placeFromSnapshot(snap, claims, score) {
  if (!snap || !claims || !snap.opened || snap.epoch !== claims.epoch) return null;
  if (claims.seq >= PRIORITY_BASE) return null;
  const left = Number(snap.prequeue_left) || 0;
  if (!claims.pre) {
    const served = Number(snap.fifo_served_through) || 0;
    return claims.seq > served ? left + claims.seq - served - 1 : null;
  }
  if (typeof score !== 'number') return null;
  const frontier = typeof snap.prequeue_served_through === 'number' ? snap.prequeue_served_through : 0;
  if (score <= frontier || left === 0) return null;
  return Math.floor((left * (score - frontier)) / (1 - frontier));
}

/** Seconds a page at the front may take to hear of its offer (wait.rs `HEARD_WITHIN_S`). */
const HEARD_WITHIN_S = 3;
/** The least either end of the range lies from the point (wait.rs `STEP_S`). */
const STEP_S = 5;
/** `W`'s two ends further apart than this give no wait beyond the free places (wait.rs). */
const MAX_HELD_RATIO = 2.5;

/**
 * [point, low, high] seconds for `position` ahead, or null (wait.rs `wait_estimate`): the
 * first offers go out at the rate while the cap has free places, the rest as places free, at
 * most `size ÷ held` a second, the point from the long `held`; the range is the point ÷ and ×
 * (1 + r), r the half-distance to the short end and two count errors in quadrature, neither
 * end nearer the point than `STEP_S` (the low end stops at zero), the high end later by the
 * seconds a page at the front takes to hear of its offer; null while offers are held, or beyond
 * the free places before the time a place is held is known.
 */
export function waitEstimate(snap, position) {
  const cap = snap?.cap;
  const rate = (Number(cap?.offer_rate_per_min) || 0) / 60;
  if (!cap || rate <= 0 || typeof position !== 'number') return null;
  const need = position + 1;
  const first = Math.min(need, Number(cap.free) || 0);
  const byRate = first / rate;
  const beyond = need - first;
  let fast = 0;
  let slow = 0;
  let spread = 0.1;
  if (beyond > 0) {
    const held = cap.held_s;
    if (!Array.isArray(held) || !(held[0] > 0) || held[1] > held[0] * MAX_HELD_RATIO) return null;
    const size = Math.max(1, Number(cap.size) || 0);
    fast = beyond / Math.min(rate, size / held[0]);
    slow = beyond / Math.min(rate, size / held[1]);
    spread = typeof cap.held_spread === 'number' ? cap.held_spread : 0.1;
  }
  spread = Math.min(0.4, Math.max(0.1, spread));
  const point = byRate + slow;
  const betweenEnds = point > 0 ? (slow - fast) / 2 / point : 0;
  const counted = 2 * spread;
  const r = Math.sqrt(betweenEnds * betweenEnds + counted * counted);
  const low = Math.floor(Math.max(0, Math.min(point / (1 + r), point - STEP_S)));
  const high = Math.ceil(Math.max(point * (1 + r), point + STEP_S) + HEARD_WITHIN_S);
  return [Math.ceil(point), low, high];
}

/** Φ(z), Abramowitz and Stegun 7.1.26, as chance.rs computes it. */
function normalCdf(z) {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? 0.5 * (1 + erf) : 0.5 * (1 - erf);
}

/**
 * The chance (0–1, two decimals) that `position` buyers ahead leave a seat, as chance.rs states
 * it: certain within the places the seats cover, the model's once it rests on evidence,
 * otherwise `null` (not known yet).
 */
export function seatChance(snap, position) {
  if (!snap || typeof position !== 'number') return null;
  if (snap.state === 'sold_out') return 0;
  if (snap.state !== 'open' && snap.state !== 'paused') return null;
  const m = snap.seat_model;
  if (!m) return null;
  if (position < (Number(m.sure_places) || 0)) return 1;
  if (!m.known) return null;
  const mean = m.seats_for_queue - position * m.per_place - 0.5;
  // The race for the last seats counts only where seats are expected to be left (chance.rs).
  const race = mean >= 0 ? Number(m.race_var) || 0 : 0;
  const variance = m.base_var + race + position * m.per_place_var + position * position * m.estimate_var;
  return Math.round(normalCdf(mean / Math.sqrt(Math.max(variance, 1e-9))) * 100) / 100;
}

/**
 * Seconds until the next snapshot read: the snapshot's own, longer far back but never past its
 * `read_within_s`, the spacing at which the whole crowd reads as often as the front can answer
 * (status.rs), nor past half the soonest the offer may come: the range's low end, or before
 * the wait is known the place at the offer rate (wait.rs `soonest_offer_s`). Paused or sold
 * out, the crowd keeps the same spacing by place (a pause may last minutes, and tabs stay open
 * after a sell-out), within half the soonest its offer could come once offers resume at the
 * rate set: the front reads at the snapshot's own interval, far back within `read_within_s`.
 * Before the opening, a second past it plus this page's `ticketShare` (0–1, `openingShare` of
 * its ticket) of the snapshot's `opening_spread_s` (offers start then and last only the offer's
 * seconds, and the whole pre-queue waking in one second would be the storm's worst), judged by
 * `serverNowMs` (the answer's Date header), never later than the snapshot's own interval
 * (opening.rs).
 */
export function nextReadS(snap, position, estimate, serverNowMs, ticketShare = 0) {
  const floor = Number(snap?.retry_after_s) || 5;
  if (snap?.state === 'pre_queue') {
    const opens = Date.parse(snap.opens_at || '');
    if (!Number.isFinite(opens) || !Number.isFinite(serverNowMs)) return floor;
    // Opened by the clock, yet told "pre-queue" (a tick behind, or a cached copy): the page's
    // moment was already waited for.
    if (serverNowMs >= opens) return 1;
    const untilS = Math.floor((opens - serverNowMs) / 1000);
    const share = Math.min(Math.max(Number(ticketShare) || 0, 0), 1);
    const moment = Math.floor(share * (Number(snap.opening_spread_s) || 0));
    return Math.min(untilS + 1 + moment, floor);
  }
  if (!['open', 'paused', 'sold_out'].includes(snap?.state) || typeof position !== 'number') return floor;
  const within = Math.min(Math.max(Number(snap.read_within_s) || 120, 2), 120);
  let byPlace = Math.min(2 + Math.floor(position / 100), within);
  // Open, offers go out at the meter's rate of the moment; held, they resume at the rate set.
  const perMin = snap.state === 'open' ? snap.cap?.offer_rate_per_min : snap.rate_per_min;
  const rate = (Number(perMin) || 0) / 60;
  const soonest = estimate ? estimate[1] : rate > 0 ? Math.floor((position + 1) / rate) : null;
  if (soonest !== null) byPlace = Math.min(byPlace, Math.max(Math.floor(soonest / 2), 1));
  return Math.max(floor, byPlace);
}

/**
 * What the snapshot tells this buyer, in the socket's message shapes; `null` when only the
 * server can say (then the page asks `…/queue/status` once).
 */
export function updateFromSnapshot(snap, claims, score) {
  if (!snap) return null;
  if (snap.state === 'closed') return { type: 'status', status: 'closed' };
  if (!snap.opened) return claims?.pre ? { type: 'status', status: 'pre_queue' } : null;
  const position = placeFromSnapshot(snap, claims, score);
  if (position === null) return null;
  // Near the front the page asks the server, which knows of its offer to the second.
  const perPoll = ((Number(snap.outflow_per_min) || 0) / 60) * 4;
  if (position < Math.max(3, perPoll)) return null;
  if (snap.state === 'sold_out') return { type: 'status', status: 'sold_out', position };
  const chance = seatChance(snap, position);
  if (snap.state === 'paused') return { type: 'status', status: 'paused', position, seat_chance: chance };
  const estimate = waitEstimate(snap, position);
  return {
    type: 'position',
    position,
    estimated_wait_s: estimate ? estimate[0] : null,
    estimated_wait_range_s: estimate ? [estimate[1], estimate[2]] : null,
    seat_chance: chance,
    seats_left: snap.seats_left,
  };
}
