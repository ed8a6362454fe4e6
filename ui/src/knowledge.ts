// The knowledge pane: documents with status, chunks and size; add files or
// folders (dialog or drop) or a web page; re-index or delete one (a web
// page is fetched again, and opens at its address); re-index all; live
// progress with cancel; the model in use and the index size.
import { listen } from "@tauri-apps/api/event";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { api, type DocumentDto, type ImportProgressDto, type WebPageDto } from "./api";
import { identify } from "./chat";
import { renderSetup } from "./setup";
import { $, button, confirmAction, el, toast, toastError } from "./dom";
import { t } from "./i18n";
import { applyProgress, asCommandError, formatBytes, idle, isImagePath, type Progress } from "./state";

let indexing = idle;
/** How many documents the list shows; a large folder would make a DOM of tens of thousands of rows. */
const SHOWN_STEP = 300;
let shownDocuments = SHOWN_STEP;
let filesInProgress = new Map<string, string | null>();
/** The files the last sync was to read that it has not read yet (a
 * cancelled or paused run leaves some; the next run's start replaces them). */
let queuedFiles = new Set<string>();

/** "indexed 14:02" today, else the date. */
function indexedWhen(seconds: number): string {
  if (!seconds) return "";
  const at = new Date(seconds * 1000);
  const today = at.toDateString() === new Date().toDateString();
  return t("knowledge.indexed_at", { time: today ? at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : at.toLocaleDateString() });
}

/** A file the running sync has not reached yet, or one left out on purpose. */
function pendingRow(path: string, state: "queued" | "skipped", why = ""): HTMLElement {
  const item = el("li", undefined, `doc ${state}`);
  item.dataset.path = path;
  const name = el("span", path, "path");
  name.append(el("span", state === "queued" ? t("knowledge.queued") : t("knowledge.skipped", { why }), "muted detail"));
  item.append(el("span", state === "queued" ? "…" : "–", "mark"), name);
  return item;
}

/** A page Kea fetched and keeps (fetched again by ↻); other linked documents are the user's own. */
const KEPT_PAGE = /(^|\/)Web pages\/[^/]+\.html$/i;

function documentRow(doc: DocumentDto): HTMLElement {
  const item = el("li", undefined, `doc ${doc.status}`);
  item.dataset.path = doc.path;
  const pending = (filesInProgress.has(doc.path) && indexing.active) || queuedFiles.has(doc.path);
  item.append(el("span", doc.status === "error" ? "✗" : pending ? "…" : "✓", "mark"));
  const slash = doc.path.lastIndexOf("/");
  const name = el("span", doc.path.slice(slash + 1), "path");
  if (slash > 0) name.append(el("span", ` ${doc.path.slice(0, slash)}/`, "muted folder"));
  name.title = doc.title ? `${doc.title} — ${doc.path}` : doc.path;
  item.append(name);
  const when = indexedWhen(doc.indexed_at);
  const detail =
    doc.status === "error"
      ? t("knowledge.failed", { why: doc.error ?? "error" })
      : queuedFiles.has(doc.path)
        ? t("knowledge.queued")
        : `${t("knowledge.chunks", { n: doc.chunks })} · ${formatBytes(doc.size)}${when ? ` · ${when}` : ""}`;
  const kept = doc.link && KEPT_PAGE.test(doc.path);
  const reindex = kept
    ? button("↻", () => api.refetchDocument(doc.path, $<HTMLInputElement>("web-page-local").checked).then(webPageKept, toastError))
    : button("↻", () => api.reindexDocument(doc.path).catch(toastError));
  reindex.title = kept ? t("knowledge.refetch") : t("knowledge.reindex_one");
  if (doc.link) {
    const link = doc.link;
    const open = button("↗", () => api.openLink(link).catch(toastError));
    open.title = t("knowledge.open_link", { url: link });
    item.append(open);
  }
  const remove = button("✕", async () => {
    if (await confirmAction(t("knowledge.confirm_delete", { path: doc.path }), t("knowledge.delete"))) api.deleteDocument(doc.path).catch(toastError);
  });
  remove.title = t("knowledge.delete");
  // The state is a line of its own under the name (a narrow pane keeps both readable).
  name.append(el("span", detail, "muted detail"));
  item.append(reindex, remove);
  return item;
}

