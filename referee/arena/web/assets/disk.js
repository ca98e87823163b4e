"use strict";
// The disk by author, for the organiser (a part of the organiser's page). Loaded after
// arena.js, whose helpers it uses; every text goes in as text (`el`).

// The API measures at most every 30 s (its `fresh_s`): asked no more often.
const DISK_POLL_MS = 30000;

function diskSize(bytes) {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : mib(bytes);
}

async function showDisk() {
  const data = await api("/api/disk");
  byId("disk-line").textContent =
    `${diskSize(data.total_bytes)} in all; ${diskSize(data.free_bytes)} free on the arena's disk.` +
    ` Measured ${shortTime(data.measured_at)}, in ${number(data.took_s, 1)} s; at most every ${number(data.fresh_s)} s.`;
  byId("disk").tBodies[0].replaceChildren(
    ...data.authors.map((author) =>
      el(
        "tr",
        { "data-author": author.author },
        cell(author.author),
        cell(String(author.versions), true),
        cell(diskSize(author.bots_bytes), true),
        cell(diskSize(author.archives_bytes), true),
        cell(diskSize(author.logs_bytes), true),
        cell(diskSize(author.total_bytes), true),
      ),
    ),
  );
}

// The organiser's page starts as the scripts before this one say, and its disk part besides.
const startOrganiserBeforeDisk = PAGES.organiser;
PAGES.organiser = () => {
  startOrganiserBeforeDisk();
  poll(showDisk, "disk-problem", DISK_POLL_MS);
};
