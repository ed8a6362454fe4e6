// The chat: streamed answers rendered as sanitised markdown with clickable
// citations, the "how this was answered" trace, stop, copy, conversations
// (new, reopen, rename, delete), photo identification cards, and the
// passage panel a citation opens.
import { askScope, collectionLabel, selectedCollection } from "./collections";
import { api, type AnswerDto, type CitationDto, type IdentificationDto, type ReasonDto, type RelatedDto, type ShownDto, type TraceDto, type StreamDto } from "./api";
import { $, button, confirmAction, el, toast, toastError } from "./dom";
import { downloadInto } from "./models";

/** The catalog's image model, offered when none is installed. */
const IMAGE_MODEL = "clip-vit-b-32-vision";
import { language, t, type Key } from "./i18n";
import { renderMarkdown } from "./markdown";
import { questionNotice } from "./setup";
import { asCommandError, OpenConversation } from "./state";

const conversation = new OpenConversation();
let busy = false;
/** Collection switches under way: questions and the conversation list wait for the last (see `kea-collection-switching`). */
let switching = 0;
let openPassagePath: string | null = null;
let openPassagePage: number | null = null;
let openPassageUrl: string | null = null;

function citationButton(citation: CitationDto | undefined, label: string): HTMLElement {
  const node = el("button", `[${label}]`, "cite");
  node.setAttribute("type", "button");
  node.dataset.cite = label;
  if (citation) {
    node.title = `${citation.source} | ${citation.heading_path}`;
    node.addEventListener("click", () => void showPassage(citation));
  } else {
    node.setAttribute("disabled", "");
  }
  return node;
}

function openLink(url: string) {
  api.openLink(url).catch(toastError);
}

/** A cited web page's address, opening in the browser. */
function pageLink(url: string): HTMLElement {
  let host = url;
  try {
    host = new URL(url).host;
  } catch {
    // An address the engine took but the browser does not: shown whole.
  }
  const link = el("a", `↗ ${host} `, "page-link");
  link.setAttribute("href", url);
  link.title = url;
  link.addEventListener("click", (event) => {
    event.preventDefault();
    openLink(url);
  });
  return link;
}

/** What had the focus when the passage opened (a citation): it gets it back on close. */
let passageOpener: HTMLElement | null = null;

/** Shows the passage panel with the focus on its close button, so a keyboard user is in it. */
function openPassagePanel() {
  if ($("passage").hidden) passageOpener = document.activeElement as HTMLElement | null;
  $("passage").hidden = false;
  $("close-passage").focus();
}

function closePassagePanel() {
  $("passage").hidden = true;
  passageOpener?.focus();
  passageOpener = null;
}

async function showPassage(citation: CitationDto) {
  try {
    const ticket = conversation.ask();
    const passage = await api.passage(citation.chunk_id, citation.collection ?? null, citation.source, citation.fingerprint ?? null);
    // Another collection or conversation opened meanwhile: its documents are not this citation's.
    if (conversation.ask() !== ticket || switching > 0) return;
    $("passage-source").textContent = passage.source;
    $("passage-heading").textContent = [passage.heading_path, passage.page ? `p.${passage.page}` : ""].filter(Boolean).join(" | ");
    renderMarkdown($("passage-text"), passage.text, { citation: (label) => el("span", `[${label}]`), openLink });
    // A passage of another collection (an answer across several) shows its text only.
    const elsewhere = citation.collection != null && citation.collection !== selectedCollection();
    openPassagePath = elsewhere ? null : passage.source;
    openPassagePage = passage.page;
    openPassageUrl = citation.url;
    $("open-page").hidden = !citation.url;
    $("open-page").title = citation.url ?? "";
    if (citation.collection) $("passage-source").textContent = `${collectionLabel(citation.collection)} › ${passage.source}`;
    openPassagePanel();
    if (!elsewhere) await showPdfPage(passage.source, passage.page, passage.text);
  } catch (e) {
    toastError(e);
  }
}

