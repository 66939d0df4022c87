// lib.mjs — what the browser tests share (pages.mjs, history.mjs,
// explorer_s3.mjs, group_look.mjs): Debian's headless Chromium launched
// offline, a bounded polling wait, a timestamped log, and the freshet stages
// a test runs as child processes on loopback.
//
// Invariants: the browser never leaves the machine. Its resolver maps every
// name but 127.0.0.1 and localhost to NOTFOUND, and every request that is
// not data:, blob: or to 127.0.0.1 is aborted and recorded in offBox (the
// caller fails the test when offBox is not empty). waitFor always ends: it
// throws after timeoutMs. Stages are children of the test's own process,
// stopped by their pid (SIGINT or the signal given, then SIGKILL after 20 s).
//
// Threads: none; everything runs on node's event loop. playwright-core is
// imported only when a browser is launched, so a test can skip (exit 77)
// before anything needs tests/browser/node_modules.
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-default-apps', '--disable-extensions', '--metrics-recording-only',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
];

export const sleep = ms => new Promise(r => setTimeout(r, ms));

const t0 = Date.now();
// A line on stdout, stamped with the seconds since the test started.
export const log = msg => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

let failed = 0;
// A failed check: counted (failures()) and logged.
export function fail(msg) {
    failed++;
    log(`FAIL: ${msg}`);
}
// Log "ok: what" or count and log "FAIL: what — detail" (a string as is,
// anything else as JSON). Returns ok.
export function check(ok, what, detail) {
    if (ok) {
        log(`ok: ${what}`);
    } else {
        fail(`${what}${detail === undefined ? '' : ` — ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
    }
    return ok;
}
// How many checks failed so far.
export const failures = () => failed;

// Calls fn every everyMs until it returns a truthy value (returned), for at
// most timeoutMs; an exception from fn counts as "not yet" and its message
// is given in the timeout's error.
export async function waitFor(what, fn, timeoutMs = 30000, everyMs = 250) {
    const end = Date.now() + timeoutMs;
    let last;
    while (Date.now() < end) {
        try {
            last = await fn();
            if (last) {
                return last;
            }
        } catch (err) {
            last = err;
        }
        await sleep(everyMs);
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

// Chromium in a fresh profile under dir, offline. Returns the context, its
// first page, the page's script errors (pageerror, as they come), the list
// of requests that tried to leave 127.0.0.1 (aborted) and the count of
// requests let through.
export async function launchOffline(dir, viewport = {width: 1440, height: 1000}) {
    const {chromium} = await import('playwright-core');
    const profile = fs.mkdtempSync(path.join(dir, 'profile-'));
    const ctx = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS,
        viewport, deviceScaleFactor: 1, timezoneId: 'UTC',
    });
    const offBox = [];
    const seen = {loopback: 0};
    await ctx.route('**/*', route => {
        const u = new URL(route.request().url());
        if (u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1') {
            seen.loopback++;
            return route.continue();
        }
        offBox.push(u.href);
        return route.abort('blockedbyclient');
    });
    const page = ctx.pages()[0] || (await ctx.newPage());
    const errors = [];
    page.on('pageerror', e => errors.push(`pageerror: ${e.message}`));
    return {ctx, page, errors, offBox, seen, profile};
}

// Exit 77 (skip) when what a test needs is missing: Debian's chromium,
// tests/browser/node_modules (playwright-core), the given web/vendor files
// (paths under source), the freshet binary (when given).
export function skipUnlessReady(here, {source = null, vendor = [], binary = null} = {}) {
    const skip = why => {
        console.log(`skip: ${why}`);
        process.exit(77);
    };
    if (!fs.existsSync(CHROMIUM)) {
        skip(`${CHROMIUM} is missing (scripts/setup.sh --test installs Debian's chromium)`);
    }
    if (!fs.existsSync(path.join(here, 'node_modules/playwright-core'))) {
        skip('tests/browser/node_modules is missing (scripts/setup.sh --test runs npm install there)');
    }
    if (vendor.some(f => !fs.existsSync(path.join(source, f)))) {
        skip('web/vendor is missing (scripts/setup.sh runs scripts/web-setup.sh)');
    }
    if (binary && !fs.existsSync(binary)) {
        skip(`no freshet binary at ${binary}`);
    }
}

// The freshet stages of one test: `binary --data DIR argv...`, stdout and
// stderr to OUT/NAME.log, stdout also kept to find the "listening URL" line.
export function stageRunner(binary, out, defaultData) {
    const stages = new Map();

    function startStage(name, argv, dataDir = defaultData) {
        const logFile = path.join(out, `${name}.log`);
        const fd = fs.openSync(logFile, 'a');
        const child = spawn(binary, ['--data', dataDir, ...argv], {stdio: ['ignore', 'pipe', fd]});
        const st = {name, child, stdout: '', exited: null};
        child.stdout.on('data', b => {
            st.stdout += b;
            fs.appendFileSync(logFile, b);
        });
        child.on('exit', (code, sig) => {
            st.exited = {code, sig};
        });
        fs.closeSync(fd);
        stages.set(name, st);
        log(`started ${name} (pid ${child.pid}): freshet ${argv.join(' ')}`);
        return st;
    }

    async function stopStage(name, signal = 'SIGINT') {
        const st = stages.get(name);
        if (!st || st.exited) {
            return st ? st.exited : null;
        }
        st.child.kill(signal);
        try {
            await waitFor(`${name} to exit`, () => st.exited, 20000, 50);
        } catch {
            log(`${name} did not stop on ${signal}; SIGKILL pid ${st.child.pid}`);
            st.child.kill('SIGKILL');
            await waitFor(`${name} to die`, () => st.exited, 5000, 50);
        }
        log(`stopped ${name}: ${JSON.stringify(st.exited)}`);
        return st.exited;
    }

    // The URL a stage prints as "listening URL" on its first stdout line.
    async function listening(name) {
        const st = stages.get(name);
        const m = await waitFor(`${name} to listen`, () => {
            if (st.exited) {
                throw new Error(`${name} exited ${JSON.stringify(st.exited)} (see ${name}.log)`);
            }
            return /listening (http:\/\/\S+)/.exec(st.stdout);
        }, 20000, 50);
        return new URL(m[1]);
    }

    return {stages, startStage, stopStage, listening};
}
