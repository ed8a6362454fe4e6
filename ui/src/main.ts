// Kea's webview: knowledge pane (documents, live indexing progress) and a
// search pane. All text from documents is inserted as text, never as HTML.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { applyProgress, asCommandError, formatBytes, idle, progressText, type Progress } from "./state";

interface DocumentDto {
  path: string;
  status: "indexed" | "error";
  error: string | null;
  title: string | null;
  chunks: number;
  size: number;
}
interface StatusDto {
  knowledge_dir: string;
  model_id: string | null;
  documents: DocumentDto[];
  chunks: number;
  index_bytes: number;
}
interface HitDto {
  source: string;
  heading_path: string;
  page: number | null;
  score: number;
  text: string;
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
let indexing = idle;

function el(tag: string, text?: string, className?: string): HTMLElement {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function toast(message: string) {
  const box = $("toast");
  box.textContent = message;
  box.hidden = false;
  window.setTimeout(() => (box.hidden = true), 5000);
}

async function refreshStatus() {
  try {
    const status = await invoke<StatusDto>("status");
    $("engine-state").textContent = `model: ${status.model_id ?? "none"}`;
    $("knowledge-summary").textContent =
      `${status.documents.length} documents · ${status.chunks} chunks · ${formatBytes(status.index_bytes)} — ${status.knowledge_dir}`;
    const list = $("documents");
    list.replaceChildren();
    if (status.documents.length === 0) list.append(el("li", "Drop documents into the knowledge folder to start.", "muted"));
    for (const doc of status.documents) {
      const item = el("li", undefined, doc.status);
      item.append(el("span", doc.status === "error" ? "✗" : "✓", "mark"), el("span", doc.path, "path"));
      item.append(el("span", doc.status === "error" ? doc.error ?? "error" : `${doc.chunks} chunks`, "muted"));
      list.append(item);
    }
  } catch (e) {
    const err = asCommandError(e);
    if (err.kind !== "not_ready") toast(err.message);
  }
}

function showProgress() {
  $("progress").hidden = !indexing.active;
  const bar = $<HTMLProgressElement>("progress-bar");
  bar.max = Math.max(indexing.total, 1);
  bar.value = indexing.done;
  $("progress-text").textContent = progressText(indexing);
}

async function runSearch(query: string) {
  const results = $("results");
  results.replaceChildren();
  try {
    const hits = await invoke<HitDto[]>("search", { query, topK: 5 });
    if (hits.length === 0) results.append(el("li", "No passages found.", "muted"));
    for (const hit of hits) {
      const item = el("li");
      const where = [hit.source, hit.heading_path, hit.page ? `p.${hit.page}` : ""].filter(Boolean).join(" | ");
      item.append(el("div", `${where}  (${hit.score.toFixed(3)})`, "source"), el("p", hit.text, "passage"));
      results.append(item);
    }
  } catch (e) {
    toast(asCommandError(e).message);
  }
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const query = $<HTMLInputElement>("query").value.trim();
  if (query) void runSearch(query);
});
$("reindex").addEventListener("click", () => {
  invoke("reindex").catch((e) => toast(asCommandError(e).message));
});

void listen<Progress>("index-progress", (event) => {
  indexing = applyProgress(indexing, event.payload);
  showProgress();
  if (event.payload.type !== "started") void refreshStatus();
});
void listen("engine-ready", () => void refreshStatus());
void listen<{ kind: string; message: string }>("engine-error", (event) => toast(event.payload.message));
void refreshStatus();