/** The cited page of a PDF above the passage, the passage highlighted (pdf.js loads on first use). */
async function showPdfPage(source: string, page: number | null, text: string) {
  const box = $("passage-page");
  box.replaceChildren();
  delete box.dataset.highlights;
  box.hidden = !(page && source.toLowerCase().endsWith(".pdf"));
  if (box.hidden || !page) return;
  const [{ renderPdfPage }, bytes] = await Promise.all([import("./pdfpage"), api.documentBytes(source)]);
  box.dataset.highlights = String(await renderPdfPage(box, bytes, page, text));
}

/** A stage's detail in words: its plain values as "name: value", the whole output behind a toggle. */
function stageDetail(fields: [string, string][], output: string): HTMLElement {
  const box = el("div");
  if (fields.length) box.append(el("span", fields.map(([name, value]) => `${name}: ${value}`).join(" · "), "muted"));
  if (output) {
    const raw = document.createElement("details");
    raw.className = "raw";
    raw.append(el("summary", t("inspector.details")), el("pre", output));
    box.append(raw);
  }
  return box;
}

/** The collapsible list of stages (route, retrieval, llm) with timings. */
function traceBox(): { box: HTMLDetailsElement; add: (s: StreamDto) => void } {
  const box = document.createElement("details");
  box.className = "trace";
  box.append(el("summary", t("chat.trace")));
  const list = el("ul");
  box.append(list);
  return {
    box,
    add: (s) => {
      if (s.type !== "stage" || s.ms === null) return;
      const item = el("li");
      item.append(el("strong", s.name), el("span", ` ${s.ms.toFixed(0)} ms `, "muted"), stageDetail(s.fields, s.raw));
      list.append(item);
    },
  };
}

const STAGE_NAMES: Record<string, Key> = {
  dense: "inspector.dense",
  sparse: "inspector.sparse",
  fusion: "inspector.fusion",
  mmr: "inspector.mmr",
  rerank: "inspector.rerank",
  filter: "inspector.filter",
};
const OUTCOME_MARKS: Record<string, string> = { answered: "✓", unsure: "?", refused: "✗" };

/** A passage by its document and last heading (never an id alone). */
function passageName(trace: TraceDto, id: number): string {
  const passage = trace.passages.find((p) => p.id === id);
  if (!passage) return t("inspector.unnamed");
  const heading = passage.heading_path.split(" > ").pop() ?? "";
  return heading && heading !== passage.source ? `${passage.source} › ${heading}` : passage.source;
}

/** A small bar: `value` as a share of `max`. */
function bar(value: number, max: number): HTMLElement {
  const b = el("span", undefined, "bar");
  b.style.width = `${Math.max(2, Math.round((60 * Math.max(0, value)) / (max > 0 ? max : 1)))}px`;
  return b;
}

/** One reason for the decision, in the user's language. */
function reasonText(reason: ReasonDto): string {
  const n = (x: number) => x.toFixed(2);
  switch (reason.kind) {
    case "coverage":
      return t("reason.coverage", { share: Math.round(reason.share * 100) });
    case "not_in_any_document":
      return t("reason.not_in_any_document", { terms: reason.terms.join("”, “") });
    case "judged_in_translation":
      return t("reason.judged_in_translation", { query: reason.query });
    case "answer_type_missing":
      return t("reason.answer_type_missing", { asked: t(`answer_kind.${reason.asked}` as Key) });
    case "similarity":
      return t("reason.similarity", { value: n(reason.value) });
    case "calibrated":
      return t("reason.calibrated", { probability: n(reason.probability), answer_at: n(reason.answer_at), refuse_below: n(reason.refuse_below) });
    case "rerank":
      return t("reason.rerank", { probability: n(reason.probability), threshold: n(reason.threshold) });
    default:
      return t(`reason.${reason.kind}`);
  }
}

