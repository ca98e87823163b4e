"use strict";
// The arena's pages: each page's shell comes from the server, and this script fills it from
// the JSON API of the same origin (the sign-in cookie goes with each request), then keeps it
// live by polling. Every text from the API (a bot's name, an author's, a reason, a log) goes
// in as text (`el` appends text nodes, `textContent`), never parsed as HTML.

const POLL_MS = 1500;
const BOT_POLL_MS = 5000;

// The states of a version, in words.
const STATES = {
  queued: "queued: waiting for the intake",
  building: "building",
  validating: "validating",
  placing: "placing: playing its first matches",
  rated: "rated: on the ladder",
  failed: "failed",
  suspended: "suspended",
  retired: "retired: replaced by a newer version",
};
// A version the intake or the ladder may still move on.
const MOVING = new Set(["queued", "building", "validating", "placing"]);

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// An element with attributes and children: a string child becomes a text node.
function el(tag, attributes = {}, ...children) {
  return fill(document.createElement(tag), attributes, children);
}

function svg(tag, attributes = {}, ...children) {
  return fill(document.createElementNS("http://www.w3.org/2000/svg", tag), attributes, children);
}

function fill(node, attributes, children) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined && value !== false) {
      node.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

function byId(id) {
  return document.getElementById(id);
}

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { Accept: "application/json", ...(options.headers ?? {}) },
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const said = data && typeof data.error === "string" ? data.error : response.statusText;
    throw new ApiError(response.status, said);
  }
  return data;
}

function post(path, body) {
  const headers = { "X-CSRF-Token": csrfToken() };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
  }
  const sent = body === undefined ? undefined : JSON.stringify(body);
  return api(path, { method: "POST", headers, body: sent });
}

// What a failed request means to the reader, in one sentence: `retrying` when the page asks
// again by itself (a poll), else the reader is told to try again.
function sentence(error, retrying = false) {
  if (!(error instanceof ApiError)) {
    const next = retrying ? "asking again" : "try again";
    return `The arena could not be reached (${error.message}); ${next}.`;
  }
  if (error.status === 403) {
    return `Refused: ${error.message}.`;
  }
  if (error.status === 401) {
    return `Sign in to see this: ${error.message}.`;
  }
  return `${error.message}.`;
}

function say(id, text) {
  const node = byId(id);
  if (node) {
    node.textContent = text ?? "";
    node.hidden = !text;
  }
}

// A failed request's line in `id` (`sentence`). Refused for want of a sign-in, the reader is
// told why, with a link that signs in and comes back here: a page made for someone signed
// in whose sign-in has ended since (signed out in another browser or by the organiser, or
// expired) says so.
function sayFailed(id, error, retrying = false) {
  const node = byId(id);
  if (!node) {
    return;
  }
  if (!(error instanceof ApiError && error.status === 401)) {
    say(id, sentence(error, retrying));
    return;
  }
  const here = `${window.location.pathname}${window.location.search}`;
  const link = el("a", { class: "sign-in-again", href: `/signin?next=${encodeURIComponent(here)}` }, "Sign in");
  const why =
    byId("me") === null
      ? "Sign in to see this: "
      : "You are signed out: your sign-in here has ended (signed out from another browser or by the organiser, or not used for too long). ";
  node.replaceChildren(why, link, byId("me") === null ? " with your token." : " again to go on.");
  node.hidden = false;
}

// Calls `load` now and again `every` ms after it ends, until it returns false; not while
// the page is hidden (a tab left open in the background asks nothing).
function poll(load, problem = "problem", every = POLL_MS) {
  async function tick() {
    if (document.hidden) {
      document.addEventListener("visibilitychange", tick, { once: true });
      return;
    }
    let again = true;
    try {
      again = (await load()) !== false;
      say(problem, "");
    } catch (error) {
      sayFailed(problem, error, true);
      // A refusal or a missing thing will not change by asking again.
      again = !(error instanceof ApiError && [401, 403, 404].includes(error.status));
    }
    if (again) {
      setTimeout(tick, every);
    }
  }
  tick();
}

