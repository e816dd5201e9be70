import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { projectRoot } from '../../src/paths';
import { resolveChromium } from '../../src/stack/tools';

/**
 * The browser tests' Chromium, driven by Playwright (`playwright-core`, which
 * downloads no browser): the one `npm run tools -- ensure` resolved (CHROMIUM_PATH,
 * then PATH), headless, with a fresh profile and none of Chromium's own
 * background traffic, which a closed network refuses.
 */
export async function launchBrowser(): Promise<Browser> {
  const resolved = await resolveChromium({ build: false });
  if (!resolved) throw new Error('no Chromium here: run `npm run tools -- ensure` (as root it installs Debian\'s chromium) or set CHROMIUM_PATH');
  return chromium.launch({
    executablePath: resolved.path,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** Where the browser tests write their screenshots (ignored by git). */
export function screenshotPath(name: string): string {
  const dir = path.join(projectRoot, '.data', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}
