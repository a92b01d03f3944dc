// The buyer's live line to the queue: a WebSocket while it works, polling the public queue
// snapshot (at its `retry_after_s`, longer far back) whenever it does not, and reconnection
// with jittered backoff. The page computes its place, wait and chance from the snapshot and
// its own token; it asks its per-token status only when the turn may have come. The token,
// not the socket, holds the place, so reconnecting resumes it.

import { request } from './api.js';
import { nextReadS, openingShare, preScore, tokenClaims, updateFromSnapshot, waitEstimate } from './queue-snapshot.js';

const MAX_BACKOFF_MS = 30000;

export class QueueLink {
  /**
   * onUpdate(update) receives normalized updates:
   *   {type:'position', position, estimated_wait_s, estimated_wait_range_s?, seat_chance?, seats_left?}
   *   {type:'offered', offer_expires_in_s} · {type:'admitted', admission_token, session_expires_at}
   *   {type:'status', status} · {type:'error', code} · {type:'message', message: {text, level}|null}
   * onConnection(mode) receives 'live' | 'reconnecting' | 'polling'.
   */
  constructor({ event, token, onUpdate, onConnection }) {
    this.event = event;
    this.token = token;
    this.onUpdate = onUpdate;
    this.onConnection = onConnection || (() => {});
    this.ws = null;
    this.failures = 0;
    this.stopped = false;
    this.pollTimer = null;
    this.pollDueAt = null;
    this.wsTimer = null;
    this.lastPushAt = 0;
    this.claims = tokenClaims(token);
    this.snapshot = null;
    this.etag = null;
    this.score = undefined;
    // This page's moment in the pre-queue's wake-up after the opening (`nextReadS`).
    this.openingShare = undefined;
  }

  /**
   * firstReadS: when the page already shows what a read would tell (the join's answer), the
   * seconds that answer asked it to wait before reading; without it (a reload) it reads at once.
   */
  start(firstReadS) {
    if (firstReadS > 0) this.schedulePoll(firstReadS);
    else this.poll();
    if ('WebSocket' in window) this.connect();
    else this.onConnection('polling');
    // A phone waking up or a network coming back: catch up at once instead of waiting out
    // the backoff (one buyer's early retry does not make a wave).
    this.wake = () => {
      if (this.stopped || this.isLive() || document.visibilityState === 'hidden') return;
      this.poll();
      if (!this.ws && 'WebSocket' in window) {
        clearTimeout(this.wsTimer);
        this.connect();
      }
    };
    window.addEventListener('online', this.wake);
    document.addEventListener('visibilitychange', this.wake);
  }

  stop() {
    this.stopped = true;
    window.removeEventListener('online', this.wake);
    document.removeEventListener('visibilitychange', this.wake);
    clearTimeout(this.pollTimer);
    clearTimeout(this.wsTimer);
    if (this.ws) this.ws.close(1000, 'done');
  }

