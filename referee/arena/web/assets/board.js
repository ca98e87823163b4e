"use strict";
// The matches page: the finished matches the filters in its address ask for, a page at a
// time; "More" asks for the next page after the last one shown (the API's cursor), so that
// matches finishing meanwhile move nothing. Uses arena.js's globals (`api`, `el`, `matchRow`).

const MATCHES_PAGE = 50;
const MATCH_FILTERS = ["bot", "opponent", "game", "result"];

function startMatches() {
  const asked = new URLSearchParams(window.location.search);
  const query = new URLSearchParams();
  for (const name of MATCH_FILTERS) {
    const value = (asked.get(name) ?? "").trim();
    if (value) {
      query.set(name, value);
    }
  }
  query.set("limit", String(MATCHES_PAGE));
  // The form's empty fields are left out of the address, as the API wants them.
  byId("match-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of MATCH_FILTERS) {
      const value = byId(`filter-${name}`).value.trim();
      if (value) {
        chosen.set(name, value);
      }
    }
    window.location.assign(`/matches?${chosen}`);
  });
  const more = byId("more");
  let cursor = null;
  async function load() {
    const page = new URLSearchParams(query);
    if (cursor !== null) {
      page.set("cursor", cursor);
    }
    more.disabled = true;
    try {
      const data = await api(`/api/matches?${page}`);
      const rows = data.matches.map((match) => matchRow(match, query.get("bot")));
      byId("matches").tBodies[0].append(...rows);
      byId("no-matches").hidden = cursor !== null || rows.length > 0;
      cursor = data.next;
      more.hidden = cursor === null;
      say("problem", "");
    } catch (error) {
      sayFailed("problem", error);
    }
    more.disabled = false;
  }
  more.addEventListener("click", load);
  load();
}

PAGES.matches = startMatches;
