// The buyer's language: every text of the pages comes from one dictionary per language
// (static/i18n/LANG.js, English the reference and the fallback), and every number, price,
// duration and date is formatted by Intl for the buyer's locale. The language is the one the
// buyer chose on the switcher (kept in localStorage), else the first of the browser's
// languages (what it sends as Accept-Language) that the pages speak, else English.
// The organizer's own texts (event name, message) are never passed through here.

/** The languages the pages speak, each named in itself for the switcher. A new language is
 * its dictionary file plus its line here. */
export const LANGUAGES = {
  en: 'English',
  de: 'Deutsch',
  fr: 'Français',
  es: 'Español',
};

const CHOICE_KEY = 'floodgate:language';

function remembered() {
  try {
    return localStorage.getItem(CHOICE_KEY);
  } catch {
    return null;
  }
}

function browserTags() {
  const tags = navigator.languages?.length ? navigator.languages : [navigator.language];
  return tags.filter(Boolean).map(String);
}

/** The language code to use: the remembered choice, else the browser's first spoken one. */
export function pickLanguage(tags = browserTags(), saved = remembered()) {
  if (saved && saved in LANGUAGES) return saved;
  for (const tag of tags) {
    const base = tag.toLowerCase().split('-')[0];
    if (base in LANGUAGES) return base;
  }
  return 'en';
}

export const language = pickLanguage();

/** The browser's own tag when it names this language (de-AT keeps Austrian formats). */
export const locale = (() => {
  const own = browserTags().find((tag) => tag.toLowerCase().split('-')[0] === language);
  try {
    return Intl.getCanonicalLocales(own || language)[0];
  } catch {
    return language;
  }
})();

const english = (await import('./i18n/en.js')).default;
const dictionary = language === 'en' ? english : { ...english, ...(await import(`./i18n/${language}.js`)).default };

const plurals = new Intl.PluralRules(locale);
const numbers = new Intl.NumberFormat(locale);

export function has(key) {
  return key in dictionary;
}

/**
 * The text for `key`, with `{name}` filled from params (numbers formatted for the locale).
 * A text given as {one, other, …} is chosen by the plural rule of params.n.
 */
export function t(key, params = {}) {
  let text = dictionary[key] ?? key;
  if (typeof text === 'object') text = text[plurals.select(Number(params.n) || 0)] ?? text.other;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? shown(params[name]) : whole));
}

function shown(value) {
  return typeof value === 'number' ? numbers.format(value) : String(value);
}

export function number(n) {
  return numbers.format(n);
}

/**
 * Fills the static texts of the page: `data-i18n="key"` sets the text, `data-i18n-label`
 * the aria-label; the document's lang follows so screen readers speak the right language.
 */
export function translatePage(root = document) {
  document.documentElement.lang = language;
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
}

/** The visible language switcher: the choice is remembered and the page reloads in it (the
 * queue place, the session and the hold are all kept in storage, so nothing is lost). */
export function mountSwitcher(select) {
  if (!select) return;
  select.replaceChildren(
    ...Object.entries(LANGUAGES).map(([code, name]) => {
      const option = new Option(name, code, false, code === language);
      option.lang = code;
      return option;
    }),
  );
  select.addEventListener('change', () => {
    try {
      localStorage.setItem(CHOICE_KEY, select.value);
    } catch {
      // Storage unavailable: the choice holds for this load only.
    }
    location.reload();
  });
}
