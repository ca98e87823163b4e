"use strict";
// The matches page: the finished matches the filters in its address ask for, a page at a
// time; "More" asks for the next page after the last one shown (the API's cursor), so that
// matches finishing meanwhile move nothing. How many pages are shown is in the address
// (`pages`), and the row at the top of the window in the history's entry: Back to this page
// from a match shows the same rows, at the same place. Uses arena.js's globals (`api`,
// `el`, `matchRow`).

const MATCHES_PAGE = 50;
const MATCH_FILTERS = ["bot", "opponent", "game", "result"];
// The most pages the address may ask for at once: a page of 50 rows a request.
const MOST_PAGES = 40;
// How long the window rests before its place is kept in the history's entry.
const PLACE_KEPT_MS = 200;

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
  let pages = 0;
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
      pages += 1;
      more.hidden = cursor === null;
      say("problem", "");
      return true;
    } catch (error) {
      sayFailed("problem", error);
      return false;
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", async () => {
    if (await load()) {
      const address = new URL(window.location.href);
      address.searchParams.set("pages", String(pages));
      history.replaceState(history.state, "", address);
    }
  });
  // Back to this page: its place is put back once its rows are, not where the browser would
  // put it before they came.
  history.scrollRestoration = "manual";
  let resting = null;
  window.addEventListener("scroll", () => {
    clearTimeout(resting);
    resting = setTimeout(keepPlace, PLACE_KEPT_MS);
  });
  window.addEventListener("pagehide", keepPlace);
  (async () => {
    const wanted = Math.min(MOST_PAGES, Math.max(1, Number.parseInt(asked.get("pages") ?? "1", 10) || 1));
    let loaded = await load();
    while (loaded && pages < wanted && cursor !== null) {
      loaded = await load();
    }
    putBackPlace();
  })();
}

// The row at the top of the window and how far below the window's top it is, kept in the
// history's entry (and the window's offset, for a page whose rows have changed since).
function keepPlace() {
  const rows = [...byId("matches").tBodies[0].rows];
  const top = rows.find((row) => row.getBoundingClientRect().bottom > 0);
  const place = {
    match: top?.dataset.match ?? null,
    offset: top ? top.getBoundingClientRect().top : 0,
    scroll: window.scrollY,
  };
  history.replaceState({ ...(history.state ?? {}), place }, "");
}

function putBackPlace() {
  const place = history.state?.place;
  if (!place) {
    return;
  }
  const row = place.match === null ? null : document.querySelector(`#matches tr[data-match="${CSS.escape(place.match)}"]`);
  if (row !== null) {
    window.scrollBy(0, row.getBoundingClientRect().top - place.offset);
  } else {
    window.scrollTo(0, place.scroll);
  }
}

PAGES.matches = startMatches;
