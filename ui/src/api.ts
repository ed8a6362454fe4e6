// The shell's commands and the shapes they exchange (mirrors src-tauri/src/dto.rs).
import { Channel, invoke } from "@tauri-apps/api/core";

export interface DocumentDto {
  path: string;
  kind: string;
  size: number;
  status: "indexed" | "error";
  error: string | null;
  title: string | null;
  chunks: number;
}
export interface StatusDto {
  knowledge_dir: string;
  model_id: string | null;
  documents: DocumentDto[];
  chunks: number;
  index_bytes: number;
}
export interface CitationDto {
  id: string;
  source: string;
  heading_path: string;
  page: number | null;
  chunk_id: number;
  chunk_ids: number[];
}
export interface AnswerDto {
  chat_id: number;
  answer: string;
  citations: CitationDto[];
  notice: string | null;
  refused: boolean;
  provider: string;
  route: unknown;
  trace: RetrievalTrace | null;
  summaries: { chunk_id: number; summary: string; key_facts: string[] }[];
}
/** The retrieval pipeline's trace (Rust `retrieve::Trace`). */
export interface RetrievalTrace {
  query: string;
  stages: { stage: string; ms: number; candidates: [number, number][] }[];
  fallbacks: string[];
  total_ms: number;
  relevance: { relevant: boolean; coverage: number; reason: string } | null;
}
export type StreamDto = { type: "token"; text: string } | { type: "stage"; name: string; ms: number | null; detail: unknown };
export interface IdentificationDto {
  candidates: [string, string | null, number][];
  level: string;
  visual_description: string;
  used_retrieval: boolean;
  evidence: CitationDto[];
  decision: { final_name: string; reasoning: string; followup: string } | null;
  reply: string;
  chat_id: number | null;
}
export interface PassageDto {
  chunk_id: number;
  source: string;
  heading_path: string;
  page: number | null;
  text: string;
}
export interface ConversationDto {
  id: number;
  title: string;
}
export interface MessageDto {
  role: "user" | "assistant";
  content: string;
  citations: CitationDto[];
}
export interface Metrics {
  recall_1: number;
  recall_3: number;
  recall_5: number;
  recall_10: number;
  mrr_10: number;
  ndcg_10: number;
  [key: string]: number;
}
export interface EvalDto {
  name: string;
  metrics: Metrics;
  by_lang: Record<string, Metrics>;
  misses: { query: string; relevant: string[]; got: string[] }[];
  ms_per_query: number;
  /** Present when the golden set has unanswerable questions. */
  refusal: { answerable: number; unanswerable: number; answered: number; refused: number; precision: number; wrong: string[] } | null;
}
export type Theme = "system" | "light" | "dark";
export interface SettingsDto {
  provider: "auto" | "embedded" | "openai" | "none";
  gguf: string | null;
  base_url: string | null;
  model: string | null;
  api_key?: string;
  api_key_set: boolean;
  models_dir: string | null;
  rerank: boolean;
  mmr: boolean;
  mmr_lambda: number;
  filter: boolean;
  min_score: number;
  llm_rerank: boolean;
  summary: boolean;
  query_expansion: boolean;
  language: "zh" | "en" | null;
  theme: Theme;
  photo_classifier: "clip" | "vision_llm";
}
export type ModelRole = "embedder" | "reranker" | "image" | "llm";
export interface ModelDto {
  id: string;
  role: ModelRole;
  name: string;
  languages: string[];
  size_bytes: number;
  license: string;
  description: string;
  installed: boolean;
  active: boolean;
  downloadable: boolean;
}
export interface DownloadDto {
  model: string;
  file: string;
  done_bytes: number;
  total_bytes: number;
}
export interface ReembedCostDto {
  indexed_model: string | null;
  documents: number;
  chunks: number;
  estimated_seconds: number;
}
export interface RemoteEmbedderDto {
  base_url: string;
  model: string;
  api_key: string | null;
  api: "openai" | "ollama";
  languages: string;
}
export interface LlmInfo {
  provider: string;
  reason: string;
}

function streamed(onEvent: (e: StreamDto) => void): Channel<StreamDto> {
  const channel = new Channel<StreamDto>();
  channel.onmessage = onEvent;
  return channel;
}

export const api = {
  status: () => invoke<StatusDto>("status"),
  reindex: () => invoke<void>("reindex"),
  cancelIndexing: () => invoke<void>("cancel_indexing"),
  reindexDocument: (path: string) => invoke<void>("reindex_document", { path }),
  deleteDocument: (path: string) => invoke<void>("delete_document", { path }),
  importFiles: (paths: string[]) => invoke<{ imported: string[]; rejected: [string, string][] }>("import_files", { paths }),
  openDocument: (path: string) => invoke<void>("open_document", { path }),
  openLink: (url: string) => invoke<void>("open_link", { url }),
  ask: (question: string, chatId: number | null, onEvent: (e: StreamDto) => void) =>
    invoke<AnswerDto>("ask", { question, chatId, onEvent: streamed(onEvent) }),
  stopGeneration: () => invoke<void>("stop_generation"),
  identify: (image: { path?: string; bytes?: number[] }, chatId: number | null, lang: string, onEvent: (e: StreamDto) => void) =>
    invoke<IdentificationDto>("identify", { ...image, chatId, lang, onEvent: streamed(onEvent) }),
  passage: (chunkId: number) => invoke<PassageDto>("passage", { chunkId }),
  conversations: () => invoke<ConversationDto[]>("conversations"),
  conversationMessages: (id: number) => invoke<MessageDto[]>("conversation_messages", { id }),
  renameConversation: (id: number, title: string) => invoke<void>("rename_conversation", { id, title }),
  deleteConversation: (id: number) => invoke<void>("delete_conversation", { id }),
  llmInfo: () => invoke<LlmInfo | null>("llm_info"),
  getSettings: () => invoke<SettingsDto>("get_settings"),
  saveSettings: (settings: SettingsDto) => invoke<SettingsDto>("save_settings", { settings }),
  runEval: (golden: string | null, configs: string[]) => invoke<EvalDto[]>("run_eval", { golden, configs }),
  modelsList: () => invoke<ModelDto[]>("models_list"),
  modelInstall: (id: string, onProgress: (p: DownloadDto) => void) => {
    const channel = new Channel<DownloadDto>();
    channel.onmessage = onProgress;
    return invoke<void>("model_install", { id, onProgress: channel });
  },
  modelCancel: (id: string) => invoke<void>("model_cancel", { id }),
  modelRemove: (id: string) => invoke<void>("model_remove", { id }),
  reembedCost: () => invoke<ReembedCostDto>("reembed_cost"),
  modelUse: (role: ModelRole, id: string) => invoke<void>("model_use", { role, id }),
  useRemoteEmbedder: (remote: RemoteEmbedderDto) => invoke<void>("use_remote_embedder", { remote }),
};
