// Per-event browser storage. The queue token and the admission session live in
// localStorage so closing and reopening the tab keeps the buyer's place.

export class EventStore {
  constructor(event) {
    this.prefix = `floodgate:${event}:`;
  }
  get(name) {
    try {
      const raw = localStorage.getItem(this.prefix + name);
      return raw === null ? null : JSON.parse(raw);
    } catch {
      return null;
    }
  }
  set(name, value) {
    try {
      localStorage.setItem(this.prefix + name, JSON.stringify(value));
    } catch {
      // Private mode or full storage: the place is kept for this tab only.
    }
  }
  remove(name) {
    try {
      localStorage.removeItem(this.prefix + name);
    } catch {
      // Nothing stored, nothing to do.
    }
  }
  /** Forget the queue place (after a lapse, a bad token or a finished purchase). */
  forgetQueue() {
    ['queue', 'joinKey', 'maxPosition'].forEach((n) => this.remove(n));
  }
  forgetSession() {
    ['session', 'holdKey', 'payKey', 'followedAction'].forEach((n) => this.remove(n));
  }
}
