"use strict";
// An author's home (/me): their bots, each version with its state and, for one that failed
// or was suspended, why and validate's advice; a link to submit each bot's next version.
// A classic script after arena.js, whose `el`, `api`, `poll`, `PAGES`... it shares. Every
// text from the API goes in as text.

// The states whose reason and advice an author needs to read.
const EXPLAINED = new Set(["failed", "suspended"]);
// A version's columns, and which are numbers.
const HOME_COLUMNS = [["version", false], ["state", false], ["rating", true], ["matches", true], ["submitted", false]];
let homeShown = "";

async function showHome() {
  const me = await api("/api/me");
  const bots = me.my_bots ?? [];
  const shown = JSON.stringify(bots);
  // Redrawn only when something changed, so that a reader's selection is not wiped.
  if (shown !== homeShown) {
    homeShown = shown;
    byId("my-bots").replaceChildren(...bots.map(botSection));
    byId("no-bots").hidden = bots.length > 0;
  }
}

function botSection(bot) {
  const next = `/submit?bot=${encodeURIComponent(bot.name)}`;
  const rows = bot.versions.flatMap((version) => versionRows(version));
  const table = el(
    "table",
    { class: "my-versions" },
    el("thead", {}, el("tr", {}, HOME_COLUMNS.map(([name, numeric]) => el("th", numeric ? { class: "number" } : {}, name)))),
    el("tbody", {}, rows),
  );
  return el(
    "section",
    { class: "my-bot", "data-bot": bot.name },
    el("h2", {}, botLink(bot.name)),
    el("p", {}, el("a", { class: "submit-next", href: next }, "Submit a new version")),
    el("div", { class: "table-box" }, table),
  );
}

// A version's row, and under it, if it failed or was suspended, why and what to do.
function versionRows(version) {
  const row = el(
    "tr",
    { "data-version": version.id, "data-state": version.state },
    el("td", {}, el("a", { href: `/versions/${version.id}` }, `v${version.number}`)),
    stateCell(version.state, version.place_in_line),
    cell(version.rating === null ? "–" : withMargin(version), true),
    cell(version.matches, true),
    cell(shortTime(version.submitted_at)),
  );
  if (!EXPLAINED.has(version.state)) {
    return [row];
  }
  const advice = version.advice ?? [];
  const why = el(
    "td",
    { colspan: HOME_COLUMNS.length },
    el("p", { class: "reason" }, version.reason || "No reason was given."),
    advice.length > 0 ? el("ul", { class: "advice" }, advice.map((text) => el("li", {}, text))) : null,
  );
  return [row, el("tr", { class: `why ${version.state}`, "data-version": version.id }, why)];
}

PAGES.home = () => poll(showHome, "problem", BOT_POLL_MS);