/** Counts status requests: an answer older than the last one drawn is dropped (it may come from the engine a model switch replaced). */
let statusRequests = 0;
let statusDrawn = 0;

export async function refreshStatus() {
  const request = ++statusRequests;
  try {
    const status = await api.status();
    if (request < statusDrawn) return;
    statusDrawn = request;
    queuedFiles = new Set(status.queued);
    $("engine-state").textContent = `${status.model_id ?? "no embedding model"} · ${formatBytes(status.index_bytes)}`;
    $("engine-state").title = status.knowledge_dir;
    $("knowledge-folder-path").textContent = status.knowledge_dir;
    $("knowledge-summary").textContent = t("knowledge.summary", { docs: status.documents.length, chunks: status.chunks, size: formatBytes(status.index_bytes) });
    $("knowledge-summary").title = status.knowledge_dir;
    if (status.team) {
      const team = t("knowledge.team", { store: status.team.store, namespace: status.team.namespace, mirrored: status.team.mirrored_chunks });
      $("knowledge-summary").textContent += ` · ${team}`;
      if (status.team.offline) {
        $("knowledge-summary").textContent += ` · ${t("knowledge.team_offline")}`;
        $("knowledge-summary").title = status.team.offline;
      }
    }
    const list = $("documents");
    list.replaceChildren();
    if (status.documents.length === 0) list.append(el("li", t("knowledge.drop"), "muted empty"));
    // A large folder lists its first documents (and every failed one); the rest on demand.
    const shown = status.documents.filter((doc, i) => i < shownDocuments || doc.status === "error");
    for (const doc of shown) list.append(documentRow(doc));
    // New files the running sync has not read yet, then what was left out and why.
    const known = new Set(status.documents.map((d) => d.path));
    // (A cancelled or paused run leaves them queued for the next one.)
    for (const path of queuedFiles) if (!known.has(path)) list.append(pendingRow(path, "queued"));
    for (const [path, why] of status.skipped.slice(0, SHOWN_STEP)) list.append(pendingRow(path, "skipped", why));
    $("paused").hidden = !status.paused;
    if (status.paused && indexing.active) {
      // The run stops after the file at hand: no file is being read any more.
      indexing = idle;
      showProgress();
    }
    const hidden = status.documents.length - shown.length;
    if (hidden > 0) {
      const more = button(t("knowledge.more", { n: Math.min(hidden, SHOWN_STEP), hidden }), () => {
        shownDocuments += SHOWN_STEP;
        void refreshStatus();
      });
      const item = el("li", undefined, "more");
      item.append(more);
      list.append(item);
    }
  } catch (e) {
    if (asCommandError(e).kind !== "not_ready") toastError(e);
  }
}

let refreshTimer: number | undefined;

/** Refreshes the list at most every 400 ms while files are indexed (one
 * status call per file would list every document thousands of times). */
function scheduleRefresh() {
  if (refreshTimer !== undefined) return;
  refreshTimer = window.setTimeout(() => {
    refreshTimer = undefined;
    void refreshStatus();
  }, 400);
}

function showProgress() {
  $("progress").hidden = !indexing.active;
  const bar = $<HTMLProgressElement>("progress-bar");
  bar.max = Math.max(indexing.total, 1);
  bar.value = indexing.done;
  const file = indexing.lastFile ? ` — ${indexing.lastFile}` : "";
  $("progress-text").textContent = indexing.active ? `${t("knowledge.indexing", { done: indexing.done, total: indexing.total })}${file}` : "";
}

function webPageKept(page: WebPageDto) {
  const title = page.title ?? page.url;
  toast(page.refetched ? t("knowledge.web_page_refetched", { title }) : t("knowledge.web_page_added", { title }));
  void refreshStatus();
}

/** Fetches the address in the form into the selected collection. */
async function addWebPage(event: SubmitEvent) {
  event.preventDefault();
  const input = $<HTMLInputElement>("web-page-url");
  const submit = $<HTMLButtonElement>("add-web-page");
  submit.disabled = true;
  try {
    webPageKept(await api.addWebPage(input.value.trim(), $<HTMLInputElement>("web-page-local").checked));
    input.value = "";
  } catch (e) {
    toastError(e);
  } finally {
    submit.disabled = false;
  }
}

