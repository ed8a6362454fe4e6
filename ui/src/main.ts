// Kea's webview: knowledge pane (documents, live indexing progress, drop to
// import), chat (streamed, cited answers; drop or paste a photo to identify)
// and a passage panel. All document and model text is inserted as text,
// never as HTML.
import { Channel, invoke } from "@tauri-apps/api/core";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { listen } from "@tauri-apps/api/event";
import { applyProgress, asCommandError, formatBytes, idle, isImagePath, progressText, splitCitations, type Progress } from "./state";

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

interface CitationDto {
  id: string;
  source: string;
  heading_path: string;
  page: number | null;
  chunk_id: number;
}
interface AnswerDto {
  chat_id: number;
  answer: string;
  citations: CitationDto[];
  notice: string | null;
  refused: boolean;
  provider: string;
  route: unknown;
  trace: unknown;
}
type StreamDto = { type: "token"; text: string } | { type: "stage"; name: string; ms: number | null; detail: unknown };
interface IdentificationDto {
  candidates: [string, string | null, number][];
  level: string;
  visual_description: string;
  used_retrieval: boolean;
  evidence: CitationDto[];
  decision: { final_name: string; reasoning: string; followup: string } | null;
  reply: string;
}

let chatId: number | null = null;

function citationButton(citation: CitationDto | undefined, label: string): HTMLElement {
  const button = el("button", `[${label}]`, "cite");
  button.setAttribute("type", "button");
  if (citation) {
    button.title = `${citation.source} | ${citation.heading_path}`;
    button.addEventListener("click", () => void showPassage(citation));
  } else {
    button.setAttribute("disabled", "");
  }
  return button;
}

async function showPassage(citation: CitationDto) {
  try {
    const passage = await invoke<{ source: string; heading_path: string; page: number | null; text: string }>("passage", { chunkId: citation.chunk_id });
    $("passage-source").textContent = passage.source;
    $("passage-heading").textContent = [passage.heading_path, passage.page ? `p.${passage.page}` : ""].filter(Boolean).join(" | ");
    $("passage-text").textContent = passage.text;
    $("passage").hidden = false;
  } catch (e) {
    toast(asCommandError(e).message);
  }
}

function stageList(): { box: HTMLDetailsElement; add: (s: StreamDto) => void } {
  const box = document.createElement("details");
  box.append(el("summary", "How this was answered"));
  const list = el("ul");
  box.append(list);
  return {
    box,
    add: (s) => {
      if (s.type === "stage" && s.ms !== null) list.append(el("li", `${s.name} — ${s.ms.toFixed(0)} ms — ${JSON.stringify(s.detail)}`));
    },
  };
}

function renderAnswer(body: HTMLElement, answer: AnswerDto) {
  body.replaceChildren();
  if (answer.notice) body.append(el("p", answer.notice, "notice"));
  const text = el("p", undefined, "answer");
  for (const part of splitCitations(answer.answer)) {
    if ("cite" in part) text.append(citationButton(answer.citations.find((c) => c.id === part.cite), part.cite));
    else text.append(document.createTextNode(part.text));
  }
  body.append(text);
  if (answer.citations.length) {
    const sources = el("div", undefined, "sources");
    for (const c of answer.citations) sources.append(citationButton(c, c.id), el("span", ` ${c.source} | ${c.heading_path} `, "muted"));
    body.append(sources);
  }
}

function addMessage(role: "user" | "assistant", text?: string): HTMLElement {
  const messages = $("messages");
  messages.querySelector(".empty")?.remove();
  const item = el("div", undefined, `message ${role}`);
  const body = el("div", text, "body");
  item.append(body);
  messages.append(item);
  messages.scrollTop = messages.scrollHeight;
  return item;
}

async function ask(question: string) {
  addMessage("user", question);
  const item = addMessage("assistant");
  const body = item.querySelector(".body") as HTMLElement;
  const stages = stageList();
  item.append(stages.box);
  const channel = new Channel<StreamDto>();
  channel.onmessage = (event) => {
    if (event.type === "token") body.append(document.createTextNode(event.text));
    else stages.add(event);
  };
  try {
    const answer = await invoke<AnswerDto>("ask", { question, chatId, onEvent: channel });
    chatId = answer.chat_id;
    renderAnswer(body, answer);
  } catch (e) {
    body.textContent = asCommandError(e).message;
    item.classList.add("failed");
  }
}

async function identify(args: { path?: string; bytes?: number[] }) {
  addMessage("user", args.path ? `📷 ${args.path.split("/").pop()}` : "📷 pasted image");
  const item = addMessage("assistant", "Identifying…");
  const body = item.querySelector(".body") as HTMLElement;
  const stages = stageList();
  item.append(stages.box);
  const channel = new Channel<StreamDto>();
  channel.onmessage = (event) => stages.add(event);
  try {
    const r = await invoke<IdentificationDto>("identify", { ...args, chatId, onEvent: channel });
    body.replaceChildren(el("p", r.reply, "answer"));
    const card = el("div", undefined, "id-card");
    for (const [name, zh, p] of r.candidates) {
      const row = el("div", undefined, "candidate");
      const bar = document.createElement("progress");
      bar.max = 1;
      bar.value = p;
      row.append(el("span", `${name}${zh ? ` / ${zh}` : ""}`), bar, el("span", `${(p * 100).toFixed(0)}%`));
      card.append(row);
    }
    card.append(el("p", `Confidence: ${r.level}${r.visual_description ? ` · looks: ${r.visual_description}` : ""}`, "muted"));
    card.append(el("p", r.used_retrieval ? "Checked against your documents:" : "Not checked against your documents (confident).", "muted"));
    for (const c of r.evidence) card.append(citationButton(c, c.id), el("span", ` ${c.source} | ${c.heading_path} `, "muted"));
    if (r.decision?.followup) card.append(el("p", `Tip: ${r.decision.followup}`, "muted"));
    body.append(card);
  } catch (e) {
    body.textContent = asCommandError(e).message;
    item.classList.add("failed");
  }
}

$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $<HTMLTextAreaElement>("question");
  const question = input.value.trim();
  if (!question) return;
  input.value = "";
  void ask(question);
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("ask-form").dispatchEvent(new Event("submit", { cancelable: true }));
  }
});
$("close-passage").addEventListener("click", () => ($("passage").hidden = true));
document.addEventListener("paste", (event) => {
  const file = Array.from(event.clipboardData?.files ?? []).find((f) => f.type.startsWith("image/"));
  if (!file) return;
  event.preventDefault();
  void file.arrayBuffer().then((buffer) => identify({ bytes: Array.from(new Uint8Array(buffer)) }));
});
void getCurrentWebview().onDragDropEvent((event) => {
  if (event.payload.type !== "drop") return;
  const images = event.payload.paths.filter(isImagePath);
  const documents = event.payload.paths.filter((p) => !isImagePath(p));
  for (const path of images) void identify({ path });
  if (documents.length) {
    invoke<{ imported: string[]; rejected: [string, string][] }>("import_files", { paths: documents })
      .then((r) => {
        if (r.rejected.length) toast(r.rejected.map(([p, why]) => `${p}: ${why}`).join("\n"));
      })
      .catch((e) => toast(asCommandError(e).message));
  }
});
function showLlm(info: { provider: string; reason: string } | null) {
  if (!info) return;
  $("llm-state").textContent = `· ${info.provider}`;
  $("llm-state").title = info.reason;
}
void listen<{ provider: string; reason: string }>("llm-ready", (event) => showLlm(event.payload));
void invoke<{ provider: string; reason: string } | null>("llm_info").then(showLlm);
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
