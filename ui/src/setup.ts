// The first-run plan (Settings → "Recommended for your documents", offered
// by a card over the chat on first launch): the folder's languages, this machine, and one proposed
// model per role with why, its size and the re-embedding time; each, or the
// whole set at once (one progress across the downloads, then re-embedding),
// is downloaded and used in one click. Also the notice when the embedder in
// use does not read a language of the folder (both wait in the notice queue).
import { api, type ModelDto, type PlanDto, type ProposalDto } from "./api";
import { $, button, el, toast, toastError } from "./dom";
import { changeKnowledgeFolder } from "./knowledge";
import { setNotice } from "./notices";
import { downloadInto, renderModels, useModel } from "./models";
import { t, type Key } from "./i18n";
import { asCommandError, formatBytes, questionLanguage } from "./state";

/** A language's name in the interface language (else its code). */
function languageName(code: string): string {
  const key = `lang.${code}` as Key;
  try {
    return t(key);
  } catch {
    return code;
  }
}

function shares(plan: PlanDto): string {
  return plan.languages
    .filter(([, share]) => share >= 0.05)
    .map(([code, share]) => `${Math.round(share * 100)}% ${languageName(code)}`)
    .join(", ");
}

function minutes(seconds: number): number {
  return Math.max(1, Math.ceil(seconds / 60));
}

/** Why a model is proposed, in the interface language (the engine's English reason as its tooltip). */
function why(p: ProposalDto, plan: PlanDto): string {
  if (p.base_url) return t("setup.why.server", { url: p.base_url });
  const languages = plan.languages.filter(([, s]) => s >= 0.05).map(([code]) => languageName(code)).join(" + ");
  return t(`setup.why.${p.role}` as Key, { languages: languages || "—", images: plan.images });
}

function size(p: ProposalDto): string {
  const parts = [p.installed ? t("setup.installed") : t("setup.download", { size: formatBytes(p.bytes) })];
  if (p.reembed_seconds) parts.push(t("setup.reembed", { minutes: minutes(p.reembed_seconds) }));
  return parts.join(" · ");
}

function action(p: ProposalDto, active: boolean, cell: HTMLElement): HTMLElement {
  if (active) return el("span", t("models.active"), "badge");
  if (p.base_url) return el("span", t("setup.server_hint"), "muted");
  const apply = async () => {
    if (!p.installed && !(await downloadInto(cell, [p.id]))) return;
    await useModel({ role: p.role, id: p.id });
    await Promise.all([renderSetup(), renderModels()]);
  };
  return button(p.installed ? t("models.use") : t("setup.download_use"), () => void apply().catch(toastError), "setup-apply");
}

function proposalRow(p: ProposalDto, plan: PlanDto, models: ModelDto[]): HTMLElement {
  const item = el("div", undefined, "proposal");
  item.dataset.role = p.role;
  item.dataset.model = p.id;
  const active = models.some((m) => m.id === p.id && m.role === p.role && m.active);
  const text = el("div");
  const reason = el("p", why(p, plan), "muted");
  reason.title = p.reason;
  text.append(el("strong", `${t(`models.role.${p.role}` as Key)}: ${p.id}`), reason, el("p", size(p), "muted"));
  const cell = el("div", undefined, "model-actions");
  cell.append(action(p, active, cell));
  item.append(text, cell);
  return item;
}

/** Proposals not in use yet that Kea installs itself (a server's model is chosen under Language model). */
function pendingOf(plan: PlanDto, models: ModelDto[]): ProposalDto[] {
  return plan.proposal.filter((p) => !p.base_url && !models.some((m) => m.id === p.id && m.role === p.role && m.active));
}

/** True while the whole set is being applied: its progress is not redrawn away. */
let applying = false;

/** Installs what `pending` lacks (one progress in `container`), then uses each; the embedder last, as switching it re-embeds. */
async function applyAll(pending: ProposalDto[], container: HTMLElement) {
  applying = true;
  try {
    const downloads = pending.filter((p) => !p.installed).map((p) => p.id);
    if (downloads.length && !(await downloadInto(container, downloads))) return;
    const ordered = [...pending].sort((a, b) => Number(a.role === "embedder") - Number(b.role === "embedder"));
    for (const p of ordered) await api.modelUse(p.role, p.id);
    await api.setupDone();
    toast(t("setup.applied"));
  } finally {
    applying = false;
    await Promise.all([renderSetup(), renderModels()]);
  }
}

