// The UI's words in English and Chinese. Static text in index.html carries
// data-i18n (text), data-i18n-placeholder or data-i18n-title keys;
// code calls t(key, vars).

export type Language = "en" | "zh";

const en = {
  "app.loading": "Opening the index…",
  "tab.chat": "Chat",
  "tab.eval": "Evaluation",
  "tab.settings": "Settings",
  "knowledge.title": "Knowledge",
  "knowledge.add_files": "Add files…",
  "knowledge.add_folder": "Add folder…",
  "knowledge.reindex_all": "Re-index all",
  "knowledge.cancel": "Cancel",
  "knowledge.drop": "Drop documents here to start (Markdown, text, PDF, Word).",
  "knowledge.summary": "{docs} documents · {chunks} chunks · {size}",
  "knowledge.chunks": "{n} chunks",
  "knowledge.indexing": "indexing {done} of {total}",
  "knowledge.reindex_one": "Re-index",
  "knowledge.delete": "Delete",
  "knowledge.confirm_delete": "Delete {path} from the knowledge folder? The file is removed from disk.",
  "knowledge.rejected": "Not imported: {list}",
  "knowledge.imported": "Imported {n} file(s); indexing…",
  "conversations.title": "Conversations",
  "conversations.new": "New chat",
  "conversations.rename": "Rename",
  "conversations.delete": "Delete",
  "conversations.confirm_delete": "Delete the conversation “{title}”?",
  "conversations.empty": "No conversations yet.",
  "chat.title": "Ask your documents",
  "chat.empty": "Ask a question in English or Chinese, or drop, paste or pick a photo to identify it.",
  "chat.placeholder": "What do cockatiels eat? / 玄凤鹦鹉吃什么？ (Enter to send, Shift+Enter for a new line)",
  "chat.send": "Send",
  "chat.stop": "Stop",
  "chat.pick_image": "Identify a photo…",
  "chat.copy": "Copy",
  "chat.copied": "Copied",
  "chat.stopped": "(stopped)",
  "chat.trace": "How this was answered",
  "chat.sources": "Sources",
  "chat.identifying": "Identifying…",
  "id.confidence": "Confidence: {level}",
  "id.looks": "Looks: {text}",
  "id.consulted": "Checked against your documents:",
  "id.not_consulted": "Not checked against your documents (the classifier was confident).",
  "id.decision": "Decision: {name}",
  "id.tip": "Tip: {text}",
  "passage.open": "Open file",
  "passage.close": "Close",
  "eval.title": "Retrieval evaluation",
  "eval.intro": "Run a golden set (questions with their relevant documents) under several retrieval configurations and compare them.",
  "eval.shipped": "Shipped golden set (sample knowledge)",
  "eval.pick": "Pick a JSONL file…",
  "eval.run": "Run",
  "eval.running": "Running…",
  "eval.misses": "Misses of {name}",
  "eval.no_misses": "No misses.",
  "eval.need_two": "Pick at least two configurations.",
  "settings.title": "Settings",
  "settings.llm": "Language model",
  "settings.provider": "Provider",
  "settings.gguf": "Embedded GGUF file",
  "settings.base_url": "OpenAI-compatible base URL",
  "settings.model": "Model",
  "settings.api_key": "API key",
  "settings.api_key_set": "(stored; type to replace, clear to remove)",
  "settings.models_dir": "Models folder (embedding, reranker, CLIP; used at next start)",
  "settings.retrieval": "Retrieval",
  "settings.rerank": "Cross-encoder rerank",
  "settings.mmr": "MMR diversity",
  "settings.mmr_lambda": "MMR λ (relevance vs diversity)",
  "settings.filter": "Relevance filter",
  "settings.min_score": "Minimum score",
  "settings.llm_rerank": "LLM rerank",
  "settings.summary": "Passage summaries",
  "settings.query_expansion": "Query expansion",
  "settings.appearance": "Appearance",
  "settings.language": "Language",
  "settings.language_system": "System",
  "settings.theme": "Theme",
  "settings.theme_system": "System",
  "settings.theme_light": "Light",
  "settings.theme_dark": "Dark",
  "settings.save": "Save",
  "settings.saved": "Settings saved.",
};

export type Key = keyof typeof en;

