// Collections in the knowledge pane: the switcher, a new collection (a new
// folder, or one the person picks), the selected collection's own settings
// (chunk size, document languages, reranker, strictness) and removing it;
// and which collections a question goes to.
import { api, type CollectionDto, type CollectionSettingsDto, type StrictnessDto } from "./api";
import { $, confirmAction, showForm, toast, toastError } from "./dom";
import { t } from "./i18n";
import { setNotice } from "./notices";

let collections: CollectionDto[] = [];
let pickedFolder: string | null = null;

/** The selected collection's name. */
export function selectedCollection(): string | null {
  return collections.find((c) => c.selected)?.name ?? null;
}

/** How a collection is named to the person (the default one has a friendly name). */
export function collectionLabel(name: string): string {
  return collections.find((c) => c.name === name)?.default ? t("collections.default") : name;
}

/** Which collections a question goes to: null (the selected one) or every one. */
export function askScope(): string[] | null {
  return $<HTMLSelectElement>("ask-scope").value === "all" ? ["all"] : null;
}

/** Draws the switcher and the selected collection's settings. */
export async function refreshCollections() {
  try {
    collections = await api.collections();
  } catch (e) {
    toastError(e);
    return;
  }
  const select = $<HTMLSelectElement>("collection");
  select.replaceChildren(
    ...collections.map((c) => {
      const option = new Option(c.default ? t("collections.default") : c.name, c.name, false, c.selected);
      option.title = `${c.folders.join(", ")} · ${c.embedder}`;
      return option;
    }),
  );
  $("ask-scope").hidden = collections.length < 2;
  const selected = collections.find((c) => c.selected);
  $("collection-warning").textContent = selected?.warning ?? "";
  setNotice("collection-warning", Boolean(selected?.warning));
  if (selected) fillSettings(selected);
}

function fillSettings(c: CollectionDto) {
  const s = c.settings;
  $<HTMLInputElement>("collection-chunk").value = s.chunk_chars?.toString() ?? "";
  $<HTMLInputElement>("collection-overlap").value = s.chunk_overlap?.toString() ?? "";
  $<HTMLInputElement>("collection-zh").checked = s.languages.includes("zh");
  $<HTMLInputElement>("collection-en").checked = s.languages.includes("en");
  $<HTMLSelectElement>("collection-rerank").value = s.rerank === null ? "" : s.rerank ? "on" : "off";
  $<HTMLSelectElement>("collection-strictness").value = s.strictness;
  $("remove-collection").hidden = c.default;
  $("collection-embedder").textContent = t("collections.embedder", { embedder: c.embedder });
}

function readSettings(): CollectionSettingsDto {
  const number = (id: string) => {
    const value = $<HTMLInputElement>(id).value.trim();
    return value === "" ? null : Number(value);
  };
  const rerank = $<HTMLSelectElement>("collection-rerank").value;
  return {
    chunk_chars: number("collection-chunk"),
    chunk_overlap: number("collection-overlap"),
    languages: ["zh", "en"].filter((l) => $<HTMLInputElement>(`collection-${l}`).checked),
    rerank: rerank === "" ? null : rerank === "on",
    strictness: $<HTMLSelectElement>("collection-strictness").value as StrictnessDto,
  };
}

/** Runs `change`, which may select another collection: the chat closes what
 * was open first (its citations and a reply still coming belong to the
 * collection they were asked in) and holds questions until it is done. */
async function switching<T>(change: () => Promise<T>): Promise<T> {
  window.dispatchEvent(new CustomEvent("kea-collection-switching"));
  try {
    return await change();
  } finally {
    window.dispatchEvent(new CustomEvent("kea-collection-switched"));
  }
}

async function create(event: Event) {
  event.preventDefault();
  const name = $<HTMLInputElement>("new-collection-name").value.trim();
  if (!name) return;
  const created = await switching(() => api.createCollection(name, pickedFolder));
  pickedFolder = null;
  $("new-collection-form").hidden = true;
  $<HTMLInputElement>("new-collection-name").value = "";
  $("new-collection-folder-path").textContent = "";
  toast(t("collections.created", { name: created }));
  await refreshCollections();
}

async function remove() {
  const name = selectedCollection();
  if (!name || !(await confirmAction(t("collections.confirm_remove", { name }), t("collections.remove")))) return;
  const deleteIndex = await confirmAction(t("collections.confirm_delete_index", { name }), t("collections.delete_index"));
  await switching(() => api.removeCollection(name, deleteIndex));
  await refreshCollections();
}

/** Wires the switcher, the new-collection form and the settings form. */
export function setupCollections() {
  $("collection").addEventListener("change", () => {
    const name = $<HTMLSelectElement>("collection").value;
    switching(() => api.selectCollection(name)).then(() => refreshCollections(), toastError);
  });
  $("new-collection").addEventListener("click", () => showForm("new-collection-form", "new-collection-name"));
  $("new-collection-folder").addEventListener("click", async () => {
    const [folder] = await api.pickPaths("folder").catch((e) => (toastError(e), []));
    pickedFolder = folder ?? null;
    $("new-collection-folder-path").textContent = folder ?? "";
  });
  $("new-collection-form").addEventListener("submit", (e) => void create(e).catch(toastError));
  $("collection-settings-toggle").addEventListener("click", () => showForm("collection-settings", "collection-chunk"));
  $("collection-settings").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = selectedCollection();
    if (!name) return;
    api.updateCollection(name, readSettings()).then(() => (toast(t("collections.saved", { name })), refreshCollections()), toastError);
  });
  $("remove-collection").addEventListener("click", () => void remove().catch(toastError));
  $("export-collection").addEventListener("click", () => {
    const name = selectedCollection();
    if (!name) return;
    const withFiles = $<HTMLInputElement>("export-with-files").checked;
    api.exportCollection(name, withFiles).then((file) => file && toast(t("collections.exported", { file })), toastError);
  });
  $("import-collection").addEventListener("click", () => void importCollection().catch(toastError));
}

/** Picks a collection file and imports it; a remote embedder it names is
 * shown in full and used only if the person confirms that address. */
async function importCollection(): Promise<void> {
  const picked = await api.inspectCollectionFile();
  if (!picked) return;
  const url = picked.remote_embedder;
  if (url && !(await confirmAction(t("collections.confirm_embedder", { name: picked.name, url }), t("collections.trust_embedder")))) return;
  const name = await api.importCollection(picked.file, url);
  toast(t("collections.imported", { name }));
  void refreshCollections();
}