/** Imports files or folders; the watcher then indexes them with progress. */
export async function importPaths(paths: string[]) {
  if (!paths.length) return;
  try {
    const report = await api.importFiles(paths, showImportProgress);
    if (report.imported.length) toast(t("knowledge.imported", { n: report.imported.length }));
    if (report.rejected.length) toast(t("knowledge.rejected", { list: report.rejected.map(([p, why]) => `${p} (${why})`).join("; ") }), "error");
  } catch (e) {
    toastError(e);
  } finally {
    $("import-progress").hidden = true;
  }
}

/** "Copying 3 of 40 files (12 MB of 80 MB)" while a large drop is copied in. */
function showImportProgress(p: ImportProgressDto) {
  $("import-progress").hidden = p.files_done >= p.files_total;
  ($("import-bar") as HTMLProgressElement).value = p.bytes_total ? p.bytes_done / p.bytes_total : 1;
  $("import-text").textContent = t("knowledge.copying", { done: p.files_done, total: p.files_total, bytes: formatBytes(p.bytes_done), of: formatBytes(p.bytes_total) });
}

/** Picks another knowledge folder in the system's dialog; Kea then indexes it instead (no file moves). */
export async function changeKnowledgeFolder() {
  const [folder] = await api.pickPaths("folder");
  if (!folder || !(await confirmAction(t("knowledge.change_folder_confirm", { folder }), t("knowledge.use_folder")))) return;
  await api.setKnowledgeDir(folder);
  toast(t("knowledge.folder_changed", { folder }));
}

async function pick(directory: boolean) {
  await importPaths(await api.pickPaths(directory ? "folder" : "documents"));
}

/** Whether the point (CSS pixels in the window) falls on the element. */
export function isInside(element: Element, x: number, y: number): boolean {
  const r = element.getBoundingClientRect();
  return x >= r.left && x < r.right && y >= r.top && y < r.bottom;
}

/** Wires the knowledge pane, progress events and drag-and-drop. */
export function setupKnowledge() {
  $("add-files").addEventListener("click", () => void pick(false).catch(toastError));
  $("add-folder").addEventListener("click", () => void pick(true).catch(toastError));
  $("reindex").addEventListener("click", () => api.reindex().catch(toastError));
  $<HTMLFormElement>("web-page-form").addEventListener("submit", (event) => void addWebPage(event));
  $("change-knowledge-folder").addEventListener("click", () => void changeKnowledgeFolder().catch(toastError));
  $("cancel-indexing").addEventListener("click", () => void api.cancelIndexing());
  $("pause-indexing").addEventListener("click", () => api.pauseIndexing().then(refreshStatus, toastError));
  $("resume-indexing").addEventListener("click", () => {
    $("paused").hidden = true;
    api.resumeIndexing().then(refreshStatus, toastError);
  });
  void listen<Progress>("index-progress", (event) => {
    const p = event.payload;
    indexing = applyProgress(indexing, p);
    if (p.type === "started") {
      filesInProgress = new Map();
      queuedFiles = new Set(p.queued);
      scheduleRefresh();
    }
    if (p.type === "file_done") {
      filesInProgress.set(p.path, p.error);
      queuedFiles.delete(p.path);
    }
    showProgress();
    if (p.type === "file_done") scheduleRefresh();
    if (p.type === "finished") void refreshStatus();
    // New text may bring a language the embedder does not read.
    if (p.type === "finished" && p.embedded > 0) void renderSetup();
  });
  void getCurrentWebview().onDragDropEvent((event) => {
    const pane = $("knowledge");
    if (event.payload.type === "leave") {
      pane.classList.remove("dragging");
      return;
    }
    // On the knowledge pane everything is imported (pictures are read by
    // OCR); elsewhere a photo is identified and documents are imported.
    const ratio = window.devicePixelRatio || 1;
    const onPane = isInside(pane, event.payload.position.x / ratio, event.payload.position.y / ratio);
    pane.classList.toggle("dragging", onPane && event.payload.type !== "drop");
    if (event.payload.type !== "drop") return;
    const images = onPane ? [] : event.payload.paths.filter(isImagePath);
    for (const path of images) void identify({ path });
    void importPaths(event.payload.paths.filter((p) => !images.includes(p)));
  });
}