/** The one-click button for the whole set, with the download size on it and the re-embedding cost beside it. */
function applyAllControls(pending: ProposalDto[], container: HTMLElement): HTMLElement[] {
  if (pending.length === 0) return [];
  const bytes = pending.filter((p) => !p.installed).reduce((sum, p) => sum + p.bytes, 0);
  const label = bytes > 0 ? t("setup.apply_all", { size: formatBytes(bytes) }) : t("setup.use_all");
  const controls: HTMLElement[] = [button(label, () => void applyAll(pending, container).catch(toastError), "setup-all primary")];
  const reembed = pending.find((p) => p.role === "embedder")?.reembed_seconds;
  if (reembed) controls.push(el("span", t("setup.apply_reembed", { minutes: minutes(reembed) }), "muted"));
  return controls;
}

/** The notice: a language of the folder the embedder in use does not read. */
function showNotice(plan: PlanDto) {
  const notice = $("language-notice");
  const proposed = plan.proposal.find((p) => p.role === "embedder");
  const share = plan.languages.find(([code]) => plan.uncovered.includes(code));
  if (!share || !proposed || proposed.id === plan.embedder) {
    setNotice("language-notice", false);
    return;
  }
  const text = t("setup.notice", {
    share: Math.round(share[1] * 100),
    language: languageName(share[0]),
    embedder: plan.embedder,
    proposal: proposed.id,
    size: formatBytes(proposed.bytes),
    minutes: minutes(proposed.reembed_seconds ?? 0),
  });
  notice.replaceChildren(el("span", text), button(t("setup.review"), () => openSetup(), "small"));
  setNotice("language-notice", true);
}

/** Shows the setup section of Settings. */
export function openSetup() {
  document.querySelector<HTMLElement>('[role=tab][data-view="settings"]')?.click();
  $("setup").scrollIntoView({ block: "start" });
}

/** Counts calls of `renderSetup`: only the latest one draws (an older plan may arrive last). */
let renders = 0;
/** The plan last drawn. */
let current: PlanDto | null = null;

/** Under an answer: the question is in a language the embedder in use does not read. */
export function questionNotice(question: string): HTMLElement | null {
  const language = questionLanguage(question);
  if (!current?.embedder_languages.length || current.embedder_languages.includes(language)) return null;
  const text = t("setup.question_notice", { embedder: current.embedder, language: languageName(language) });
  const box = el("p", undefined, "notice question-notice");
  box.append(el("span", text), button(t("setup.review"), () => openSetup(), "small"));
  return box;
}

/** Samples the folder, draws the plan, the notice and, on first launch, the card. */
export async function renderSetup() {
  const call = ++renders;
  let plan: PlanDto;
  let models: ModelDto[];
  try {
    [plan, models] = await Promise.all([api.setupPlan(false), api.modelsList()]);
  } catch (e) {
    if (asCommandError(e).kind !== "not_ready") toastError(e);
    return;
  }
  if (call !== renders) return;
  current = plan;
  const gib = (plan.ram_bytes / 2 ** 30).toFixed(0);
  const found = plan.languages.length ? shares(plan) : t("setup.no_text");
  $("setup-summary").textContent = t("setup.summary", { languages: found, documents: plan.documents, memory: gib, cores: plan.cores });
  $("setup-list").replaceChildren(...plan.proposal.map((p) => proposalRow(p, plan, models)));
  showNotice(plan);
  if (applying) return;
  const all = $("setup-apply-all");
  all.replaceChildren(...applyAllControls(pendingOf(plan, models), all));
  showFirstRun(plan, models);
}

/** Until the plan is applied, reviewed or skipped for this data folder, a card over the chat offers it on launch. */
function showFirstRun(plan: PlanDto, models: ModelDto[]) {
  const card = $("setup-card");
  const pending = pendingOf(plan, models);
  if (!plan.first_run || pending.length === 0) {
    setNotice("setup-card", false);
    return;
  }
  const done = () => {
    setNotice("setup-card", false);
    void api.setupDone().catch(toastError);
  };
  const names = pending.map((p) => `${t(`models.role.${p.role}` as Key)}: ${p.id}`).join(", ");
  const actions = el("div", undefined, "setup-actions");
  const review = button(t("setup.review"), () => {
    done();
    openSetup();
  }, "small");
  const folder = button(t("knowledge.change_folder"), () => void changeKnowledgeFolder().catch(toastError), "small");
  actions.append(...applyAllControls(pending, actions), review, folder, button(t("setup.skip"), done, "small"));
  const summary = t("setup.first_run", { languages: plan.languages.length ? shares(plan) : t("setup.no_text"), models: names });
  card.replaceChildren(el("span", `${t("setup.folder", { folder: plan.knowledge_dir })} ${summary}`), actions);
  setNotice("setup-card", true);
}

export function setupSetup() {
  $("setup-refresh").addEventListener("click", () => void renderSetup());
}
