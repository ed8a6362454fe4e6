// Generated from src-tauri/src/dto/ (ts-rs) by `make ipc`; do not edit.

export type ErrorKind = "model_missing" | "runtime_missing" | "embedding" | "llm" | "store" | "vector_index" | "io" | "watch" | "invalid_input" | "cancelled" | "not_found" | "download" | "reembed_required" | "not_ready" | "internal";
/** The file extensions Kea indexes. */
export const DOCUMENT_EXTENSIONS = ["md", "markdown", "txt", "text", "pdf", "docx", "png", "jpg", "jpeg", "tif", "tiff", "xlsx", "xls", "ods", "csv", "tsv", "html", "htm"];
export type ErrorDto = { kind: ErrorKind, message: string, };
export type DocumentState = "indexed" | "error";
export type ReasonDto = { "kind": "nothing_found" } | { "kind": "coverage", share: number, } | { "kind": "not_in_any_document", terms: Array<string>, } | { "kind": "answer_type_missing", asked: string, } | { "kind": "similarity", value: number, } | { "kind": "calibrated", probability: number, refuse_below: number, answer_at: number, } | { "kind": "rerank", probability: number, threshold: number, } | { "kind": "no_shared_words" } | { "kind": "other_language" } | { "kind": "model_found_no_answer" } | { "kind": "model_answered" } | { "kind": "judged_in_translation", query: string, } | { "kind": "crossed_word_for_word" };
export type ProposalDto = { role: ModelRoleDto, id: string, languages: Array<string>, bytes: number, installed: boolean, 
/**
 * A running server's OpenAI-compatible base URL, for its model.
 */
base_url: string | null, reembed_seconds: number | null, reason: string, };
export type PlanDto = { 
/**
 * Language code and share of the folder's text, largest first.
 */
languages: Array<[string, number]>, documents: number, images: number, ram_bytes: number, cores: number, 
/**
 * `kind at base URL` of each model server found on this machine.
 */
servers: Array<string>, proposal: Array<ProposalDto>, 
/**
 * The folder's languages the embedder in use does not read.
 */
uncovered: Array<string>, embedder: string, 
/**
 * The languages the embedder reads (empty when many or not known).
 */
embedder_languages: Array<string>, 
/**
 * Not yet applied, reviewed or skipped for this data folder: the app offers it on launch.
 */
first_run: boolean, 
/**
 * The folder the plan sampled (the knowledge folder).
 */
knowledge_dir: string, };
export type DocumentDto = { path: string, kind: string, size: number, status: DocumentState, error: string | null, title: string | null, chunks: number, 
/**
 * When it was last read (Unix seconds).
 */
indexed_at: number, 
/**
 * Its web address (a saved web page's): it opens there and can be fetched again.
 */
link: string | null, };
export type StatusDto = { knowledge_dir: string, model_id: string | null, documents: Array<DocumentDto>, chunks: number, index_bytes: number, 
/**
 * The team store the index is shared through, if any.
 */
team: TeamDto | null, 
/**
 * `[path, why]` of what the last full sync left out on purpose.
 */
skipped: Array<[string, string]>, 
/**
 * Indexing is paused (searches go on).
 */
paused: boolean, 
/**
 * The files the last run has yet to read (running, paused or cancelled).
 */
queued: Array<string>, };
export type TeamDto = { store: string, namespace: string, mirrored_chunks: number, 
/**
 * Why team sync is offline (searches use the last copy); null when online.
 */
offline: string | null, };
export type ProgressDto = { "type": "started", files_to_index: number, queued: Array<string>, } | { "type": "file_done", path: string, error: string | null, files_done: number, files_total: number, } | { "type": "finished", documents: number, chunks: number, embedded: number, errors: number, };
export type CitationDto = { id: string, source: string, heading_path: string, page: number | null, chunk_id: number, 
/**
 * Every chunk of the cited block.
 */
chunk_ids: number[], 
/**
 * The collection, when the question went to several.
 */
collection: string | null, 
/**
 * A hash of the cited passage's text (what showing it checks).
 */
fingerprint: string | null, 
/**
 * The document's web address (a saved web page's).
 */
url: string | null, };
export type RouteDto = { use_rag: boolean, is_followup: boolean, search_query: string, 
/**
 * `llm` or `keywords`.
 */
decided_by: string, };
export type StageDto = { stage: string, ms: number, candidates: [number, number][], };
export type RelevanceDto = { relevant: boolean, 
/**
 * "answered", "unsure" or "refused".
 */
outcome: string, probability: number, coverage: number, best_dense: number | null, best_rerank: number | null, 
/**
 * Why, in English (`reasons` says it as data, for the user's language).
 */
reason: string, reasons: Array<ReasonDto>, 
/**
 * The signals the decision weighed, by name (`coverage`, `dense`…).
 */
signals: Array<[string, number]>, };
export type TraceDto = { query: string, stages: Array<StageDto>, fallbacks: Array<string>, total_ms: number, relevance: RelevanceDto | null, 
/**
 * The document and heading of the passages the stages name.
 */
passages: Array<PassageNameDto>, };
export type SummaryDto = { chunk_id: number, source: string, key_facts: Array<string>, summary: string, };
export type RelatedDto = { passage: CitationDto, snippet: string, };
export type ShownDto = { 
/**
 * "answered", "unsure" (no direct answer: see `related`) or "refused".
 */
outcome: string, notice: string | null, 
/**
 * The closest passages when no direct answer was found.
 */
related: Array<RelatedDto>, 
/**
 * Sentences of the model's answer that its passages do not support,
 * taken out of `answer`.
 */
unsupported: Array<string>, };
export type AnswerDto = { chat_id: number, answer: string, citations: Array<CitationDto>, shown: ShownDto, provider: string, 
/**
 * The route and the retrieval trace, for "how this was answered".
 */
route: RouteDto, trace: TraceDto | null, summaries: Array<SummaryDto>, };
export type StreamDto = { "type": "token", text: string, } | { "type": "stage", name: string, ms: number | null, fields: Array<[string, string]>, raw: string, };
export type DecisionDto = { final_name: string, reasoning: string, followup: string, };
export type IdentificationDto = { 
/**
 * `[name, Chinese name, probability]`, best first.
 */
candidates: Array<[string, string | null, number]>, 
/**
 * `High`, `Medium` or `Low`.
 */
level: string, visual_description: string, used_retrieval: boolean, evidence: Array<CitationDto>, decision: DecisionDto | null, reply: string, 
/**
 * The conversation the photo and reply were saved in.
 */
chat_id: number | null, };
export type ImportDto = { imported: Array<string>, 
/**
 * `[file, reason]` for each file not imported.
 */
rejected: Array<[string, string]>, };
export type ImportProgressDto = { path: string, files_done: number, files_total: number, bytes_done: number, bytes_total: number, };
export type WebPageDto = { 
/**
 * The document's key.
 */
path: string, url: string, title: string | null, 
/**
 * It replaced an earlier copy of the same address.
 */
refetched: boolean, };
export type PickDto = "documents" | "folder" | "golden_set" | "gguf";
export type PassageDto = { chunk_id: number, source: string, heading_path: string, page: number | null, text: string, };
export type PassageNameDto = { id: number, source: string, heading_path: string, };
export type OutcomesDto = { answered: number, unsure: number, refused: number, };
export type ConversationDto = { id: number, title: string, };
export type MessageRole = "user" | "assistant";
export type MessageDto = { role: MessageRole, content: string, citations: Array<CitationDto>, 
/**
 * What an answer showed (none for a question, a photo's identification
 * or an answer saved by an earlier Kea).
 */
shown: ShownDto | null, };
export type MetricsDto = { queries: number, recall_1: number, recall_3: number, recall_5: number, recall_10: number, hit_1: number, hit_3: number, mrr_10: number, ndcg_10: number, };
export type MissDto = { query: string, relevant: Array<string>, got: Array<string>, };
export type RefusalDto = { answerable: number, unanswerable: number, answered: number, refused: number, precision: number, wrong: Array<string>, 
/**
 * Shares answered / unsure / refused of the answerable questions...
 */
answerable_outcomes: OutcomesDto, 
/**
 * ...and of the unanswerable ones.
 */
unanswerable_outcomes: OutcomesDto, };
export type AnswersDto = { questions: number, answered: number, unsure: number, refused: number, 
/**
 * A relevant document answered from or offered as related reading.
 */
shown: number, 
/**
 * Of the answered questions with an evidence phrase (`quoted_of`), the share quoting it.
 */
quoted: number, quoted_of: number, 
/**
 * Of the answered questions, the share quoting a document that is not relevant.
 */
other_document: number, 
/**
 * Of the unsure questions with an evidence phrase (`related_quoted_of`),
 * the share showing it as a related passage's sentence.
 */
related_quoted: number, related_quoted_of: number, };
export type EvalDto = { name: string, metrics: MetricsDto, by_lang: { [key in string]?: MetricsDto }, misses: Array<MissDto>, ms_per_query: number, 
/**
 * Present when the set has unanswerable questions.
 */
refusal: RefusalDto | null, 
/**
 * By "all" and by language.
 */
answers: { [key in string]?: AnswersDto }, };
export type LlmInfoDto = { provider: string, reason: string, };
export type ProviderDto = "auto" | "embedded" | "openai" | "none";
export type ThemeDto = "system" | "light" | "dark";
export type PhotoClassifierDto = "clip" | "vision_llm";
export type ModelRoleDto = "embedder" | "reranker" | "image" | "llm";
export type SettingsDto = { provider: ProviderDto, gguf: string | null, base_url: string | null, model: string | null, 
/**
 * Sent only when typed: `""` clears the key, absent keeps it.
 */
api_key?: string, api_key_set: boolean, models_dir: string | null, 
/**
 * `milvus://HOST:PORT/COLLECTION`: a team store (used at next start).
 */
team_store: string | null, 
/**
 * This folder's namespace in the team store (default: host:folder).
 */
team_namespace: string | null, 
/**
 * The team store's credentials (user:password or an API key), like the
 * API key: sent only when typed, never shown back.
 */
team_token?: string, team_token_set: boolean, 
/**
 * Where the secrets are kept: the system keyring, or (none answered) a
 * file only the user can read.
 */
secrets_in_keyring: boolean, rerank: boolean, mmr: boolean, mmr_lambda: number, filter: boolean, min_score: number, llm_rerank: boolean, summary: boolean, query_expansion: boolean, 
/**
 * The interface language; none follows the system.
 */
language: "zh" | "en" | null, theme: ThemeDto, photo_classifier: PhotoClassifierDto, };
export type McpConfigDto = { 
/**
 * The `kea` program (installed beside the app).
 */
command: string, args: Array<string>, 
/**
 * The configuration entry, as JSON.
 */
snippet: string, 
/**
 * Whether the program is there (a development build may lack it).
 */
found: boolean, };
export type ModelDto = { id: string, role: ModelRoleDto, name: string, languages: Array<string>, size_bytes: number, license: string, description: string, installed: boolean, active: boolean, downloadable: boolean, };
export type DownloadDto = { model: string, file: string, done_bytes: number, total_bytes: number, models_done: number, models: number, };
export type RemoteEmbedderDto = { base_url: string, model: string, api_key: string | null, api: "openai" | "ollama", 
/**
 * Comma-separated, e.g. `zh,en`; empty means many.
 */
languages: string, };
export type ReembedCostDto = { indexed_model: string | null, documents: number, chunks: number, estimated_seconds: number, };
export type StrictnessDto = "lenient" | "balanced" | "strict";
export type CollectionSettingsDto = { 
/**
 * Chunk size in characters (`null`: the default).
 */
chunk_chars: number | null, chunk_overlap: number | null, 
/**
 * The languages its documents are in: "zh", "en".
 */
languages: Array<string>, 
/**
 * Rerank with the cross-encoder (`null`: when one is configured).
 */
rerank: boolean | null, strictness: StrictnessDto, };
export type CollectionDto = { name: string, 
/**
 * The data folder's own collection (cannot be removed or renamed).
 */
default: boolean, selected: boolean, folders: Array<string>, 
/**
 * The embedder its index is built with (or will be).
 */
embedder: string, settings: CollectionSettingsDto, 
/**
 * Its documents are in a language its embedder does not read.
 */
warning: string | null, };
export type CollectionFileDto = { 
/**
 * The file (the person chose it: `import_collection` accepts it).
 */
file: string, name: string, documents: number, has_files: boolean, 
/**
 * The remote embedder it names, in full: every question asked of the
 * collection goes there, so the person confirms it before import.
 */
remote_embedder: string | null, };
