// Opens a Superset dashboard in headless Chromium (Debian's package) as a
// logged-in user, waits for its charts, saves a screenshot and prints the
// HTTP status of every chart-data request the page made, as JSON. Run by
// tests/clients/python/test_superset.py:
//   node superset_dashboard.mjs <superset base URL> <dashboard id> <png path>
import { chromium } from 'playwright-core';

const [, , base, dashboard, shot] = process.argv;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const statuses = [];
  page.on('response', (r) => {
    if (r.url().includes('/api/v1/chart/data')) statuses.push(r.status());
  });
  // Flask-AppBuilder's form login; the session cookie stays in the context.
  await page.request.post(`${base}/login/`, { form: { username: 'admin', password: 'admin' } });
  await page.goto(`${base}/superset/dashboard/${dashboard}/`, { waitUntil: 'networkidle', timeout: 120000 });
  const deadline = Date.now() + 60000;
  while (statuses.length < 3 && Date.now() < deadline) await page.waitForTimeout(500);
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: shot, fullPage: true });
  // A chart whose data came back but that could not draw it shows this.
  const errors = await page.getByText('Data error').count();
  console.log(JSON.stringify({ statuses, errors, title: await page.title() }));
} finally {
  await browser.close();
}