/** The decision: its outcome, the reason in words and each signal as a bar. */
function decisionBox(trace: TraceDto): HTMLElement | null {
  const r = trace.relevance;
  if (!r) return null;
  const box = el("div", undefined, `decision ${r.outcome}`);
  const outcome = (["answered", "unsure", "refused"].includes(r.outcome) ? `outcome.${r.outcome}` : "outcome.answered") as Key;
  const reasons = r.reasons.map(reasonText).join(language() === "zh" ? "；" : "; ");
  box.append(el("strong", `${OUTCOME_MARKS[r.outcome] ?? "·"} ${t(outcome)}`), el("p", reasons || r.reason, "reason"));
  const signals = el("ul", undefined, "signals");
  for (const [name, value] of r.signals) {
    const li = el("li");
    li.append(el("span", name.replace(/_/g, " ")), bar(value, 1), el("span", value.toFixed(2), "muted"));
    signals.append(li);
  }
  box.append(signals);
  return box;
}

/** The retrieval inspector ("how this was answered", in words): the
 *  decision and why, then what each retriever found — document and heading
 *  with a bar for the score — the fallbacks that fired, and the raw trace
 *  behind a "details" toggle. */
function retrievalInspector(trace: TraceDto): HTMLElement {
  const box = el("div", undefined, "inspector");
  box.append(el("p", `${t("chat.inspector")} · ${trace.total_ms.toFixed(1)} ms`, "muted"));
  const decision = decisionBox(trace);
  if (decision) box.append(decision);
  for (const stage of trace.stages) {
    const name = STAGE_NAMES[stage.stage];
    if (!name || stage.candidates.length === 0) continue;
    const row = el("div", undefined, "stage");
    row.append(el("strong", t(name)), el("span", ` ${stage.ms.toFixed(1)} ms`, "muted"));
    const top = stage.candidates.slice(0, 5);
    const max = Math.max(...top.map(([, score]) => score));
    const list = el("ol");
    for (const [id, score] of top) {
      const li = el("li");
      li.append(el("span", passageName(trace, id)), bar(score, max), el("span", score.toFixed(3), "muted"));
      list.append(li);
    }
    row.append(list);
    box.append(row);
  }
  for (const fallback of trace.fallbacks) box.append(el("p", `↪ ${fallback}`, "muted"));
  const raw = document.createElement("details");
  raw.className = "raw";
  raw.append(el("summary", t("inspector.details")), el("pre", JSON.stringify(trace, null, 1)));
  box.append(raw);
  return box;
}

/**
 * An answer as it was shown: its outcome, notice, text with citations, then
 * the related passages and the sentences left out as unsupported. The same
 * for a live answer and a reopened one (`shown` is null for an answer saved
 * by an earlier Kea).
 */
function renderAnswer(item: HTMLElement, body: HTMLElement, text: string, citations: CitationDto[], shown: ShownDto | null) {
  body.replaceChildren();
  if (shown?.notice) body.append(noticeOnce(item, shown.notice));
  const answer = el("div", undefined, "answer markdown");
  // The answer's links and images stay inert text, their addresses shown: a model's words are never active.
  renderMarkdown(answer, text, { citation: (label) => citationButton(citations.find((c) => c.id === label), label) });
  body.append(answer);
  if (citations.length) {
    const sources = el("div", undefined, "sources");
    sources.append(el("span", `${t("chat.sources")}: `, "muted"));
    for (const c of citations) {
      sources.append(citationButton(c, c.id), el("span", ` ${c.collection ? `${collectionLabel(c.collection)} › ` : ""}${c.source} | ${c.heading_path} `, "muted"));
      if (c.url) sources.append(pageLink(c.url));
    }
    body.append(sources);
  }
  if (!shown) return;
  item.classList.add(`outcome-${shown.outcome}`);
  if (shown.related.length) body.append(relatedReading(shown.related));
  if (shown.unsupported.length) body.append(unsupportedSentences(shown.unsupported));
}

/**
 * Why an answer is quoted rather than written: in full the first time the
 * conversation shows it, then as a small tag carrying it on hover.
 */
function noticeOnce(item: HTMLElement, notice: string): HTMLElement {
  const said = Array.from($("messages").querySelectorAll<HTMLElement>(".notice")).some((n) => !item.contains(n) && n.textContent === notice);
  if (!said) return el("p", notice, "notice");
  const tag = el("span", t("chat.quoted"), "notice-tag");
  tag.title = notice;
  return tag;
}

