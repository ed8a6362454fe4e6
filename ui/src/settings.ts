// The settings view: language model, model folder, retrieval knobs,
// language and theme, and the snippet that lets other assistants use Kea
// (its MCP server). Saved through the shell (a 0600 file in the data
// folder); the API key is never read back, only "set or not".
import { api, type SettingsDto, type ThemeDto } from "./api";
import { $, toast, toastError } from "./dom";
import { applyTranslations, pickLanguage, setLanguage, t, type Language } from "./i18n";

let current: SettingsDto | null = null;

const TEXT_FIELDS = ["gguf", "base_url", "model", "models_dir", "team_store", "team_namespace"] as const;
const FLAGS = ["rerank", "mmr", "filter", "llm_rerank", "summary", "query_expansion"] as const;
const NUMBERS = ["mmr_lambda", "min_score"] as const;

function field<T extends HTMLElement = HTMLInputElement>(name: string): T {
  return $("settings-form").querySelector(`[name="${name}"]`) as T;
}

/** Applies the theme (system follows prefers-color-scheme in CSS). */
export function applyTheme(theme: ThemeDto) {
  document.documentElement.dataset.theme = theme;
}

/** Applies the language to the whole page; `onChange` re-renders dynamic parts. */
export function applyLanguage(setting: Language | null) {
  const language = pickLanguage(setting, navigator.language);
  setLanguage(language);
  document.documentElement.lang = language === "zh" ? "zh-CN" : "en";
  applyTranslations(document);
}

function fill(s: SettingsDto) {
  field<HTMLSelectElement>("provider").value = s.provider;
  for (const name of TEXT_FIELDS) field(name).value = s[name] ?? "";
  for (const name of FLAGS) field(name).checked = s[name];
  for (const name of NUMBERS) field(name).value = String(s[name]);
  field("api_key").value = "";
  $("api-key-state").hidden = !s.api_key_set;
  // data-i18n, so a change of language translates it too.
  const kept = $("secrets-kept");
  const where = s.secrets_in_keyring ? "settings.secrets_keyring" : "settings.secrets_file";
  kept.dataset.i18n = where;
  kept.textContent = t(where);
  kept.classList.toggle("warning", !s.secrets_in_keyring);
  field("team_token").value = "";
  $("team-token-state").hidden = !s.team_token_set;
  $("api-key-moved").hidden = true;
  field<HTMLSelectElement>("language").value = s.language ?? "";
  field<HTMLSelectElement>("theme").value = s.theme;
  field<HTMLSelectElement>("photo_classifier").value = s.photo_classifier;
}

function read(previous: SettingsDto): SettingsDto {
  const next: SettingsDto = { ...previous };
  next.provider = field<HTMLSelectElement>("provider").value as SettingsDto["provider"];
  for (const name of TEXT_FIELDS) next[name] = field(name).value.trim() || null;
  for (const name of FLAGS) next[name] = field(name).checked;
  for (const name of NUMBERS) next[name] = Number(field(name).value);
  const key = field("api_key").value;
  if (key) next.api_key = key;
  else delete next.api_key;
  const token = field("team_token").value;
  if (token) next.team_token = token;
  else delete next.team_token;
  next.language = (field<HTMLSelectElement>("language").value || null) as SettingsDto["language"];
  next.theme = field<HTMLSelectElement>("theme").value as ThemeDto;
  next.photo_classifier = field<HTMLSelectElement>("photo_classifier").value as SettingsDto["photo_classifier"];
  return next;
}

/** Shows how other assistants start Kea's MCP server, with a Copy button. */
async function showMcpConfig() {
  const config = await api.mcpConfig();
  $("mcp-snippet").textContent = config.snippet;
  $("mcp-missing").hidden = config.found;
  $("copy-mcp").addEventListener("click", () => {
    void navigator.clipboard?.writeText(config.snippet).then(() => ($("copy-mcp").textContent = t("mcp.copied")));
  });
}

/** Loads and applies the saved settings; `rerender` redraws translated dynamic content. */
export async function setupSettings(rerender: () => void) {
  try {
    current = await api.getSettings();
    fill(current);
    applyTheme(current.theme);
    applyLanguage(current.language);
  } catch (e) {
    toastError(e);
  }
  // A stored key is dropped when the endpoint moves (the shell never sends
  // it to another host): say so before saving.
  const warnIfMoved = () => {
    const moved = field("base_url").value.trim() !== (current?.base_url ?? "");
    $("api-key-moved").hidden = !(current?.api_key_set && moved && !field("api_key").value);
  };
  field("base_url").addEventListener("input", warnIfMoved);
  // Paths Kea reads are chosen in the system's dialog (typed ones are refused unless chosen).
  const choose = (button: string, name: string, kind: "gguf" | "folder") =>
    $(button).addEventListener("click", async () => {
      try {
        const [chosen] = await api.pickPaths(kind);
        if (chosen) field(name).value = chosen;
      } catch (e) {
        toastError(e);
      }
    });
  showMcpConfig().catch(toastError);
  choose("pick-gguf", "gguf", "gguf");
  choose("pick-models-dir", "models_dir", "folder");
  field("api_key").addEventListener("input", warnIfMoved);
  $("settings-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!current) return;
    try {
      current = await api.saveSettings(read(current));
      fill(current);
      applyTheme(current.theme);
      applyLanguage(current.language);
      rerender();
      toast(t("settings.saved"));
    } catch (e) {
      toastError(e);
    }
  });
}
