"use strict";
// Accounts, for the organiser: each author's token replaced or revoked and their browsers
// signed out (a part of the organiser's page), and the audit log a page at a time. Loaded
// after arena.js, whose helpers it uses; every text goes in as text (`el`).

const AUTHORS_POLL_MS = 5000;

let authorsShown = "";

async function showAuthors(force = false) {
  const data = await api("/api/authors");
  const shown = JSON.stringify(data.authors);
  // Redrawn only when an account changed, so that a button asking to be clicked again is
  // still there to click.
  if (shown === authorsShown && !force) {
    return;
  }
  authorsShown = shown;
  byId("authors").tBodies[0].replaceChildren(
    ...data.authors.map((author) =>
      el(
        "tr",
        { "data-author": author.name },
        cell(author.name),
        cell(author.has_token ? "active" : "revoked"),
        cell(author.sessions, true),
        el("td", {}, el("div", { class: "row-actions" }, author.organiser ? [] : accountActions(author.name))),
      ),
    ),
  );
}

// Each action takes two clicks: the first asks, in the button, to be sure.
function accountActions(name) {
  const path = `/api/authors/${encodeURIComponent(name)}`;
  const actions = [
    ["replace-token", "Replace token", "token"],
    ["revoke-token", "Revoke token", "revoke"],
    ["sign-out", "Sign out everywhere", "signout"],
  ];
  return actions.map(([kind, label, action]) => {
    const button = el("button", { type: "button", class: kind }, label);
    button.addEventListener("click", () => {
      if (button.dataset.armed !== "yes") {
        button.dataset.armed = "yes";
        button.textContent = `${label}: click again to confirm`;
        return;
      }
      accountAct(`${path}/${action}`);
    });
    return button;
  });
}

async function accountAct(path) {
  try {
    const done = await post(path);
    say("accounts-problem", "");
    const shown = byId("new-token");
    if (done.token) {
      // Shown once: neither the page nor the arena can show it again.
      shown.replaceChildren(
        `${done.author}'s new token (shown once, the arena keeps only its hash): `,
        el("code", { id: "new-token-value" }, done.token),
      );
    } else {
      shown.replaceChildren(`${done.author}: ${done.sessions_ended} signed-in browser(s) signed out.`);
    }
    shown.hidden = false;
    await showAuthors(true);
  } catch (error) {
    sayFailed("accounts-problem", error);
  }
}

// The audit log's pages: each the rows before the last one shown (a cursor), from the newest.
// The page shown is in the address (`before`): "Older" is a page of its own, which Back
// leaves for the one before.
let auditBefore = null;

async function showAudit(before) {
  try {
    const query = before === null ? "" : `?before=${encodeURIComponent(before)}`;
    const data = await api(`/api/audit${query}`);
    byId("audit").tBodies[0].replaceChildren(
      ...data.entries.map((entry) =>
        el(
          "tr",
          { "data-action": entry.action, "data-id": entry.id },
          cell(shortTime(entry.at)),
          cell(entry.author ?? "–"),
          cell(entry.action),
          cell(entry.object),
          cell(entry.address),
          cell(entry.detail),
        ),
      ),
    );
    byId("audit-empty").hidden = data.entries.length > 0;
    auditBefore = data.before;
    byId("audit-older").disabled = auditBefore === null;
    say("problem", "");
  } catch (error) {
    sayFailed("problem", error);
  }
}

function startAudit() {
  byId("audit-newest").addEventListener("click", () => window.location.assign("/organiser/audit"));
  byId("audit-older").addEventListener("click", () =>
    window.location.assign(`/organiser/audit?before=${encodeURIComponent(auditBefore)}`),
  );
  const before = new URLSearchParams(window.location.search).get("before");
  byId("audit-newest").disabled = before === null;
  showAudit(before);
}

// The organiser's page starts as arena.js says, and its authors' part besides.
const startOrganiserPage = PAGES.organiser;
PAGES.organiser = () => {
  startOrganiserPage();
  // A refused action's line stays until the next action: the table's polling has its own.
  poll(showAuthors, "authors-problem", AUTHORS_POLL_MS);
};
PAGES.audit = startAudit;