/** The closest passages of an unsure outcome: where each is, and its sentence closest to the question. */
function relatedReading(related: RelatedDto[]): HTMLElement {
  const box = el("div", undefined, "related");
  box.append(el("p", t("chat.related"), "muted"));
  for (const r of related) {
    const page = r.passage.page ? ` (p. ${r.passage.page})` : "";
    const place = r.passage.heading_path ? r.passage.heading_path.replaceAll(" > ", " › ") : r.passage.source;
    const open = button(`${place}${page}`, () => void showPassage(r.passage), "link related-open");
    open.title = r.passage.source;
    const item = el("div", undefined, "related-item");
    item.append(open, el("span", ` ${r.passage.source}`, "muted"), el("p", r.snippet, "snippet"));
    box.append(item);
  }
  return box;
}

/** Sentences of the model's answer that its passages do not support: taken out of the answer, shown apart. */
function unsupportedSentences(sentences: string[]): HTMLElement {
  const box = document.createElement("details");
  box.className = "unsupported";
  box.append(el("summary", t("chat.unsupported", { n: sentences.length })));
  for (const s of sentences) {
    const item = el("div", undefined, "markdown");
    renderMarkdown(item, s, { citation: (label) => el("span", `[${label}]`, "muted") });
    box.append(item);
  }
  return box;
}

function addMessage(role: "user" | "assistant", text?: string): { item: HTMLElement; body: HTMLElement } {
  const messages = $("messages");
  messages.querySelector(".empty")?.remove();
  const item = el("div", undefined, `message ${role}`);
  const body = el("div", text, "body");
  item.append(body);
  messages.append(item);
  messages.scrollTop = messages.scrollHeight;
  return { item, body };
}

function copyButton(text: () => string): HTMLElement {
  const node = button(t("chat.copy"), () => {
    void navigator.clipboard?.writeText(text()).then(() => (node.textContent = t("chat.copied")));
  });
  node.classList.add("copy");
  return node;
}

function setBusy(value: boolean) {
  busy = value;
  $("stop").hidden = !value;
  $<HTMLButtonElement>("send").disabled = value;
  // The answer belongs to the collection it was asked in: no switch until it is done.
  $<HTMLSelectElement>("collection").disabled = value;
}

/** Asks `question` in the open conversation, as if typed (the knowledge pane's "Summarize"); not while an answer is coming. */
export function askInChat(question: string) {
  if (!busy) void ask(question);
}

async function ask(question: string) {
  addMessage("user", question);
  const { item, body } = addMessage("assistant");
  item.classList.add("streaming");
  const trace = traceBox();
  let streamed = "";
  // Channel messages may arrive after the command's result: once the final
  // answer is rendered, late tokens must not overwrite it.
  let finished = false;
  setBusy(true);
  try {
    const ticket = conversation.ask();
    const answer: AnswerDto = await api.ask(question, conversation.id, askScope(), (event) => {
      if (event.type === "token") {
        if (finished) return;
        streamed += event.text;
        // Unjudged text is a draft until the checked answer replaces it.
        body.replaceChildren(el("div", t("chat.draft"), "draft-label muted"), el("div", streamed, "draft"));
        $("messages").scrollTop = $("messages").scrollHeight;
      } else trace.add(event);
    });
    finished = true;
    const isNew = conversation.id !== answer.chat_id;
    if (!conversation.settle(ticket, answer.chat_id)) return;
    renderAnswer(item, body, answer.answer, answer.citations, answer.shown);
    const unread = questionNotice(question);
    if (unread) body.append(unread);
    for (const s of answer.summaries) {
      const cited = answer.citations.find((c) => c.chunk_ids.includes(s.chunk_id));
      if (cited && s.summary) body.append(el("p", `${cited.id} · ${s.summary}`, "summary muted"));
    }
    if (answer.trace) trace.box.append(retrievalInspector(answer.trace));
    item.append(copyButton(() => answer.answer), trace.box);
    item.scrollIntoView({ block: "end" });
    if (isNew) void refreshConversations();
  } catch (e) {
    finished = true;
    const err = asCommandError(e);
    if (err.kind === "cancelled") body.textContent = `${streamed} ${t("chat.stopped")}`;
    else {
      body.textContent = err.message;
      item.classList.add("failed");
    }
  } finally {
    item.classList.remove("streaming");
    setBusy(false);
  }
}

