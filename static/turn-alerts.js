// Never miss a turn: a buyer who joined and went to another tab or app is told when the
// offer comes. The tab's title counts the offer down and its icon changes; a short tone plays
// if the buyer turned sound on (off by default; WebAudio, nothing fetched); and a system
// notification appears if the buyer allowed them, which the page asks only when the buyer
// presses the button shown after joining, never on load.

import { t } from './i18n.js';
import { clock } from './format.js';
import { $ } from './view.js';

const SOUND_KEY = 'floodgate:turn-sound';
const PLAIN_ICON = 'data:,';
// An amber dot: the tab strip shows at a glance which tab has a turn waiting.
const TURN_ICON =
  'data:image/svg+xml,' +
  encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#f0a500" stroke="#8a5a00" stroke-width="2"/></svg>');

export class TurnAlerts {
  constructor({ event }) {
    this.event = event;
    this.eventName = event;
    this.timer = null;
    this.notification = null;
    this.audio = null;
    this.plainTitle = document.title;
    $('turn-notify').addEventListener('click', () => this.askPermission());
    const sound = $('turn-sound');
    sound.checked = soundWanted();
    sound.addEventListener('change', () => {
      try {
        localStorage.setItem(SOUND_KEY, sound.checked ? 'on' : 'off');
      } catch {
        // Storage unavailable: the choice holds for this page.
      }
      // A click is the gesture a browser wants before a page may make sound: open the
      // audio now, so the tone can play later while the buyer is elsewhere.
      if (sound.checked) this.unlockAudio();
    });
  }

  /** The buyer's own name for the page title: the organizer's event name, as written. */
  setEventName(name) {
    this.eventName = name || this.event;
    this.plainTitle = t('page.titleEvent', { event: this.eventName });
  }

  /** After joining: offer the alerts (the notification permission only on the button). */
  joined() {
    $('turn-alerts').hidden = false;
    this.renderPermission();
  }

  renderPermission() {
    const button = $('turn-notify');
    const status = $('turn-notify-status');
    if (!('Notification' in window)) {
      button.hidden = true;
      status.textContent = t('alerts.notifyUnsupported');
      return;
    }
    button.hidden = Notification.permission !== 'default';
    status.textContent =
      Notification.permission === 'granted' ? t('alerts.notifyOn') : Notification.permission === 'denied' ? t('alerts.notifyDenied') : '';
  }

  async askPermission() {
    if (!('Notification' in window)) return;
    try {
      await Notification.requestPermission();
    } catch {
      // Older browsers answer through a callback only; the state is read below either way.
    }
    this.renderPermission();
  }

  /** The offer came: title countdown, icon, tone and notification. */
  offered(deadline) {
    $('turn-alerts').hidden = true;
    this.stopTitle();
    setIcon(TURN_ICON);
    const update = () => {
      document.title = t('alerts.tabTitle', { clock: clock(deadline.remaining()), event: this.eventName });
    };
    update();
    // Background tabs run timers at most once a second anyway.
    this.timer = setInterval(update, 1000);
    if (soundWanted()) this.playTone();
    this.notify(deadline);
  }

  notify(deadline) {
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    // Someone looking at this page sees the offer already.
    if (document.visibilityState === 'visible' && document.hasFocus()) return;
    try {
      this.notification = new Notification(t('alerts.notificationTitle'), {
        body: t('alerts.notificationBody', { clock: clock(deadline.remaining()), event: this.eventName }),
        tag: `floodgate-turn-${this.event}`,
        requireInteraction: true,
      });
      this.notification.onclick = () => {
        window.focus();
        this.notification?.close();
      };
    } catch {
      // Some browsers allow notifications from service workers only; the title still tells.
    }
  }

  /** Claimed, lapsed, ended or left: the plain title and icon again. */
  over() {
    $('turn-alerts').hidden = true;
    this.stopTitle();
    setIcon(PLAIN_ICON);
    document.title = this.plainTitle;
    this.notification?.close();
    this.notification = null;
  }

  stopTitle() {
    clearInterval(this.timer);
    this.timer = null;
  }

  unlockAudio() {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return null;
    this.audio ??= new Context();
    if (this.audio.state === 'suspended') this.audio.resume().catch(() => {});
    return this.audio;
  }

  /** Three short rising tones, made here (no file to fetch). */
  playTone() {
    const ctx = this.unlockAudio();
    if (!ctx) return;
    const start = ctx.currentTime + 0.05;
    [660, 880, 1100].forEach((hz, i) => {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.frequency.value = hz;
      const at = start + i * 0.22;
      gain.gain.setValueAtTime(0.0001, at);
      gain.gain.exponentialRampToValueAtTime(0.2, at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.2);
      osc.connect(gain).connect(ctx.destination);
      osc.start(at);
      osc.stop(at + 0.21);
    });
  }
}

function soundWanted() {
  try {
    return localStorage.getItem(SOUND_KEY) === 'on';
  } catch {
    return false;
  }
}

function setIcon(href) {
  const link = $('favicon');
  if (link && link.getAttribute('href') !== href) link.setAttribute('href', href);
}