function botLink(name) {
  return el("a", { href: `/bots/${encodeURIComponent(name)}` }, name);
}

function matchLink(key) {
  return el("a", { href: `/matches/${encodeURIComponent(key)}` }, key);
}

// A running match's link, to watch it as it is played (`live.js`).
function watchLink(key) {
  return el("a", { href: `/matches/${encodeURIComponent(key)}`, class: "watch", title: `watch ${key}` }, "watch");
}

// The keys of the running matches of each bot, for a signed-in reader (none for another).
async function playingNow() {
  const playing = new Map();
  if (byId("me") === null) return playing;
  for (const match of (await api("/api/running")).running) {
    for (const bot of new Set(match.seats.map((seat) => seat.bot))) {
      playing.set(bot, [...(playing.get(bot) ?? []), match.key]);
    }
  }
  return playing;
}

// A bot's running matches to watch, after its name.
function watchLinks(playing, bot) {
  return (playing.get(bot) ?? []).flatMap((key) => [" ", watchLink(key)]);
}

// A number as the tables show it, with a minus sign rather than a hyphen.
function number(value, digits = 0) {
  if (value === null || value === undefined) {
    return "–";
  }
  const shown = Number(value).toFixed(digits);
  return shown.startsWith("-") ? `−${shown.slice(1)}` : shown;
}

// A rating and its margin (anything with `rating` and `margin`), as the pages show them.
function withMargin(rated) {
  return `${number(rated.rating)} ± ${number(rated.margin)}`;
}

// A moment (an ISO time from the API, or a Date) in the reader's time zone, the zone named:
// every time the pages show is shown by this.
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  timeZoneName: "short",
});

function shortTime(moment) {
  if (!moment) {
    return "–";
  }
  const date = moment instanceof Date ? moment : new Date(moment);
  return Number.isNaN(date.getTime()) ? "–" : LOCAL_TIME.format(date);
}

// A version's state in words: a queued one's with its place in the intake's line, if known.
function stateText(state, place = null) {
  if (state === "queued" && place !== null && place !== undefined) return `queued: number ${place} in line for the intake`;
  return STATES[state] ?? state;
}

function stateCell(state, place = null) {
  return el("td", { class: `state state-${state}`, "data-state": state }, stateText(state, place));
}

function cell(value, numeric = false) {
  return el("td", numeric ? { class: "number" } : {}, value);
}

function seatsText(seats) {
  return seats.map((seat) => `${seat.bot}.${seat.version} (${seat.role})`).join(" vs ");
}

// A match's seats, each linking to its bot's page.
function seatsCell(seats) {
  const parts = seats.flatMap((seat, i) => [
    i > 0 ? " vs " : "",
    botLink(seat.bot),
    `.${seat.version} (${seat.role})`,
  ]);
  return el("td", { class: "seats" }, parts);
}

// A finished match as the lists show it; its result is `name`'s if a bot is named, else
// the match's summary.
function matchRow(match, name) {
  return el(
    "tr",
    { "data-match": match.key },
    el("td", {}, matchLink(match.key)),
    cell(match.game),
    seatsCell(match.seats),
    name ? resultCell(match, name) : cell(match.summary),
    el("td", { class: "time" }, shortTime(match.finished_at)),
  );
}