  /** Sends a claim over the socket; false when the socket is not open. */
  claim() {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify({ type: 'claim' }));
      return true;
    }
    return false;
  }

  isLive() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }

  connect() {
    if (this.stopped) return;
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const url = `${scheme}://${location.host}/api/events/${encodeURIComponent(this.event)}/queue/ws?token=${encodeURIComponent(this.token)}`;
    let ws;
    try {
      ws = new WebSocket(url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    let fatal = false;
    let replaced = false;
    let plannedDelay = null;
    ws.onopen = () => {
      clearTimeout(this.pollTimer);
      this.pollDueAt = null;
      this.onConnection('live');
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg.type === 'reconnect') {
        // Graceful shutdown of this gateway: spread everyone's return over the window.
        const after = Number(msg.after_ms) || 1000;
        plannedDelay = after + Math.random() * after;
        return;
      }
      if (msg.type === 'replaced') {
        // This page opened the line again elsewhere (another tab): that socket is the live
        // one now; this page keeps up by polling instead of taking it back.
        replaced = true;
        return;
      }
      if (msg.type === 'error') fatal = true;
      // The backoff starts over only once the server has spoken (it tells a socket its place
      // at once): a gateway or proxy that accepts sockets and drops them would otherwise reset
      // it at every open and be retried every second or two by everyone.
      this.failures = 0;
      this.lastPushAt = performance.now();
      this.onUpdate(msg);
    };
    ws.onclose = () => {
      if (this.ws === ws) this.ws = null;
      if (this.stopped || fatal) return;
      // A socket that never opened missed nothing: a read already planned (the join's first)
      // keeps its time rather than coming forward for every joiner whose socket is refused.
      const next = Math.max(1, this.plannedReadInS());
      if (replaced) {
        this.onConnection('polling');
        this.schedulePoll(next);
        return;
      }
      if (plannedDelay !== null) {
        this.onConnection('reconnecting');
        this.wsTimer = setTimeout(() => this.connect(), plannedDelay);
      } else {
        this.scheduleReconnect();
      }
      this.schedulePoll(next);
    };
  }

  scheduleReconnect() {
    if (this.stopped) return;
    this.failures += 1;
    // Full jitter: a crowd that lost one gateway must not come back in one wave.
    const cap = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.failures);
    const delay = 500 + Math.random() * cap;
    this.onConnection(this.failures > 2 ? 'polling' : 'reconnecting');
    this.wsTimer = setTimeout(() => this.connect(), delay);
  }

  schedulePoll(seconds) {
    clearTimeout(this.pollTimer);
    if (this.stopped) return;
    const jitter = 0.9 + Math.random() * 0.2;
    const ms = Math.max(0.5, seconds) * 1000 * jitter;
    this.pollDueAt = performance.now() + ms;
    this.pollTimer = setTimeout(() => this.poll(), ms);
  }

  /** Seconds until the read already planned; 0 when none is. */
  plannedReadInS() {
    return this.pollDueAt === null ? 0 : Math.max(0, (this.pollDueAt - performance.now()) / 1000);
  }

  /**
   * One read of the public snapshot (a 304 reuses the last one); the per-token status only
   * when the snapshot cannot tell. Schedules the next read only while the socket is down.
   */
  async poll() {
    if (this.stopped) return;
    clearTimeout(this.pollTimer);
    this.pollDueAt = null;
    let next = 5;
    const sentAt = performance.now();
    try {
      const base = `/api/events/${encodeURIComponent(this.event)}`;
      const read = await request('GET', `${base}/queue/snapshot`, { etag: this.etag });
      if (read.status !== 304 || !this.snapshot) {
        this.snapshot = read.body;
        this.etag = read.headers.get('ETag');
      }
      const snap = this.snapshot;
      let update = updateFromSnapshot(snap, this.claims, await this.preQueueScore(snap));
      if (update) {
        const estimate = update.type === 'position' ? waitEstimate(snap, update.position) : null;
        const serverNow = Date.parse(read.headers.get('Date') || '');
        if (snap.state === 'pre_queue') this.openingShare ??= await openingShare(this.claims?.ticket);
        next = nextReadS(snap, update.position, estimate, serverNow, this.openingShare);
      } else {
        const { body } = await request('GET', `${base}/queue/status`, { token: this.token });
        next = Number(body.retry_after_s) || 5;
        update = statusToUpdate(body);
      }
      // A socket message that arrived while this answer travelled is newer news: keep it.
      if (!(this.lastPushAt > sentAt) && !this.stopped) {
        // The organizer's message rides on the snapshot (null once cleared).
        if (snap) this.onUpdate({ type: 'message', message: snap.message ?? null });
        this.onUpdate(update);
      }
    } catch (err) {
      if (err.status === 401 || err.status === 403 || err.status === 404) {
        if (!this.stopped) this.onUpdate({ type: 'error', code: err.code });
        return;
      }
      next = err.retryAfterS || 5;
    }
    if (!this.isLive()) this.schedulePoll(next);
  }

  /** A pre-queue ticket's score, from the seed every snapshot carries from the opening on. */
  async preQueueScore(snap) {
    if (!this.claims?.pre || typeof snap?.seed !== 'string') return null;
    this.score ??= await preScore(snap.seed, this.claims.ticket);
    return this.score;
  }
}

/** The status endpoint's answer in the socket's message shapes. */
export function statusToUpdate(body) {
  switch (body.status) {
    case 'waiting':
      return {
        type: 'position',
        position: body.position,
        estimated_wait_s: body.estimated_wait_s,
        estimated_wait_range_s: body.estimated_wait_range_s,
        seat_chance: body.seat_chance,
      };
    case 'offered':
      return { type: 'offered', offer_expires_in_s: body.offer_expires_in_s };
    default:
      return { type: 'status', status: body.status, position: body.position, seat_chance: body.seat_chance };
  }
}
