// Kea's webview: wires the knowledge rail (shown or hidden), chat,
// evaluation and settings views, the header (models in use), menus, the
// notice queue and engine events. Document and model
// text is rendered as sanitised markdown or plain text, never as raw HTML.
import { listen } from "@tauri-apps/api/event";
import { api, type LlmInfoDto } from "./api";
import { refreshConversations, setupChat } from "./chat";
import { refreshCollections, setupCollections } from "./collections";
import { $, setupRailForms, toast } from "./dom";
import { setupEvaluation } from "./evaluation";
import { refreshStatus, setupKnowledge } from "./knowledge";
import { setupMenus } from "./menu";
import { renderModels, setupRemoteEmbedder } from "./models";
import { setupNotices } from "./notices";
import { applyLanguage, setupSettings } from "./settings";
import { renderSetup, setupSetup } from "./setup";

function showView(name: string) {
  for (const tab of Array.from(document.querySelectorAll<HTMLElement>("[role=tab]"))) tab.setAttribute("aria-selected", String(tab.dataset.view === name));
  for (const view of Array.from(document.querySelectorAll<HTMLElement>(".view"))) view.hidden = view.id !== `view-${name}`;
}

/** Shows or hides the knowledge rail; the choice is kept for the next launch. */
function showRail(shown: boolean) {
  document.body.classList.toggle("rail-collapsed", !shown);
  $("toggle-rail").setAttribute("aria-expanded", String(shown));
  localStorage.setItem("kea.rail", shown ? "shown" : "hidden");
}

function showLlm(info: LlmInfoDto | null) {
  if (!info?.provider) return;
  $("llm-state").textContent = `· ${info.provider}`;
  $("llm-state").title = info.reason;
}

function refreshAll() {
  void refreshStatus();
  void refreshCollections();
  void refreshConversations();
  void renderModels();
  void renderSetup();
}

applyLanguage(null);
for (const tab of Array.from(document.querySelectorAll<HTMLElement>("[role=tab]"))) tab.addEventListener("click", () => showView(tab.dataset.view!));
showRail(localStorage.getItem("kea.rail") !== "hidden");
$("toggle-rail").addEventListener("click", () => showRail(document.body.classList.contains("rail-collapsed")));
setupMenus();
setupRailForms();
setupNotices();
setupKnowledge();
setupCollections();
setupChat();
setupEvaluation();
setupRemoteEmbedder();
setupSetup();
void setupSettings(refreshAll);
void listen<LlmInfoDto>("llm-ready", (event) => showLlm(event.payload));
void api.llmInfo().then(showLlm);
void listen("engine-ready", refreshAll);
void listen<{ kind: string; message: string }>("engine-error", (event) => toast(event.payload.message, "error"));
refreshAll();
