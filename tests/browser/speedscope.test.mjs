// Opens the launchwatch demo's trace.json and flame.folded in speedscope (the web app its npm package
// ships) in a real headless chromium, and checks what a person would see: the profile loads without an
// import error, the kernel and scope names are listed, and a screenshot of the flame chart is kept.
//
// Speedscope draws its flame charts on a canvas, so names are read from the Sandwich view's table,
// which lists every frame of the active profile as DOM text.
//
// Environment:
//   LAUNCHWATCH_DEMO_DIR        folder holding the demo's trace.json and flame.folded (required)
//   LAUNCHWATCH_SCREENSHOT_DIR  where the PNG screenshots go (default: LAUNCHWATCH_DEMO_DIR)
//   LAUNCHWATCH_CHROMIUM        the browser to drive (default: /usr/bin/chromium, Debian's package)
import assert from 'node:assert/strict'
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import path from 'node:path'
import {after, before, test} from 'node:test'
import {chromium} from 'playwright-core'
import {serveFolders} from './serve.mjs'

const demoDir = process.env.LAUNCHWATCH_DEMO_DIR
assert.ok(demoDir, 'set LAUNCHWATCH_DEMO_DIR to a folder written by `launchwatch demo --out DIR`')
const screenshotDir = process.env.LAUNCHWATCH_SCREENSHOT_DIR || demoDir
const chromiumPath = process.env.LAUNCHWATCH_CHROMIUM || '/usr/bin/chromium'
const speedscopeApp = path.join(
  path.dirname(createRequire(import.meta.url).resolve('speedscope/package.json')),
  'dist',
  'release',
)

// Every step has its own limit well under ctest's, so a hang names the step that hung.
const stepTimeoutMs = 20_000
// Tall enough that the Sandwich table, which renders only the rows in view, shows every frame of the
// demo's profiles (43 on its device stream); a shorter table fails the checks, never passes them.
const checkViewport = {width: 1280, height: 2000}
// The demo's flame graph is a few frames deep: a short, wide picture shows it whole.
const screenshotViewport = {width: 1280, height: 250}

// Names the demo is known to issue; they guard against a demo that stops issuing them, which would
// otherwise make "every name in the file is listed" pass over an empty profile.
const someKernels = ['embed', 'layer_norm', 'softmax_rows', 'linear', 'gelu']
const someScopes = ['forward', 'layer 0', 'attention', 'mlp']

let server
let browser

before(async () => {
  server = await serveFolders({'/': speedscopeApp, '/demo/': demoDir})
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    // Chromium refuses to start as root with its sandbox on; CI runs as root.
    args: ['--no-sandbox'],
    timeout: stepTimeoutMs,
  })
})

after(async () => {
  await browser?.close()
  await server?.close()
})

// The frame names of a folded-stacks file: every ';'-separated name before each line's count.
async function foldedFrameNames(file) {
  const names = new Set()
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    const stack = line.replace(/ \d+$/, '')
    if (stack) stack.split(';').forEach(name => names.add(name))
  }
  return names
}

// The trace's complete-event names on each thread, keyed by its thread_name.
async function traceNamesByThread(file) {
  const {traceEvents} = JSON.parse(await readFile(file, 'utf8'))
  const threadName = new Map()
  for (const e of traceEvents) {
    if (e.ph === 'M' && e.name === 'thread_name') threadName.set(`${e.pid}:${e.tid}`, e.args.name)
  }
  const names = new Map()
  for (const e of traceEvents) {
    if (e.ph !== 'X') continue
    const thread = threadName.get(`${e.pid}:${e.tid}`) ?? `pid ${e.pid}, tid ${e.tid}`
    if (!names.has(thread)) names.set(thread, new Set())
    names.get(thread).add(e.name)
  }
  return names
}

