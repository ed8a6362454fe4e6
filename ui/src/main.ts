// Kea's webview: wires the knowledge pane, chat, evaluation and settings
// views, the header (models in use) and engine events. Document and model
// text is rendered as sanitised markdown or plain text, never as raw HTML.
import { listen } from "@tauri-apps/api/event";
import { api, type LlmInfoDto } from "./api";
import { refreshConversations, setupChat } from "./chat";
import { refreshCollections, setupCollections } from "./collections";
import { $, toast } from "./dom";
import { setupEvaluation } from "./evaluation";
import { refreshStatus, setupKnowledge } from "./knowledge";
import { renderModels, setupRemoteEmbedder } from "./models";
import { applyLanguage, setupSettings } from "./settings";
import { renderSetup, setupSetup } from "./setup";

function showView(name: string) {
  for (const tab of Array.from(document.querySelectorAll<HTMLElement>("[role=tab]"))) tab.setAttribute("aria-selected", String(tab.dataset.view === name));
  for (const view of Array.from(document.querySelectorAll<HTMLElement>(".view"))) view.hidden = view.id !== `view-${name}`;
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