const zh: Record<Key, string> = {
  "app.loading": "正在打开索引…",
  "tab.chat": "对话",
  "tab.eval": "评测",
  "tab.settings": "设置",
  "knowledge.title": "知识库",
  "knowledge.add_files": "添加文件…",
  "knowledge.add_folder": "添加文件夹…",
  "knowledge.reindex_all": "全部重建索引",
  "knowledge.cancel": "取消",
  "knowledge.drop": "把文档拖到这里开始（Markdown、文本、PDF、Word）。",
  "knowledge.summary": "{docs} 个文档 · {chunks} 个片段 · {size}",
  "knowledge.chunks": "{n} 个片段",
  "knowledge.indexing": "正在索引 {done} / {total}",
  "knowledge.reindex_one": "重建索引",
  "knowledge.delete": "删除",
  "knowledge.confirm_delete": "从知识库删除 {path}？文件将从磁盘移除。",
  "knowledge.rejected": "未导入：{list}",
  "knowledge.imported": "已导入 {n} 个文件，正在索引…",
  "conversations.title": "对话记录",
  "conversations.new": "新对话",
  "conversations.rename": "重命名",
  "conversations.delete": "删除",
  "conversations.confirm_delete": "删除对话“{title}”？",
  "conversations.empty": "还没有对话。",
  "chat.title": "向你的文档提问",
  "chat.empty": "用中文或英文提问，或拖入、粘贴、选择一张照片来识别。",
  "chat.placeholder": "玄凤鹦鹉吃什么？/ What do cockatiels eat?（回车发送，Shift+回车换行）",
  "chat.send": "发送",
  "chat.stop": "停止",
  "chat.pick_image": "识别照片…",
  "chat.copy": "复制",
  "chat.copied": "已复制",
  "chat.stopped": "（已停止）",
  "chat.trace": "回答是如何得出的",
  "chat.sources": "来源",
  "chat.identifying": "正在识别…",
  "id.confidence": "置信度：{level}",
  "id.looks": "外观：{text}",
  "id.consulted": "已对照你的文档核实：",
  "id.not_consulted": "未查阅文档（分类器足够确定）。",
  "id.decision": "结论：{name}",
  "id.tip": "建议：{text}",
  "passage.open": "打开文件",
  "passage.close": "关闭",
  "eval.title": "检索评测",
  "eval.intro": "用黄金集（问题及其相关文档）在多种检索配置下运行并对比。",
  "eval.shipped": "内置黄金集（示例知识库）",
  "eval.pick": "选择 JSONL 文件…",
  "eval.run": "运行",
  "eval.running": "运行中…",
  "eval.misses": "{name} 未命中的问题",
  "eval.no_misses": "没有未命中。",
  "eval.need_two": "请至少选择两种配置。",
  "settings.title": "设置",
  "settings.llm": "语言模型",
  "settings.provider": "提供方",
  "settings.gguf": "内置 GGUF 文件",
  "settings.base_url": "OpenAI 兼容接口地址",
  "settings.model": "模型",
  "settings.api_key": "API 密钥",
  "settings.api_key_set": "（已保存；输入以替换，清空以删除）",
  "settings.models_dir": "模型文件夹（向量、重排、CLIP；下次启动生效）",
  "settings.retrieval": "检索",
  "settings.rerank": "交叉编码器重排",
  "settings.mmr": "MMR 多样性",
  "settings.mmr_lambda": "MMR λ（相关性与多样性）",
  "settings.filter": "相关性过滤",
  "settings.min_score": "最低分数",
  "settings.llm_rerank": "LLM 重排",
  "settings.summary": "段落摘要",
  "settings.query_expansion": "查询扩展",
  "settings.appearance": "外观",
  "settings.language": "语言",
  "settings.language_system": "跟随系统",
  "settings.theme": "主题",
  "settings.theme_system": "跟随系统",
  "settings.theme_light": "浅色",
  "settings.theme_dark": "深色",
  "settings.save": "保存",
  "settings.saved": "设置已保存。",
};

const tables: Record<Language, Record<Key, string>> = { en, zh };
let current: Language = "en";

/** The language to use: the setting, else the system's. */
export function pickLanguage(setting: Language | null, system: string): Language {
  return setting ?? (system.toLowerCase().startsWith("zh") ? "zh" : "en");
}

export function setLanguage(language: Language) {
  current = language;
}

export function language(): Language {
  return current;
}

/** The text for `key` with {name} placeholders filled. */
export function t(key: Key, vars: Record<string, string | number> = {}): string {
  return tables[current][key].replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? `{${name}}`));
}

/** Fills every element under `root` that names a key. */
export function applyTranslations(root: ParentNode) {
  for (const node of Array.from(root.querySelectorAll<HTMLElement>("[data-i18n]"))) node.textContent = t(node.dataset.i18n as Key);
  for (const node of Array.from(root.querySelectorAll<HTMLElement>("[data-i18n-placeholder]")))
    node.setAttribute("placeholder", t(node.dataset.i18nPlaceholder as Key));
  for (const node of Array.from(root.querySelectorAll<HTMLElement>("[data-i18n-title]"))) node.title = t(node.dataset.i18nTitle as Key);
}