// Opens one file in speedscope's Sandwich view and fails at once on any sign of a failed import.
async function openInSpeedscope(page, file) {
  const problems = []
  let problemSeen
  const failed = new Promise(resolve => (problemSeen = resolve))
  const problem = text => {
    problems.push(text)
    problemSeen()
  }
  page.on('pageerror', error => problem(`page error: ${error.message}`))
  page.on('console', message => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  // Speedscope reports a file it cannot read with alert("Unrecognized format! ...").
  page.on('dialog', async dialog => {
    problem(`dialog: ${dialog.message()}`)
    await dialog.dismiss()
  })
  const profileURL = `${server.url}/demo/${file}`
  await page.goto(`${server.url}/index.html#profileURL=${encodeURIComponent(profileURL)}&view=sandwich`)
  // The table's header is drawn once a profile is active; a failed import shows a message or an
  // alert instead, which ends the wait at once.
  const loaded = page
    .locator('th', {hasText: 'Symbol Name'})
    .or(page.getByText('Something went wrong'))
    .first()
    .waitFor()
  await Promise.race([loaded, failed])
  assert.equal(await page.getByText('Something went wrong').count(), 0, 'speedscope shows an import error')
  assert.deepEqual(problems, [], `speedscope reported problems loading ${file}`)
}

// Runs `check` on a fresh page showing `file`, closing the page however it ends.
async function withSpeedscope(file, check) {
  const page = await browser.newPage({viewport: checkViewport})
  page.setDefaultTimeout(stepTimeoutMs)
  try {
    await openInSpeedscope(page, file)
    await check(page)
  } finally {
    await page.close()
  }
}

// The symbol names the Sandwich view's table lists (its third column).
async function sandwichNames(page) {
  // The profile picker holds a hidden table too; only the Sandwich table is visible.
  const cells = page.locator('tr td:nth-child(3)').filter({visible: true})
  await cells.first().waitFor()
  return (await cells.allInnerTexts()).map(text => text.trim())
}

// Speedscope names a trace event's frame "name {args as JSON}"; a folded frame is its name alone.
function listedName(names, name) {
  return names.find(listed => listed === name || listed.startsWith(`${name} {`))
}

function assertListed(names, expected, what) {
  const missing = [...expected].filter(name => !listedName(names, name))
  assert.deepEqual(missing, [], `${what} missing from the list; it has:\n${[...names].join('\n')}`)
}

// Shows the active profile in the given view (speedscope's key: 1 time order, 2 left heavy) and
// saves a screenshot of it.
async function screenshot(page, viewKey, name) {
  await page.keyboard.press(viewKey)
  await page.setViewportSize(screenshotViewport)
  await page.locator('canvas').first().waitFor()
  // The flame chart paints on the next animation frames; give it two before capturing.
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))))
  await page.screenshot({path: path.join(screenshotDir, name)})
}

// The toolbar's title naming the profile on show (the hidden profile picker names them all too).
function shownProfile(page, title) {
  return page.getByText(title).filter({visible: true}).first()
}

// Switches to the trace's profile named `title` (speedscope's key n: next profile).
async function showProfile(page, title) {
  await page.keyboard.press('n')
  await shownProfile(page, title).waitFor()
}

test('flame.folded opens in speedscope listing every kernel and scope name', async () => {
  const expected = await foldedFrameNames(path.join(demoDir, 'flame.folded'))
  assertListed([...expected], [...someKernels, ...someScopes], 'names the demo issues are')
  await withSpeedscope('flame.folded', async page => {
    assertListed(await sandwichNames(page), expected, 'folded frames are')
    await screenshot(page, '2', 'speedscope-flame-folded.png')
  })
})

test('trace.json opens in speedscope listing the host thread scopes and launches', async () => {
  const host = (await traceNamesByThread(path.join(demoDir, 'trace.json'))).get('host thread 1')
  assert.ok(host, "the trace has no thread named 'host thread 1'")
  assertListed([...host], [...someKernels, ...someScopes], 'names the demo issues are')
  await withSpeedscope('trace.json', async page => {
    // Speedscope opens a trace on its first thread, which for the demo is the host's.
    await shownProfile(page, 'host (pid 1), host thread 1 (tid 1)').waitFor()
    assertListed(await sandwichNames(page), host, 'host thread scopes and launches are')
  })
})

test('trace.json opens in speedscope listing the device stream kernels', async () => {
  const stream = (await traceNamesByThread(path.join(demoDir, 'trace.json'))).get('stream 1')
  assert.ok(stream, "the trace has no thread named 'stream 1'")
  assertListed([...stream], someKernels, 'kernels the demo launches are')
  await withSpeedscope('trace.json', async page => {
    await showProfile(page, 'cpu device 0 (pid 2), stream 1 (tid 1)')
    assertListed(await sandwichNames(page), stream, 'device stream kernels are')
    await screenshot(page, '1', 'speedscope-trace-json.png')
  })
})
