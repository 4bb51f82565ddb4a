// A user signing in with headless Chromium (driven by puppeteer-core): opens
// URL, fills oidc-provider's login page (any login, any password), presses
// Continue on its consent page, and follows the redirects to their end.
//
// Usage: node signin.mjs URL   (settings in the environment)
//   PUPPETEER_MODULE  the puppeteer-core package directory (.peers/oidc/...)
//   CHROMIUM          the browser (Debian's /usr/bin/chromium)
//   SIGNIN_PROFILE    the browser profile: the provider's session cookie
//                     lives there, so a second sign-in skips the login page
//   SIGNIN_ACCOUNT    the login to type (default alice)
//   SIGNIN_STOP_AT    optional: the redirect URI; the navigation to it is
//                     not loaded but printed on stdout (a client without a
//                     loopback receiver reads the code from it)
//   SIGNIN_REPORT     optional: a file the pages seen are appended to, one
//                     JSON line per sign-in ({"pages": [...], "text": ...})
//   SIGNIN_ABORT      optional: on a device sign-in's confirmation page,
//                     press Abort instead of Continue
// Requests off loopback are refused (the login page imports a web font).

import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const env = process.env;
const { default: puppeteer } = await import(pathToFileURL(join(env.PUPPETEER_MODULE, 'lib/esm/puppeteer/puppeteer-core.js')).href);
const [url] = process.argv.slice(2);
const stopAt = env.SIGNIN_STOP_AT;

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  userDataDir: env.SIGNIN_PROFILE,
  // The provider's test certificate is not one the browser knows.
  acceptInsecureCerts: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--ignore-certificate-errors'],
});
const pages = [];
let stopped;
try {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    const target = request.url();
    if (stopAt && target.startsWith(stopAt)) {
      stopped = target;
      return request.abort();
    }
    const { hostname } = new URL(target);
    return hostname === '127.0.0.1' || hostname === 'localhost' ? request.continue() : request.abort();
  });
  const settled = (navigation) => navigation.catch((error) => {
    if (!stopped) throw error;
  });
  // A page that posts itself on load (the device flow's form_post) is
  // replaced while it is read: read the next one.
  const find = async (selector) => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await page.$(selector);
      } catch (error) {
        if (attempt > 10 || !/context/i.test(String(error))) throw error;
        // The next page may have loaded already: poll, briefly.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  await settled(page.goto(url, { waitUntil: 'load' }));
  for (let step = 0; step < 8 && !stopped; step += 1) {
    if (await find('form[id="op.deviceConfirmForm"], form[id="op.deviceInputForm"]')) {
      // A device sign-in: the code is in the URL; its first button goes on
      // (SIGNIN_ABORT: the Abort button).
      pages.push('device');
      if (env.SIGNIN_ABORT) {
        await settled(Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[name=abort]')]));
        break;
      }
    } else if (await find('input[name=login]')) {
      pages.push('login');
      await page.type('input[name=login]', env.SIGNIN_ACCOUNT || 'alice');
      await page.type('input[name=password]', 'any password');
    } else if (await find('input[name=prompt][value=consent]')) {
      pages.push('consent');
    } else {
      break;
    }
    await settled(Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]));
  }
  const text = stopped ? '' : await page.evaluate(() => document.body?.innerText ?? '');
  if (env.SIGNIN_REPORT) appendFileSync(env.SIGNIN_REPORT, `${JSON.stringify({ pages, text })}\n`);
  if (stopAt && !stopped) throw new Error(`the sign-in ended at ${page.url()} without reaching ${stopAt}: ${text}`);
  if (stopped) console.log(stopped);
} finally {
  await browser.close();
}
