// Polite announcements for screen readers. A queue position or a countdown changes every
// second; read out each time, it would drown everything else. An Announcer speaks through one
// aria-live="polite" region, at most once per `gapMs` unless a change matters at once (the
// turn has come, the last seconds), so a listener hears calm, current news.

export const ANNOUNCE_GAP_MS = 10000;

export class Announcer {
  /** region: the aria-live element; now: the clock (performance.now, or a test's own). */
  constructor(region, { gapMs = ANNOUNCE_GAP_MS, now = () => performance.now() } = {}) {
    this.region = region;
    this.gapMs = gapMs;
    this.now = now;
    this.last = -Infinity;
  }

  /** Says text unless something was said less than gapMs ago; urgent news always goes out. */
  say(text, { urgent = false } = {}) {
    const at = this.now();
    if (!urgent && at - this.last < this.gapMs) return false;
    if (this.region.textContent === text) return false;
    this.last = at;
    this.region.textContent = text;
    return true;
  }

  /** Forgets the last announcement time (a new panel starts its own rhythm). */
  reset() {
    this.last = -Infinity;
  }
}