// The leaderboard: the bots on the ladder, best first; the suspended apart, under it.
async function showLeaderboard() {
  const [data, playing] = await Promise.all([api("/api/leaderboard"), playingNow()]);
  const listed = data.leaderboard.filter((entry) => entry.state !== "suspended");
  const suspended = data.leaderboard.filter((entry) => entry.state === "suspended");
  const rows = listed.map((entry) => {
    const change = entry.change_day;
    const moved = change === null || change === undefined ? null : Number(change);
    const changeClass = moved === null ? "number" : moved >= 0 ? "number up" : "number down";
    const changed = moved === null ? "–" : `${moved >= 0 ? "+" : ""}${number(moved, 1)}`;
    const rated = entry.rating !== null && entry.rating !== undefined;
    const last = entry.last_match;
    return el(
      "tr",
      { "data-bot": entry.bot, "data-state": entry.state },
      cell(entry.rank ?? "–", true),
      el("td", {}, botLink(entry.bot), el("span", { class: "version" }, ` v${entry.version}`), watchLinks(playing, entry.bot)),
      cell(entry.author),
      el(
        "td",
        { class: "number rating" },
        rated ? withMargin(entry) : "placing",
      ),
      cell(entry.interval ? `${number(entry.interval[0])} to ${number(entry.interval[1])}` : "–", true),
      el("td", { class: "number wdl" }, `${entry.wins}/${entry.draws}/${entry.losses}`),
      cell(entry.score === null ? "–" : `${number(entry.score * 100)}%`, true),
      cell(entry.matches, true),
      el("td", { class: "last-match" }, last ? el("a", { href: `/matches/${encodeURIComponent(last.key)}` }, shortTime(last.finished_at)) : "–"),
      el("td", { class: changeClass }, changed),
    );
  });
  byId("leaderboard").tBodies[0].replaceChildren(...rows);
  byId("empty").hidden = rows.length > 0;
  byId("suspended").replaceChildren(
    ...suspended.map((entry) =>
      el("li", { "data-bot": entry.bot }, botLink(entry.bot), ` v${entry.version} by ${entry.author}`),
    ),
  );
  byId("suspended-section").hidden = suspended.length === 0;
  byId("updated").textContent = `Updated ${shortTime(new Date())}.`;
}

// A bot's page: its versions, its rating over time, its recent matches and head to head.
let historyShown = [];
// What the chart says while there is no history (a bot on its way, or one that failed).
let historyEmpty = "";

function startBot() {
  const box = byId("history");
  followWidth(box, () => drawHistory(box, historyShown));
  poll(showBot, "problem", BOT_POLL_MS);
}

async function showBot() {
  const name = document.body.dataset.bot;
  const path = encodeURIComponent(name);
  const [bot, recent, playing] = await Promise.all([
    api(`/api/bots/${path}`),
    api(`/api/matches?bot=${path}&limit=12`),
    playingNow(),
  ]);
  const now = watchLinks(playing, name);
  byId("playing").replaceChildren(...(now.length > 0 ? ["Playing now:", ...now] : []));
  byId("playing").hidden = now.length === 0;
  const versions = bot.versions.length;
  byId("bot-line").textContent = `By ${bot.author}; ${versions} version${versions === 1 ? "" : "s"}.`;
  byId("versions").tBodies[0].replaceChildren(
    ...bot.versions.map((version) =>
      el(
        "tr",
        { "data-version": version.id },
        el("td", {}, el("a", { href: `/versions/${version.id}` }, `v${version.number}`)),
        stateCell(version.state),
        cell(version.rating === null ? "–" : withMargin(version), true),
        cell(version.matches, true),
        cell(shortTime(version.submitted_at)),
        cell(version.reason ?? ""),
      ),
    ),
  );
  historyShown = bot.history ?? [];
  historyEmpty = bot.versions.some((version) => MOVING.has(version.state) || version.state === "rated")
    ? "No rating yet: it comes with the first matches."
    : "No rating: no version of this bot has played on the ladder.";
  drawHistory(byId("history"), historyShown);
  byId("matches").tBodies[0].replaceChildren(...recent.matches.map((match) => matchRow(match, name)));
  byId("no-matches").hidden = recent.matches.length > 0;
  byId("head-to-head").tBodies[0].replaceChildren(
    ...(bot.head_to_head ?? []).map((pair) =>
      el(
        "tr",
        {},
        el("td", {}, botLink(pair.opponent)),
        cell(pair.matches, true),
        cell(pair.wins, true),
        cell(pair.draws, true),
        cell(pair.losses, true),
      ),
    ),
  );
}

