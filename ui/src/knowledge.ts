// The knowledge rail: documents with status, chunks and size in a virtual
// list (only the rows in view are drawn); add files or folders (dialog or
// drop) or a web page; summarize one in the chat, re-index or delete one
// (a web page is fetched again, and opens at its address); re-index all; live progress with cancel; the
// model in use and the index size.
import { listen } from "@tauri-apps/api/event";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { api, type DocumentDto, type ImportProgressDto, type WebPageDto } from "./api";
import { askInChat, identify } from "./chat";
import { renderSetup } from "./setup";
import { $, button, confirmAction, el, showForm, toast, toastError } from "./dom";
import { t } from "./i18n";
import { applyProgress, asCommandError, formatBytes, idle, isImagePath, type Progress, visibleRows } from "./state";

let indexing = idle;
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
  const detail = el("span", state === "queued" ? t("knowledge.queued") : t("knowledge.skipped", { why }), "muted detail");
  detail.title = detail.textContent ?? "";
  name.append(detail);
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
  if (doc.status === "indexed") {
    // Asked in the chat like a typed question: the overview streams there, cited.
    const summarize = button("≡", () => askInChat(t("knowledge.summarize_question", { name: doc.path })));
    summarize.title = t("knowledge.summarize");
    item.append(summarize);
  }
  // The state is a line of its own under the name (a narrow pane keeps both readable).
  const state = el("span", detail, "muted detail");
  state.title = detail;
  name.append(state);
  item.append(reindex, remove);
  return item;
}

/** One row of the document list, drawn only while it is in view. */
interface Row {
  path: string;
  draw: () => HTMLElement;
}
let rows: Row[] = [];
/** The rows drawn, by path: scrolling keeps them (and a focused button in one). */
const drawn = new Map<string, HTMLElement>();
/** A row's height in pixels: `#documents li` in style.css has the same. */
const ROW_HEIGHT = 32;
/** Rows drawn beyond each edge of the view. */
const OVERSCAN = 20;

/** Draws the rows in view of the document list, padded to its full height
 * inside its scrolling box, so a folder of thousands of documents keeps a small page. */
function drawRows() {
  const [scroller, list] = [$("documents"), $("document-rows")];
  if (rows.length === 0) {
    list.style.padding = "";
    list.replaceChildren(el("li", t("knowledge.drop"), "muted empty"));
    return;
  }
  const [start, end] = visibleRows(scroller.scrollTop, scroller.clientHeight, ROW_HEIGHT, rows.length, OVERSCAN);
  const shown = rows.slice(start, end);
  const keep = new Set(shown.map((row) => row.path));
  for (const path of Array.from(drawn.keys())) if (!keep.has(path)) drawn.delete(path);
  list.style.paddingTop = `${start * ROW_HEIGHT}px`;
  list.style.paddingBottom = `${(rows.length - end) * ROW_HEIGHT}px`;
  list.replaceChildren(
    ...shown.map((row) => {
      const item = drawn.get(row.path) ?? row.draw();
      drawn.set(row.path, item);
      return item;
    }),
  );
}

let drawPending = false;

/** Redraws the list's rows once per frame while it scrolls or resizes. */
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    drawRows();
  });
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
    // The documents, new files the running sync has not read yet (a
    // cancelled or paused run leaves them queued for the next one), then
    // what was left out and why.
    const known = new Set(status.documents.map((d) => d.path));
    rows = [
      ...status.documents.map((doc): Row => ({ path: doc.path, draw: () => documentRow(doc) })),
      ...[...queuedFiles].filter((path) => !known.has(path)).map((path): Row => ({ path, draw: () => pendingRow(path, "queued") })),
      ...status.skipped.map(([path, why]): Row => ({ path, draw: () => pendingRow(path, "skipped", why) })),
    ];
    drawn.clear();
    drawRows();
    $("paused").hidden = !status.paused;
    if (status.paused && indexing.active) {
      // The run stops after the file at hand: no file is being read any more.
      indexing = idle;
      showProgress();
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

/** Fetches the address in the form into the selected collection, then closes the form. */
async function addWebPage(event: SubmitEvent) {
  event.preventDefault();
  const input = $<HTMLInputElement>("web-page-url");
  const submit = $<HTMLButtonElement>("add-web-page");
  submit.disabled = true;
  try {
    webPageKept(await api.addWebPage(input.value.trim(), $<HTMLInputElement>("web-page-local").checked));
    input.value = "";
    $("web-page-form").hidden = true;
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
  $("show-web-page").addEventListener("click", () => showForm("web-page-form", "web-page-url"));
  $<HTMLFormElement>("web-page-form").addEventListener("submit", (event) => void addWebPage(event));
  $("documents").addEventListener("scroll", scheduleDraw, { passive: true });
  new ResizeObserver(scheduleDraw).observe($("documents"));
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
