// The buyer's language: every language file has every English text, the language follows
// the browser's languages (Accept-Language) until the buyer picks another on the switcher,
// which is remembered; each language is spoken on the main states, with prices and numbers
// formatted by Intl for the buyer's locale and the organizer's event name shown as written.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const LOCALES = { en: 'en-US', de: 'de-DE', fr: 'fr-FR', es: 'es-ES' };

/** The dictionary of `lang` as the page loads it: English texts under the language's own. */
async function dictionary(page, lang) {
  return page.evaluate(async (code) => {
    const english = { ...(await import('/static/messages.js')).englishTexts(), ...(await import('/static/i18n/en.js')).default };
    return code === 'en' ? english : { ...english, ...(await import(`/static/i18n/${code}.js`)).default };
  }, lang);
}

const heading = (page, panel) => page.textContent(`[data-panel="${panel}"] h1`);

test('every language file has every English text, with the same placeholders', { timeout: 30000 }, async () => {
  const page = await h.openPage(browser, '/events/demo');
  const report = await page.evaluate(async () => {
    const { LANGUAGES } = await import('/static/i18n.js');
    const english = { ...(await import('/static/messages.js')).englishTexts(), ...(await import('/static/i18n/en.js')).default };
    const names = (text) => [...JSON.stringify(text).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(',');
    const out = {};
    for (const code of Object.keys(LANGUAGES)) {
      if (code === 'en') continue;
      const dict = (await import(`/static/i18n/${code}.js`)).default;
      out[code] = {
        missing: Object.keys(english).filter((k) => !(k in dict)),
        unknown: Object.keys(dict).filter((k) => !(k in english)),
        placeholders: Object.keys(english).filter((k) => k in dict && names(english[k]) !== names(dict[k])),
        plurals: Object.keys(dict).filter((k) => typeof dict[k] === 'object' && typeof dict[k].other !== 'string'),
        untranslated: Object.keys(english).filter((k) => k in dict && typeof english[k] === 'string' && english[k].length > 30 && dict[k] === english[k]),
      };
    }
    return { languages: Object.keys(LANGUAGES), out, keys: Object.keys(english).length };
  });
  assert.ok(report.languages.length >= 4, `languages: ${report.languages}`);
  assert.ok(report.keys > 150, `English has ${report.keys} texts`);
  for (const [code, r] of Object.entries(report.out)) {
    assert.deepEqual(r.missing, [], `${code}.js lacks texts`);
    assert.deepEqual(r.unknown, [], `${code}.js has texts English does not`);
    assert.deepEqual(r.placeholders, [], `${code}.js texts whose {placeholders} differ from English`);
    assert.deepEqual(r.plurals, [], `${code}.js counted texts without an "other" form`);
    assert.deepEqual(r.untranslated, [], `${code}.js texts left in English`);
  }
});

test('the language follows Accept-Language, and the switcher\'s choice is remembered', { timeout: 60000 }, async () => {
  const event = await h.createEvent('switcher');
  const context = await browser.newContext({ locale: 'es-ES' });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  const es = await dictionary(page, 'es');
  assert.equal(await page.textContent('#join'), es['landing.join']);
  assert.equal(await page.getAttribute('html', 'lang'), 'es');
  // The organizer's event name is shown as written.
  assert.equal(await page.textContent('#landing-title'), 'Page test: switcher');
  assert.equal(await page.inputValue('#language'), 'es');

  await Promise.all([page.waitForNavigation(), page.selectOption('#language', 'de')]);
  await h.waitForView(page, 'landing');
  const de = await dictionary(page, 'de');
  assert.equal(await page.textContent('#join'), de['landing.join']);
  assert.equal(await page.getAttribute('html', 'lang'), 'de');

  // Another visit in the same browser keeps the choice over the browser's languages.
  const again = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(again, 'landing');
  assert.equal(await again.textContent('#join'), de['landing.join']);
  assert.deepEqual([...page.errors, ...again.errors], []);
  await context.close();
});

/** One buyer, in one language, through waiting → offered → seats → checkout → confirmed. */
async function journey(lang) {
  const event = await h.createEvent(`lang-${lang}`, { admission: { rate_per_min: 1 } });
  // The meter's burst serves the first buyer; the second waits ahead of the page.
  await h.joinByApi(event);
  await h.joinByApi(event);
  const context = await browser.newContext({ locale: LOCALES[lang], viewport: { width: 1280, height: 900 } });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  const dict = await dictionary(page, lang);
  const seen = {};
  await h.waitForView(page, 'landing');
  seen.landing = await page.textContent('#join');
  assert.equal(seen.landing, dict['landing.join'], `${lang}: landing`);
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  seen.waiting = await heading(page, 'waiting');
  assert.equal(seen.waiting, dict['waiting.title'], `${lang}: waiting`);
  assert.equal(await page.textContent('[data-panel="waiting"] dt'), dict['waiting.ahead']);
  assert.equal(await page.textContent('#turn-notify'), dict['alerts.notify']);

  await h.setAdmission(event, { rate_per_min: 1200 });
  await h.waitForView(page, 'offered');
  seen.offered = await heading(page, 'offered');
  assert.equal(seen.offered, dict['offered.title'], `${lang}: offered`);
  assert.equal(await page.textContent('#claim'), dict['offered.claim']);
  if (lang === 'de') await h.screenshot(page, 'de-your-turn');

  await page.click('#claim');
  await h.waitForView(page, 'seats');
  await page.waitForSelector('#seat-map canvas');
  seen.seats = await heading(page, 'seats');
  assert.equal(seen.seats, dict['seats.title'], `${lang}: seat map`);
  await h.pickSeatsByKeyboard(page, 2);
  // Prices in the buyer's locale (the event's currency, USD here).
  const price = await page.evaluate((loc) => new Intl.NumberFormat(loc, { style: 'currency', currency: 'USD' }).format(90), LOCALES[lang]);
  assert.equal(await page.textContent('#selection-total'), price, `${lang}: total`);
  assert.equal(await page.textContent('#hold'), dict['hold.buttonCount'].other.replace('{n}', '2'));
  if (lang === 'de') await h.screenshot(page, 'de-seat-map');

  await h.holdSeats(page);
  seen.checkout = await heading(page, 'hold');
  assert.equal(seen.checkout, dict['held.title'], `${lang}: checkout`);
  await page.click('#to-payment');
  await page.waitForSelector('#payment-form:not([hidden])');
  assert.equal(await page.textContent('#cards label:first-child strong'), dict['card.pm_card_visa.label']);
  assert.equal(await page.textContent('#pay'), dict['held.payAmount'].replace('{amount}', price));
  await h.pay(page, 'pm_card_visa');
  await h.waitForView(page, 'confirmed', 60000);
  seen.confirmed = await heading(page, 'confirmed');
  assert.equal(seen.confirmed, dict['confirmed.title'], `${lang}: confirmed`);
  assert.equal(await page.textContent('#order-total'), price);
  if (lang === 'de') await h.screenshot(page, 'de-confirmed');
  assert.deepEqual(page.errors, []);
  await context.close();
  return seen;
}

/** Sold out, said in the language. */
async function soldOut(lang, event) {
  const context = await browser.newContext({ locale: LOCALES[lang] });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  const dict = await dictionary(page, lang);
  await page.waitForFunction(() => ['landing', 'ended'].includes(document.getElementById('app').dataset.view));
  if ((await h.view(page)) === 'landing') await page.click('#join');
  await h.waitForView(page, 'ended', 10000);
  const said = await page.textContent('#ended-title');
  assert.equal(said, dict['ended.soldOut'], `${lang}: sold out`);
  assert.equal(await page.textContent('#ended-body'), dict['ended.soldOutBody']);
  await context.close();
  return said;
}

test('each language on the main states: waiting, offered, seat map, checkout, confirmed, sold out', { timeout: 180000 }, async () => {
  const full = await h.createEvent('lang-soldout', { rows: 1, perRow: 1 });
  const seats = await h.api('GET', `/api/events/${full}/seats`);
  await h.buyByApi(full, [seats.body.seats[0].seat_id]);

  const langs = Object.keys(LOCALES);
  const seen = await Promise.all(langs.map(async (lang) => ({ ...(await journey(lang)), soldOut: await soldOut(lang, full) })));
  // The same state reads differently in each language: nothing fell back to English.
  for (const state of Object.keys(seen[0])) {
    const texts = seen.map((s) => s[state]);
    assert.equal(new Set(texts).size, langs.length, `${state}: ${texts.join(' | ')}`);
  }
});