function identificationCard(r: IdentificationDto, imageUrl: string | null): HTMLElement {
  const card = el("div", undefined, "id-card");
  if (imageUrl) card.append(Object.assign(document.createElement("img"), { src: imageUrl, alt: "", className: "photo" }));
  const facts = el("div", undefined, "facts");
  for (const [name, zh, p] of r.candidates.slice(0, 3)) {
    const row = el("div", undefined, "candidate");
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = p;
    row.append(el("span", `${name}${zh ? ` / ${zh}` : ""}`, "name"), bar, el("span", `${(p * 100).toFixed(0)}%`, "muted"));
    facts.append(row);
  }
  facts.append(el("p", t("id.confidence", { level: r.level }), `level level-${r.level.toLowerCase()}`));
  if (r.visual_description) facts.append(el("p", t("id.looks", { text: r.visual_description }), "muted"));
  facts.append(el("p", r.used_retrieval ? t("id.consulted") : t("id.not_consulted"), "muted"));
  const evidence = el("div", undefined, "evidence");
  for (const c of r.evidence) evidence.append(citationButton(c, c.id), el("span", ` ${c.source} | ${c.heading_path} `, "muted"));
  facts.append(evidence);
  if (r.decision?.final_name) facts.append(el("p", t("id.decision", { name: r.decision.final_name }), "decision"));
  if (r.decision?.followup) facts.append(el("p", t("id.tip", { text: r.decision.followup }), "muted"));
  card.append(facts);
  return card;
}

/** Identifies a dropped (path) or pasted/picked (bytes) image. */
export async function identify(image: { path?: string; bytes?: Uint8Array; name?: string }) {
  addMessage("user", `▣ ${image.name ?? image.path?.split("/").pop() ?? "image"}`);
  const { item, body } = addMessage("assistant", t("chat.identifying"));
  const trace = traceBox();
  const imageUrl = image.bytes ? URL.createObjectURL(new Blob([image.bytes as BlobPart])) : null;
  setBusy(true);
  try {
    const ticket = conversation.ask();
    const r = await api.identify({ path: image.path, bytes: image.bytes ? Array.from(image.bytes) : undefined }, conversation.id, language(), trace.add);
    const isNew = conversation.id !== r.chat_id;
    if (!conversation.settle(ticket, r.chat_id)) return;
    renderAnswer(item, body, r.reply, r.evidence, null);
    body.append(identificationCard(r, imageUrl));
    item.append(trace.box);
    if (isNew) void refreshConversations();
    item.scrollIntoView({ block: "end" });
  } catch (e) {
    const error = asCommandError(e);
    if (error.kind === "model_missing") offerImageModel(body, image);
    else body.textContent = error.message;
    item.classList.add("failed");
  } finally {
    setBusy(false);
  }
}

/** No image model: offer the download, then identify the same photo. */
function offerImageModel(body: HTMLElement, image: { path?: string; bytes?: Uint8Array; name?: string }) {
  const progress = el("div");
  const start = button(t("id.download_model"), async () => {
    if (await downloadInto(progress, [IMAGE_MODEL])) void identify(image);
  }, "primary");
  progress.append(start);
  body.replaceChildren(el("p", t("id.no_model")), progress);
}

function showEmpty() {
  $("messages").replaceChildren(el("p", t("chat.empty"), "muted empty"));
}

async function openConversation(id: number) {
  try {
    const ticket = conversation.ask();
    const messages = await api.conversationMessages(id);
    // Read from the collection open when asked: not shown once another is.
    if (!conversation.settle(ticket, id)) return;
    conversation.open(id);
    showEmpty();
    for (const m of messages) {
      const { item, body } = addMessage(m.role, m.role === "user" ? m.content : undefined);
      if (m.role === "assistant") renderAnswer(item, body, m.content, m.citations, m.shown);
    }
    void refreshConversations();
  } catch (e) {
    toastError(e);
  }
}

