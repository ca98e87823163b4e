"use strict";
// A match watched as it is played: the page holds the report's viewer with the steps played
// when it was made; this asks the arena for the later ones every second, and the viewer
// follows them unless the reader has stepped back. Once the match is done, or played again
// from the start after a stop, the page is loaded anew (then it shows the match whole).

const LIVE_POLL_MS = 1000;

function startLive() {
  const key = document.body.dataset.match;
  let run = document.body.dataset.run || null;
  let after = Number(document.body.dataset.after);
  const path = `/api/matches/${encodeURIComponent(key)}/live`;
  // Opened without a step, the page shows the latest one.
  if (matchViewer !== null && !location.hash) matchViewer.latest();

  async function follow() {
    const live = await api(`${path}?after=${Math.max(0, after)}`);
    const again = run !== null && live.run !== null && live.run !== run;
    if (live.state === "done" || again) {
      if (live.state === "done") keepPlace();
      location.reload();
      return false;
    }
    if (live.run !== null) run = live.run;
    if (live.frames.length > 0) {
      if (matchViewer === null) {
        location.reload(); // made before there was anything to draw
        return false;
      }
      matchViewer.more(live.frames);
      after = live.frames[live.frames.length - 1].step;
    }
    byId("live-line").textContent = liveLine(live, after);
    say("problem", live.problem);
    return true;
  }
  poll(follow, "live-problem", LIVE_POLL_MS);
}

// Where the match is, in a sentence: waiting its turn (queued, or claimed by a place that
// plays another first) until its play has begun; then its steps so far, unless the reader
// is shown none of its moves (a game of imperfect information with none of their bots in
// it), who is not told a count of steps they cannot see.
function liveLine(live, after) {
  if (live.state !== "running" || !live.started_at) {
    return "Waiting to be played: this page follows its moves once it starts.";
  }
  if (live.last === null) {
    return "Being played: its moves are shown once it ends, when this page shows the match whole.";
  }
  return `Being played: ${after} step${after === 1 ? "" : "s"} so far. This page follows its moves and shows the match whole once it ends.`;
}

// The step the reader was at, kept in the address for the finished match's page: its last
// if they followed the match (a step past the end is the nearest there is, the last).
function keepPlace() {
  const slider = byId("step");
  if (slider === null) return;
  const at = Number(slider.value);
  const step = at === Number(slider.max) ? 999999999 : at;
  history.replaceState(null, "", `#step=${step}`);
}

PAGES.live = startLive;