// This bot's result in a match: a win, a draw or a loss by points, and a fault if it made one.
function resultCell(match, name) {
  const mine = match.seats.filter((seat) => seat.bot === name);
  const others = match.seats.filter((seat) => seat.bot !== name);
  if (mine.length === 0 || others.length === 0) {
    return cell("–");
  }
  const points = (seats) => Math.max(...seats.map((seat) => Number(seat.points ?? 0)));
  const difference = points(mine) - points(others);
  const result = difference > 0 ? "win" : difference < 0 ? "loss" : "draw";
  const fault = mine.some((seat) => seat.faulted) ? " (fault)" : "";
  return el("td", { class: `result ${result}` }, result + fault);
}

// Round values for an axis from `low` to `high`: a step of 1, 2 or 5 times a power of ten,
// giving about `count` of them, from a multiple of the step at or below `low` to one at or
// above `high`.
function niceTicks(low, high, count = 4) {
  const rough = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((factor) => factor * power).find((each) => each >= rough);
  const first = Math.floor(low / step);
  const last = Math.ceil(high / step);
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  const ticks = [];
  for (let i = first; i <= last; i++) {
    ticks.push({ value: i * step, label: number(i * step, digits) });
  }
  return ticks;
}

// The rating over time as an SVG chart as wide as its box: the 95% band, the line, a dot
// per point, the rating axis at round numbers.
function drawHistory(box, history) {
  if (history.length === 0) {
    box.replaceChildren(el("p", { class: "note" }, historyEmpty));
    return;
  }
  const width = Math.max(box.clientWidth, 240);
  const height = 240;
  const right = 12;
  const top = 12;
  const bottom = 44;
  const times = history.map((point) => Date.parse(point.at));
  const lows = history.map((point) => point.rating - (point.margin ?? 0));
  const highs = history.map((point) => point.rating + (point.margin ?? 0));
  let low = Math.min(...lows);
  let high = Math.max(...highs);
  if (high - low < 1) {
    low -= 1;
    high += 1;
  }
  const ticks = niceTicks(low, high);
  low = ticks[0].value;
  high = ticks[ticks.length - 1].value;
  // Room for the longest tick's label, at about 7 px a character of the ticks' 11 px font.
  const left = 12 + 7 * Math.max(...ticks.map((tick) => tick.label.length));
  const first = Math.min(...times);
  const span = Math.max(Math.max(...times) - first, 1);
  const x = (time) => left + ((width - left - right) * (time - first)) / span;
  const y = (rating) => top + ((height - top - bottom) * (high - rating)) / (high - low);
  const parts = [];
  for (const tick of ticks) {
    parts.push(
      svg("line", { class: "grid", x1: left, x2: width - right, y1: y(tick.value), y2: y(tick.value) }),
      svg("text", { class: "tick left", x: left - 6, y: y(tick.value) + 4 }, tick.label),
    );
  }
  const band = [
    ...history.map((point, i) => `${x(times[i]).toFixed(1)},${y(highs[i]).toFixed(1)}`),
    ...history.map((point, i) => `${x(times[i]).toFixed(1)},${y(lows[i]).toFixed(1)}`).reverse(),
  ];
  parts.push(svg("polygon", { class: "band", points: band.join(" ") }));
  const line = history.map((point, i) => `${x(times[i]).toFixed(1)},${y(point.rating).toFixed(1)}`);
  parts.push(svg("polyline", { class: "line", points: line.join(" ") }));
  history.forEach((point, i) => {
    parts.push(
      svg(
        "circle",
        { class: "dot", cx: x(times[i]).toFixed(1), cy: y(point.rating).toFixed(1), r: 3 },
        svg("title", {}, `v${point.version}: ${withMargin(point)} at ${shortTime(point.at)}`),
      ),
    );
  });
  // The first and the last moment, on lines of their own: a phone's chart has no room for
  // both on one.
  const last = history.length - 1;
  parts.push(
    svg("text", { class: "tick time", x: left, y: height - 22 }, `from ${shortTime(history[0].at)}`),
    svg("text", { class: "tick time end", x: width - right, y: height - 6 }, `to ${shortTime(history[last].at)}`),
  );
  const chart = svg(
    "svg",
    { class: "chart history", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" },
    parts,
  );
  chart.prepend(svg("title", {}, "Rating over time, with its 95% interval"));
  box.replaceChildren(chart);
}

// Calls `draw` again whenever `box` changes width (a window resized, a phone turned).
function followWidth(box, draw) {
  let width = box.clientWidth;
  new ResizeObserver(() => {
    if (box.clientWidth !== width) {
      width = box.clientWidth;
      draw();
    }
  }).observe(box);
}

// A version's page: its steps as they happen, then its verdict and advice.
let logOpened = false;

async function showVersion() {
  const id = document.body.dataset.version;
  const version = await api(`/api/versions/${id}`);
  byId("title").replaceChildren(botLink(version.bot), ` v${version.number}`);
  const line = byId("state-line");
  line.dataset.state = version.state;
  line.className = `state-line state-${version.state}`;
  line.textContent = stateText(version.state, version.place_in_line);
  byId("steps").tBodies[0].replaceChildren(
    ...version.steps.map((step) => stepRow(id, step)),
    ...waitingSteps(version).map((kind) => stepRow(id, { kind, state: "waiting" })),
    ...placementRow(version),
  );
  const reason = version.reason ?? "";
  const advice = version.advice ?? [];
  byId("reason").textContent = reason;
  byId("advice").replaceChildren(...advice.map((text) => el("li", {}, text)));
  byId("verdict").hidden = !reason && advice.length === 0;
  byId("verdict").className = version.state;
  if (version.state === "failed" && !logOpened && logsOffered()) {
    logOpened = true;
    // The failed step's log, if it wrote one (an unpack refused writes none: its verdict
    // says why).
    const failed = version.steps.filter((step) => step.state === "failed");
    const last = failed[failed.length - 1];
    if (last !== undefined && last.has_log) {
      showStepLog(id, last.kind);
    }
  }
  return MOVING.has(version.state);
}

// A step of the intake: its state, verdict, time (so far, while it runs) and its log.
function stepRow(id, step) {
  const started = step.started_at ? Date.parse(step.started_at) : null;
  const ended = step.finished_at ? Date.parse(step.finished_at) : null;
  let time = "";
  if (started !== null) {
    const seconds = (((ended ?? Date.now()) - started) / 1000).toFixed(0);
    time = ended === null ? `${seconds} s so far` : `${seconds} s`;
  }
  // Its log, if it wrote one, opened from beside its name: in the first column, on the
  // screen however narrow (a column of its own was off a phone's screen).
  let log = null;
  if (ended !== null && logsOffered() && step.has_log) {
    log = el("button", { type: "button", class: "small", "data-kind": step.kind }, "log");
    log.addEventListener("click", () => showStepLog(id, step.kind));
  }
  return el(
    "tr",
    { "data-kind": step.kind, "data-state": step.state },
    el("td", { class: "step" }, step.kind, log),
    el("td", { class: `state state-${step.state}` }, step.state),
    cell(step.verdict ?? ""),
    cell(time),
  );
}

// Whether the viewer may read this version's step logs (its author, the organiser): the
// page says so, and offers no log it would refuse.
function logsOffered() {
  return document.body.dataset.logs === "yes";
}

// The steps still to come while the intake has the version: a build only if it has one
// (its author knows, once it is unpacked; others see it as to come).
function waitingSteps(version) {
  if (!["queued", "building"].includes(version.state)) {
    return [];
  }
  const started = new Set(version.steps.map((step) => step.kind));
  return ["unpack", "build", "validate"].filter(
    (kind) => !started.has(kind) && !(kind === "build" && version.build === null),
  );
}

// Placement, the last step: the ladder's first matches of the version.
function placementRow(version) {
  const states = { placing: "running", rated: "passed", suspended: "passed", retired: "passed" };
  const state = MOVING.has(version.state) ? (states[version.state] ?? "waiting") : states[version.state];
  if (!state) {
    return [];
  }
  // The version's matches so far: its placement's while it places, then all it played.
  const played = `${version.matches} match${version.matches === 1 ? "" : "es"}`;
  const verdict = { waiting: "", running: `${played} played so far` }[state] ?? `placed; ${played} played in all`;
  return [
    el(
      "tr",
      { "data-kind": "placement", "data-state": state },
      cell("placement"),
      el("td", { class: `state state-${state}` }, state),
      cell(verdict),
      cell(""),
    ),
  ];
}

async function showStepLog(id, kind) {
  byId("log-section").hidden = false;
  byId("log-title").textContent = `The ${kind} step's log`;
  await showLog(`/api/versions/${id}/steps/${encodeURIComponent(kind)}`);
}

// A log (a step's, or a seat's in a match) in the page's #log, or why it may not be read.
async function showLog(path) {
  const pre = byId("log");
  try {
    const data = await api(path);
    pre.textContent = data.log + (data.truncated ? "\n[cut: the whole log is in the arena's directory]" : "");
    pre.hidden = false;
    say("log-problem", "");
  } catch (error) {
    pre.textContent = "";
    pre.hidden = true;
    sayFailed("log-problem", error);
  }
}

// The submission page: the archive goes up by XMLHttpRequest, which tells its progress.
function startSubmit() {
  const form = byId("submit-form");
  if (form === null) {
    return; // submissions are closed: the page says so, and has no form
  }
  const nameInput = byId("bot-name");
  const named = new URLSearchParams(window.location.search).get("bot");
  if (named) {
    nameInput.value = named;
  }
  // A name the arena would refuse marks the field invalid as it is typed.
  nameInput.addEventListener("input", () => nameInput.setCustomValidity(badName(form, nameInput.value.trim())));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = byId("bot-name").value.trim();
    const file = byId("archive").files[0];
    // Refused here what the arena would refuse: no byte is sent for it.
    const refusal = unsendable(form, name, file);
    say("problem", refusal);
    if (refusal) {
      return;
    }
    const progress = byId("progress");
    progress.value = 0;
    byId("progress-label").textContent = "";
    byId("upload").hidden = false;
    byId("send").disabled = true;
    const request = new XMLHttpRequest();
    request.open("POST", `/api/bots/${encodeURIComponent(name)}/versions`);
    request.setRequestHeader("X-CSRF-Token", csrfToken());
    request.setRequestHeader("Content-Type", "application/octet-stream");
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", (update) => {
      if (update.lengthComputable) {
        progress.max = update.total;
        progress.value = update.loaded;
        byId("progress-label").textContent = `${kib(update.loaded)} of ${kib(update.total)} sent`;
      }
    });
    request.addEventListener("load", () => {
      let data = null;
      try {
        data = JSON.parse(request.responseText);
      } catch {
        data = null;
      }
      if (request.status === 202 && data && Number.isInteger(data.id)) {
        byId("progress-label").textContent = "Received; following it…";
        window.location.assign(`/versions/${data.id}`);
        return;
      }
      const said = data && typeof data.error === "string" ? data.error : request.statusText;
      uploadEnded(new ApiError(request.status, said));
    });
    request.addEventListener("error", () => {
      uploadEnded(new Error("the connection was lost during the upload"));
    });
    request.send(file);
  });
}