function startRename(item: HTMLElement, id: number, title: string) {
  const input = Object.assign(document.createElement("input"), { value: title, className: "rename" });
  const finish = (save: boolean) => {
    if (save && input.value.trim() && input.value !== title) api.renameConversation(id, input.value).then(refreshConversations, toastError);
    else void refreshConversations();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") finish(true);
    if (e.key === "Escape") finish(false);
  });
  input.addEventListener("blur", () => finish(true), { once: true });
  item.replaceChildren(input);
  input.focus();
}

export async function refreshConversations() {
  try {
    const list = $("conversations");
    // While the collection changes, no conversation (of either) is offered.
    if (switching > 0) return list.replaceChildren();
    const ticket = conversation.ask();
    const conversations = await api.conversations();
    if (switching > 0 || conversation.ask() !== ticket) return;
    list.replaceChildren();
    if (!conversations.length) list.append(el("li", t("conversations.empty"), "muted"));
    for (const c of conversations) {
      const item = el("li", undefined, c.id === conversation.id ? "active" : "");
      const open = button(c.title, () => void openConversation(c.id), "link title");
      const rename = button("✎", () => startRename(item, c.id, c.title));
      rename.title = t("conversations.rename");
      const remove = button("✕", async () => {
        if (!(await confirmAction(t("conversations.confirm_delete", { title: c.title }), t("conversations.delete")))) return;
        await api.deleteConversation(c.id).catch(toastError);
        if (conversation.id === c.id) newChat();
        void refreshConversations();
      });
      remove.title = t("conversations.delete");
      const save = button("⤓", () => {
        api.exportConversation(c.id).then((file) => file && toast(t("conversations.exported", { file })), toastError);
      });
      save.title = t("conversations.export");
      item.append(open, rename, save, remove);
      list.append(item);
    }
  } catch (e) {
    if (asCommandError(e).kind !== "not_ready") toastError(e);
  }
}

function newChat() {
  conversation.open(null);
  showEmpty();
  closePassagePanel();
  openPassagePath = null;
  void refreshConversations();
}

/** Wires the chat pane's controls. */
export function setupChat() {
  // A switch starts from the new collection's own conversations: what was
  // open (its citations, a reply still coming) belongs to the one it was asked in.
  window.addEventListener("kea-collection-switching", () => {
    switching += 1;
    newChat();
  });
  // The last switch to end starts from its collection: nothing opened meanwhile stays open.
  window.addEventListener("kea-collection-switched", () => {
    switching = Math.max(0, switching - 1);
    if (switching === 0) newChat();
  });
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $<HTMLTextAreaElement>("question");
    const question = input.value.trim();
    if (!question || busy || switching > 0) return;
    input.value = "";
    void ask(question);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $<HTMLFormElement>("ask-form").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => void api.stopGeneration());
  $("new-chat").addEventListener("click", newChat);
  $("close-passage").addEventListener("click", closePassagePanel);
  $("passage").addEventListener("keydown", (event) => {
    if (event.key === "Escape") closePassagePanel();
  });
  $("open-document").addEventListener("click", () => {
    if (openPassagePath) api.openDocument(openPassagePath, openPassagePage).catch(toastError);
  });
  $("open-page").addEventListener("click", () => {
    if (openPassageUrl) openLink(openPassageUrl);
  });
  $<HTMLInputElement>("pick-image").addEventListener("change", (event) => {
    const input = event.target as HTMLInputElement;
    const file = input.files?.[0];
    if (file) void file.arrayBuffer().then((buffer) => identify({ bytes: new Uint8Array(buffer), name: file.name }));
    input.value = "";
  });
  document.addEventListener("paste", (event) => {
    const file = Array.from(event.clipboardData?.files ?? []).find((f) => f.type.startsWith("image/"));
    if (!file) return;
    event.preventDefault();
    void file.arrayBuffer().then((buffer) => identify({ bytes: new Uint8Array(buffer), name: file.name || "pasted image" }));
  });
}
