// One notice at a time over the chat: first-run setup, the folder's
// language coverage and the collection's embedder warning wait in one
// queue, most important first; "Next notice" reaches the others.
import { $ } from "./dom";
import { t } from "./i18n";
import { nextNotice, shownNotice } from "./state";

/** The queued notices' element ids, most important first. */
const ORDER = ["setup-card", "language-notice", "collection-warning"] as const;
export type NoticeId = (typeof ORDER)[number];

const present = new Set<NoticeId>();
let chosen: string | null = null;

function queue(): string[] {
  return ORDER.filter((id) => present.has(id));
}

function draw() {
  const waiting = queue();
  const current = shownNotice(waiting, chosen);
  for (const id of ORDER) $(id).hidden = id !== current;
  $("notices").hidden = current === null;
  $("notice-pager").hidden = waiting.length < 2;
  $("notice-count").textContent = t("notices.count", { n: waiting.indexOf(current ?? "") + 1, total: waiting.length });
}

/** Puts a notice in the queue (its element holds the content) or takes it out. */
export function setNotice(id: NoticeId, shown: boolean) {
  if (shown) present.add(id);
  else present.delete(id);
  draw();
}

export function setupNotices() {
  $("notice-next").addEventListener("click", () => {
    chosen = nextNotice(queue(), shownNotice(queue(), chosen));
    draw();
  });
}