// Why the arena would refuse a bot's name, in one line; "" if it would not.
function badName(form, name) {
  const pattern = new RegExp(`^(?:${form.dataset.namePattern})$`);
  if (!name) {
    return "Name the bot.";
  }
  if (!pattern.test(name)) {
    return `Bot name "${name}": use letters, digits, _ or -, starting with a letter or digit, at most ${byId("bot-name").maxLength}.`;
  }
  return "";
}

// What the arena would refuse of a submission before reading it, in one line; "" if none.
function unsendable(form, name, file) {
  const limit = Number(document.body.dataset.archiveLimit);
  const refused = badName(form, name);
  if (refused) {
    return refused;
  }
  if (!file) {
    return "Choose the bot's archive.";
  }
  if (file.size > limit) {
    return `The archive is ${mib(file.size)}: the arena takes at most ${mib(limit)} as sent.`;
  }
  return "";
}

// An upload refused or lost (`error`): the line says why, and no bar is left standing.
function uploadEnded(error) {
  byId("upload").hidden = true;
  sayFailed("problem", error);
  byId("send").disabled = false;
}

function mib(bytes) {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

function kib(bytes) {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

// The match page: the report's viewer draws the match; the seats' logs open on demand.
function startMatch() {
  const key = document.body.dataset.match;
  for (const button of document.querySelectorAll(".log-button")) {
    button.addEventListener("click", () => {
      const role = button.dataset.role;
      const title = byId("log-title");
      title.textContent = `The log of ${button.textContent}`;
      title.hidden = false;
      showLog(`/api/matches/${encodeURIComponent(key)}/logs/${encodeURIComponent(role)}`);
    });
  }
}

// The organiser's page: the ladder, the intake, what runs, and every bot with its action.
let botsShown = "";

async function showStatus() {
  const status = await api("/api/status");
  const ladder = status.ladder;
  const line = byId("ladder-line");
  // Waiting out its database or a full disk, it starts nothing, paused or not: that first.
  const state = ladder.outage ? "waiting" : ladder.paused ? "paused" : "running";
  line.textContent = {
    waiting: `Waiting: ${ladder.outage}. No new match starts until it is over.`,
    paused: "Paused: no new match starts.",
    running: "Running.",
  }[state];
  line.dataset.state = state;
  line.className = `state-line ${state === "running" ? "state-rated" : "state-failed"}`;
  byId("pause").disabled = ladder.paused;
  byId("resume").disabled = !ladder.paused;
  facts(byId("ladder"), [
    ["venue", ladder.venue ?? "–"],
    // A place plays one match at a time; a batch it claimed waits its turn in it.
    ["playing", `${ladder.playing} of ${ladder.capacity}`],
    ["claimed", ladder.claimed],
    ["queued", ladder.queued],
    ["played", ladder.played],
    ["matches per second", number(ladder.per_second, 2)],
  ]);
  facts(byId("intake"), Object.entries(status.intake));
  showFinal(status.final);
  const running = status.running ?? [];
  byId("running").tBodies[0].replaceChildren(
    ...running.map((match) =>
      el("tr", {}, el("td", {}, matchLink(match.key), " ", watchLink(match.key)), cell(match.game), cell(seatsText(match.seats)), cell(shortTime(match.started_at))),
    ),
  );
  byId("none-running").hidden = running.length > 0;
  await showBots();
}

// The final as the organiser's page shows it: not played, being played, played or failed.
function showFinal(final) {
  const line = byId("final-line");
  const played = `${final.played} of ${final.matches} matches`;
  line.replaceChildren(
    {
      none: "Not played yet.",
      playing: `Being played: ${played}. Submissions are closed and the ladder is paused.`,
      played: `Played (${played}). `,
      failed: `Failed: ${final.problem} Play it again to finish it.`,
    }[final.state] ?? final.state,
  );
  if (final.state === "played") {
    line.append(el("a", { href: "/final/index.html" }, "Its standings and report"));
  }
  line.dataset.state = final.state;
  byId("final-play").disabled = final.state === "playing";
}

function facts(list, pairs) {
  list.replaceChildren(...pairs.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

async function showBots(force = false) {
  const data = await api("/api/bots");
  const shown = JSON.stringify(
    data.bots.map((bot) => [bot.name, bot.latest?.number, bot.latest?.state, bot.ladder?.number, bot.ladder?.state]),
  );
  // Redrawn only when a bot changed, so that a reason being typed is not wiped.
  if (shown === botsShown && !force) {
    return;
  }
  botsShown = shown;
  byId("bots").tBodies[0].replaceChildren(
    ...data.bots.map((bot) => {
      const latest = bot.latest;
      const state = latest ? latest.state : "none";
      // The organiser acts on the version the ladder plays (or the suspended one), which a
      // newer version in the intake does not replace until it is placed.
      const acted = bot.ladder;
      return el(
        "tr",
        { "data-bot": bot.name },
        el("td", {}, botLink(bot.name)),
        cell(bot.author),
        cell(latest ? `v${latest.number}` : "–"),
        latest ? stateCell(state) : cell("–"),
        el("td", {}, el("div", { class: "row-actions" }, acted ? botAction(bot.name, acted, latest) : [])),
      );
    }),
  );
}

function botAction(name, acted, latest) {
  const state = acted.state;
  // Named when it is not the version in the table's columns.
  const which = acted.number === latest?.number ? "" : ` v${acted.number}`;
  if (state === "placing" || state === "rated") {
    const reason = el("input", { class: "reason", placeholder: "reason", maxlength: 300, "aria-label": `reason to suspend ${name}` });
    const button = el("button", { type: "button", class: "suspend" }, `Suspend${which}`);
    button.addEventListener("click", () =>
      act(`/api/bots/${encodeURIComponent(name)}/suspend`, { reason: reason.value }),
    );
    return [reason, button];
  }
  if (state === "suspended") {
    const button = el("button", { type: "button", class: "reinstate" }, `Reinstate${which}`);
    button.addEventListener("click", () => act(`/api/bots/${encodeURIComponent(name)}/reinstate`));
    return [button];
  }
  return [];
}

// Posts an organiser's action, then shows what it changed (`after`: the bots by default).
// A refusal has a line of its own, which the page's refresh leaves alone: it stays until
// the organiser's next action.
async function act(path, body, after = () => showBots(true)) {
  say("action-problem", "");
  try {
    await post(path, body);
  } catch (error) {
    sayFailed("action-problem", error);
    return;
  }
  try {
    await after();
  } catch (error) {
    sayFailed("problem", error);
  }
}

function startOrganiser() {
  byId("pause").addEventListener("click", () => act("/api/ladder/pause", undefined, showStatus));
  byId("resume").addEventListener("click", () => act("/api/ladder/resume", undefined, showStatus));
  // Played only once its box is ticked (the form requires it): it cannot be undone.
  byId("final-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const body = { format: byId("final-format").value, rounds: Number(byId("final-rounds").value) };
    byId("final-sure").checked = false;
    act("/api/final", body, showStatus);
  });
  byId("replay-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = byId("replay-key").value.trim();
    const result = byId("replay-result");
    result.textContent = `Replaying ${key}…`;
    try {
      const verdict = await post(`/api/matches/${encodeURIComponent(key)}/replay`);
      result.dataset.verified = verdict.verified ? "yes" : "no";
      result.textContent = verdict.verified
        ? `${verdict.key}: verified: the moves replay by the rules and the signature is the arena's.`
        : `${verdict.key}: does not verify: ${verdict.problem}`;
    } catch (error) {
      delete result.dataset.verified;
      sayFailed("replay-result", error);
    }
  });
  poll(showStatus);
}

const PAGES = {
  leaderboard: () => poll(showLeaderboard),
  // A bot's page sums all its matches (head to head): asked less often.
  bot: startBot,
  version: () => poll(showVersion),
  submit: startSubmit,
  match: startMatch,
  organiser: startOrganiser,
};

document.addEventListener("DOMContentLoaded", () => {
  const start = PAGES[document.body.dataset.page];
  if (start) {
    start();
  }
});
