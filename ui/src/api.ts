// The shell's commands. The shapes they exchange are generated from
// src-tauri/src/dto/ into ./ipc.ts (`make ipc`); this file only names the commands.
import { Channel, invoke } from "@tauri-apps/api/core";

import type {
  AnswerDto,
  CollectionDto,
  CollectionFileDto,
  CollectionSettingsDto,
  ConversationDto,
  DownloadDto,
  EvalDto,
  IdentificationDto,
  ImportDto,
  ImportProgressDto,
  LlmInfoDto,
  McpConfigDto,
  MessageDto,
  ModelDto,
  ModelRoleDto,
  PassageDto,
  PickDto,
  PlanDto,
  ReembedCostDto,
  RemoteEmbedderDto,
  SettingsDto,
  StatusDto,
  StreamDto,
  WebPageDto,
} from "./ipc";

export type * from "./ipc";

function streamed(onEvent: (e: StreamDto) => void): Channel<StreamDto> {
  const channel = new Channel<StreamDto>();
  channel.onmessage = onEvent;
  return channel;
}

export const api = {
  status: () => invoke<StatusDto>("status"),
  reindex: () => invoke<void>("reindex"),
  cancelIndexing: () => invoke<void>("cancel_indexing"),
  /** Stops indexing after the file at hand until resumed (searches go on). */
  pauseIndexing: () => invoke<void>("pause_indexing"),
  resumeIndexing: () => invoke<void>("resume_indexing"),
  reindexDocument: (path: string) => invoke<void>("reindex_document", { path }),
  deleteDocument: (path: string) => invoke<void>("delete_document", { path }),
  importFiles: (paths: string[], onProgress: (p: ImportProgressDto) => void) => {
    const channel = new Channel<ImportProgressDto>();
    channel.onmessage = onProgress;
    return invoke<ImportDto>("import_files", { paths, onProgress: channel });
  },
  /** Fetches a web page into the selected collection (`allowLocal`: also from this computer or network). */
  addWebPage: (url: string, allowLocal: boolean) => invoke<WebPageDto>("add_web_page", { url, allowLocal }),
  /** Fetches a kept web page again from its address. */
  refetchDocument: (path: string, allowLocal: boolean) => invoke<WebPageDto>("refetch_document", { path, allowLocal }),
  /** The system's file dialog; Kea records what was chosen (the only paths it then accepts). */
  pickPaths: (kind: PickDto) => invoke<string[]>("pick_paths", { kind }),
  /** Makes a folder the person picked the knowledge folder (the engine reopens over it). */
  setKnowledgeDir: (path: string) => invoke<void>("set_knowledge_dir", { path }),
  openDocument: (path: string, page: number | null = null) => invoke<void>("open_document", { path, page }),
  documentBytes: (path: string) => invoke<ArrayBuffer>("document_bytes", { path }),
  openLink: (url: string) => invoke<void>("open_link", { url }),
  /** How other assistants start Kea's MCP server (the snippet for their configuration). */
  mcpConfig: () => invoke<McpConfigDto>("mcp_config"),
  /** `collections`: null asks the selected collection; ["all"] every one. */
  ask: (question: string, chatId: number | null, collections: string[] | null, onEvent: (e: StreamDto) => void) =>
    invoke<AnswerDto>("ask", { question, chatId, collections, onEvent: streamed(onEvent) }),
  stopGeneration: () => invoke<void>("stop_generation"),
  identify: (image: { path?: string; bytes?: number[] }, chatId: number | null, lang: string, onEvent: (e: StreamDto) => void) =>
    invoke<IdentificationDto>("identify", { ...image, chatId, lang, onEvent: streamed(onEvent) }),
  passage: (chunkId: number, collection: string | null, source: string, fingerprint: string | null) =>
    invoke<PassageDto>("passage", { chunkId, collection, source, fingerprint }),
  conversations: () => invoke<ConversationDto[]>("conversations"),
  conversationMessages: (id: number) => invoke<MessageDto[]>("conversation_messages", { id }),
  renameConversation: (id: number, title: string) => invoke<void>("rename_conversation", { id, title }),
  deleteConversation: (id: number) => invoke<void>("delete_conversation", { id }),
  /** Saves a conversation as Markdown where the person chooses; the file, or null if cancelled. */
  exportConversation: (id: number) => invoke<string | null>("export_conversation", { id }),
  llmInfo: () => invoke<LlmInfoDto | null>("llm_info"),
  getSettings: () => invoke<SettingsDto>("get_settings"),
  saveSettings: (settings: SettingsDto) => invoke<SettingsDto>("save_settings", { settings }),
  runEval: (golden: string | null, configs: string[]) => invoke<EvalDto[]>("run_eval", { golden, configs }),
  modelsList: () => invoke<ModelDto[]>("models_list"),
  setupPlan: (photos: boolean) => invoke<PlanDto>("setup_plan", { photos }),
  /** The plan was applied, reviewed or skipped: not offered on launch again. */
  setupDone: () => invoke<void>("setup_done"),
  /** Installs `ids` one after another; progress counts bytes across all of them. */
  modelInstall: (ids: string[], onProgress: (p: DownloadDto) => void) => {
    const channel = new Channel<DownloadDto>();
    channel.onmessage = onProgress;
    return invoke<void>("model_install", { ids, onProgress: channel });
  },
  modelCancel: (id: string) => invoke<void>("model_cancel", { id }),
  modelRemove: (id: string) => invoke<void>("model_remove", { id }),
  reembedCost: () => invoke<ReembedCostDto>("reembed_cost"),
  modelUse: (role: ModelRoleDto, id: string) => invoke<void>("model_use", { role, id }),
  useRemoteEmbedder: (remote: RemoteEmbedderDto) => invoke<void>("use_remote_embedder", { remote }),
  collections: () => invoke<CollectionDto[]>("collections"),
  /** A new collection over a picked folder (null: a new folder named after it); it becomes the selected one. */
  createCollection: (name: string, folder: string | null) => invoke<string>("create_collection", { name, folder }),
  selectCollection: (name: string) => invoke<void>("select_collection", { name }),
  updateCollection: (name: string, settings: CollectionSettingsDto) => invoke<void>("update_collection", { name, settings }),
  /** Never deletes the collection's folders; its index only with `deleteIndex`. */
  removeCollection: (name: string, deleteIndex: boolean) => invoke<void>("remove_collection", { name, deleteIndex }),
  /** Saves a collection as one .keakb file where the person chooses (null: cancelled). */
  exportCollection: (name: string, withFiles: boolean) => invoke<string | null>("export_collection", { name, withFiles }),
  /** Describes the .keakb file the person picks (null: cancelled), before importing it. */
  inspectCollectionFile: () => invoke<CollectionFileDto | null>("inspect_collection_file"),
  /** Imports a picked .keakb file; `trustEmbedder`: the remote embedder address the person confirmed. */
  importCollection: (file: string, trustEmbedder: string | null) => invoke<string>("import_collection", { file, trustEmbedder }),
};
