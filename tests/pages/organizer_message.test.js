// The organizer's message on a waiting buyer's page: set through the API, shown as written
// (text, never HTML) in a polite live region with its level's styling, cleared the same way;
// and over polling alone (WebSockets blocked), from the public snapshot.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let browser;
before(async () => { browser = await h.launch(); });
after(async () => { await browser?.close(); });

const TEXT = 'Doors open at <b>19:30</b> & the bar is <i>open</i>.';

async function waitingBuyer(event, { blockSockets = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (blockSockets) await context.addInitScript(() => { delete window.WebSocket; });
  const page = await h.openPage(browser, `/events/${event}`, { context });
  await h.waitForView(page, 'landing');
  await page.click('#join');
  await h.waitForView(page, 'waiting');
  return page;
}

for (const blockSockets of [false, true]) {
  const how = blockSockets ? 'by polling the snapshot' : 'over the socket';
  test(`a message set through the API is shown as written, then cleared (${how})`, { timeout: 90000 }, async () => {
    const event = await h.createEvent(blockSockets ? 'msgpoll' : 'msgws', { admission: { rate_per_min: 1, max_active: 1 } });
    await h.joinByApi(event); // takes the one slot (an open offer counts): the page waits
    const page = await waitingBuyer(event, { blockSockets });
    assert.equal(await page.isHidden('#organizer-message'), true, 'no message yet');

    const set = await h.setAdmission(event, { message: { text: TEXT, level: 'warning' } });
    assert.equal(set.message.text, TEXT);
    await page.waitForSelector('#organizer-message:not([hidden])', { timeout: 15000 });
    assert.equal(await page.textContent('#organizer-message-text'), TEXT, 'the text as written');
    assert.equal(await page.$$eval('#organizer-message b, #organizer-message i', (els) => els.length), 0, 'never HTML');
    assert.equal(await page.getAttribute('#organizer-message', 'data-level'), 'warning');
    assert.equal(await page.getAttribute('#organizer-message', 'aria-live'), 'polite');
    const colours = await page.$eval('#organizer-message', (el) => getComputedStyle(el).backgroundColor);
    assert.notEqual(colours, 'rgba(0, 0, 0, 0)', 'styled');

    await h.setAdmission(event, { message: { text: 'All good again.', level: 'info' } });
    await page.waitForFunction(() => document.getElementById('organizer-message-text').textContent === 'All good again.', null, { timeout: 15000 });
    assert.equal(await page.getAttribute('#organizer-message', 'data-level'), 'info');

    await h.setAdmission(event, { message: null });
    await page.waitForSelector('#organizer-message', { state: 'hidden', timeout: 15000 });
    assert.equal(await h.view(page), 'waiting', 'still in line');
    assert.deepEqual(page.errors, []);
  });
}

test('maintenance: a new buyer is refused with the organizer\'s words', { timeout: 60000 }, async () => {
  const event = await h.createEvent('maint');
  const page = await h.openPage(browser, `/events/${event}`);
  await h.waitForView(page, 'landing');
  await h.setAdmission(event, { mode: 'maintenance', message: { text: 'Back in ten minutes.', level: 'warning' } });
  await page.click('#join');
  await page.waitForSelector('#organizer-message:not([hidden])', { timeout: 15000 });
  assert.equal(await page.textContent('#organizer-message-text'), 'Back in ten minutes.');
  assert.match(await page.textContent('#alert'), /maintenance/);
  assert.equal(await h.view(page), 'landing');
  assert.deepEqual(page.errors, []);
});
