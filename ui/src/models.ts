// The Models page (inside Settings): the catalog per role with what is
// installed and in use; download with progress, Pause/Resume and Cancel (an
// interrupted download resumes), use, delete. A new embedder asks first, showing how many
// chunks must be embedded again and roughly how long that takes.
import { api, type DownloadDto, type ModelDto, type ModelRoleDto } from "./api";
import { $, button, confirmAction, el, toast, toastError } from "./dom";
import { t, type Key } from "./i18n";
import { asCommandError, formatBytes, RateMeter, secondsLeft } from "./state";

const ROLES: ModelRoleDto[] = ["embedder", "reranker", "image", "llm"];

/** The ids of `ids` not installed yet. */
async function missing(ids: string[]): Promise<string[]> {
  const models = await api.modelsList();
  return ids.filter((id) => !models.some((m) => m.id === id && m.installed));
}

/** Resolves when `node` is clicked. */
function clicked(node: HTMLElement): Promise<void> {
  return new Promise((resolve) => node.addEventListener("click", () => resolve(), { once: true }));
}

/**
 * Downloads `ids` (one after another) into `container`: one progress bar
 * across them with the model and file being fetched, bytes and time left;
 * Pause (a paused download resumes where it stopped) and Cancel. True when
 * every one is installed.
 */
export async function downloadInto(container: HTMLElement, ids: string[]): Promise<boolean> {
  const bar = document.createElement("progress");
  const label = el("span", t("models.starting"), "muted");
  let current = ids[0];
  let pausing = false;
  const stop = (pause: boolean) => () => {
    pausing = pause;
    void api.modelCancel(current);
  };
  const pause = button(t("models.pause"), stop(true), "small pause");
  const resume = button(t("models.resume"), () => undefined, "small resume");
  const cancel = button(t("models.cancel"), stop(false), "small cancel");
  const box = el("div", undefined, "download");
  box.dataset.download = ids.join(" ");
  box.append(bar, label, pause, cancel);
  container.replaceChildren(box);
  const rate = new RateMeter();
  for (;;) {
    try {
      await api.modelInstall(await missing(ids), (p) => {
        current = p.model;
        bar.max = Math.max(p.total_bytes, 1);
        bar.value = p.done_bytes;
        label.textContent = downloadText(p, rate.update(p.done_bytes));
      });
      toast(t("models.installed", { id: ids.join(", ") }));
      return true;
    } catch (e) {
      if (asCommandError(e).kind !== "cancelled") toastError(e);
      else if (pausing) {
        label.textContent = t("models.paused", { done: formatBytes(bar.value), total: formatBytes(bar.max) });
        pause.replaceWith(resume);
        await clicked(resume);
        resume.replaceWith(pause);
        [pausing, label.textContent] = [false, t("models.starting")];
        rate.reset();
        continue;
      } else toast(t("models.cancelled", { id: ids.join(", ") }));
      return false;
    }
  }
}

/** The progress line: step of several, model, file, bytes and time left. */
function downloadText(p: DownloadDto, bytesPerSecond: number | null): string {
  const step = p.models > 1 ? `(${p.models_done + 1}/${p.models}) ` : "";
  const line = t("models.progress", { file: `${step}${p.model} · ${p.file}`, done: formatBytes(p.done_bytes), total: formatBytes(p.total_bytes) });
  const left = secondsLeft(p.total_bytes - p.done_bytes, bytesPerSecond);
  if (left === null) return line;
  const time = left < 90 ? t("models.seconds_left", { n: left }) : t("models.minutes_left", { n: Math.ceil(left / 60) });
  return `${line} · ${time}`;
}

/** Asks before re-embedding the index with `id`; true to go ahead. */
async function confirmReembed(id: string): Promise<boolean> {
  const cost = await api.reembedCost();
  const question = t("models.confirm_embedder", {
    id,
    chunks: cost.chunks,
    documents: cost.documents,
    seconds: Math.ceil(cost.estimated_seconds),
    current: cost.indexed_model ?? "—",
  });
  return cost.chunks === 0 || (await confirmAction(question, t("models.reembed")));
}

/** Uses installed model `m` for its role (asking first for a new embedder). */
export async function useModel(m: Pick<ModelDto, "role" | "id">) {
  if (m.role === "embedder" && !(await confirmReembed(m.id))) return;
  await api.modelUse(m.role, m.id);
  toast(t("models.now_used", { id: m.id }));
}

/** The embedding-server form: checks the server, asks, switches. */
export function setupRemoteEmbedder() {
  const form = $<HTMLFormElement>("remote-embedder");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
    const remote = { base_url: value("base_url"), model: value("model"), api_key: value("api_key") || null, api: value("api") as "openai" | "ollama", languages: value("languages") };
    if (!(await confirmReembed(`remote:${remote.model}`))) return;
    toast(t("models.checking"));
    try {
      await api.useRemoteEmbedder(remote);
      toast(t("models.now_used", { id: remote.model }));
    } catch (e) {
      toastError(e);
    }
  });
}

function actions(m: ModelDto, cell: HTMLElement): HTMLElement[] {
  const after = (work: () => Promise<unknown>) => () => work().catch(toastError).finally(() => void renderModels());
  if (m.active) return [el("span", t("models.active"), "badge")];
  if (!m.installed) {
    if (!m.downloadable) return [el("span", t("models.bundled"), "muted")];
    return [button(t("models.download"), after(() => downloadInto(cell, [m.id])))];
  }
  const remove = async () => {
    if (await confirmAction(t("models.confirm_delete", { id: m.id }), t("models.delete"))) await api.modelRemove(m.id);
  };
  return [button(t("models.use"), after(() => useModel(m))), button(t("models.delete"), after(remove), "small danger")];
}

function row(m: ModelDto): HTMLElement {
  const tr = document.createElement("tr");
  tr.dataset.model = m.id;
  const name = el("td");
  name.append(el("strong", m.name), el("div", `${m.id} · ${m.description}`, "muted"));
  const cell = el("td", undefined, "model-actions");
  cell.append(...actions(m, cell));
  tr.append(name, el("td", m.languages.join(", ") || "—"), el("td", formatBytes(m.size_bytes)), el("td", m.license), cell);
  return tr;
}

/** Draws the catalog (again). */
export async function renderModels() {
  const box = $("models-list");
  let models: ModelDto[];
  try {
    models = await api.modelsList();
  } catch (e) {
    if (asCommandError(e).kind !== "not_ready") toastError(e);
    return;
  }
  const parts: HTMLElement[] = [];
  for (const role of ROLES) {
    const table = document.createElement("table");
    table.className = "models";
    table.append(...models.filter((m) => m.role === role).map(row));
    parts.push(el("h4", t(`models.role.${role}` as Key)), table);
  }
  box.replaceChildren(...parts);
}
