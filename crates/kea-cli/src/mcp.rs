//! `kea mcp`: Kea as a Model Context Protocol server over stdio (the rmcp
//! SDK), so other assistants search the user's collections. Tools `search`,
//! `ask` and `list_documents`; every indexed document is a resource
//! `kea://<collection>/<path>`. Collections open read-only on first use (the
//! app may be indexing them: nothing is written from here, and a collection
//! the app changed is opened again), so `initialize` is answered at once.
//! Arguments are checked here and refused with JSON-RPC errors. Stdout is
//! the protocol; anything else goes to stderr.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kea_engine::chat::ChatOptions;
use kea_engine::collections::Library;
use kea_engine::settings::{Overrides, Settings};
use kea_engine::store::DocRecord;
use kea_engine::{Engine, ErrorKind, RetrievalConfig};
use kea_llm::LlmChoice;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::chat::LlmArgs;

/// The longest query or question taken (a longer one is refused).
pub const MAX_QUERY_CHARS: usize = 2000;
const MAX_TOP_K: u64 = 50;
/// Resources listed per page.
const RESOURCE_PAGE: usize = 500;
/// A collection the app changed is opened again at most this often.
const REOPEN_EVERY: Duration = Duration::from_secs(5);
const SCHEME: &str = "kea://";

/// What `kea mcp` serves: the collections and settings, and which
/// collections a call without `kb` uses.
pub struct Scope {
    /// The app's data folder (its `collections.json` is read at every call:
    /// a collection made in the app meanwhile is served too).
    pub data_dir: std::path::PathBuf,
    pub settings: Settings,
    pub overrides: Overrides,
    pub knowledge: Option<std::path::PathBuf>,
    /// The global `--kb` names (empty: the default collection).
    pub default_kb: Vec<String>,
    pub llm: LlmArgs,
}

/// A collection a call names, and the read-only configuration it opens with.
struct Served {
    name: String,
    config: kea_engine::EngineConfig,
}

/// An open collection, when it was opened and how long that took.
struct Opened {
    engine: Arc<Engine>,
    at: Instant,
    took: Duration,
}

/// The server's state, shared by the requests it serves at once.
struct Kea {
    scope: Scope,
    engines: Mutex<HashMap<String, Opened>>,
    /// The language model `ask` answers with, chosen at the first `ask`
    /// (a failed choice is tried again at the next).
    llm: Mutex<Option<Arc<(LlmChoice, ChatOptions)>>>,
}

/// A JSON-RPC "invalid params" error.
fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// An engine error as the client sees it: its input, or Kea's failure.
fn engine_error(e: &kea_engine::Error) -> ErrorData {
    match e.kind() {
        ErrorKind::InvalidInput | ErrorKind::NotFound => invalid(e.to_string()),
        _ => ErrorData::internal_error(e.to_string(), None),
    }
}

fn anyhow_error(e: &anyhow::Error) -> ErrorData {
    match e.downcast_ref::<kea_engine::Error>() {
        Some(e) => engine_error(e),
        None => ErrorData::internal_error(e.to_string(), None),
    }
}

/// A tool's arguments, every name checked against the ones it takes.
struct Arguments(JsonObject);

impl Arguments {
    fn of(tool: &str, arguments: Option<JsonObject>, known: &[&str]) -> Result<Arguments, ErrorData> {
        let map = arguments.unwrap_or_default();
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(invalid(format!("{tool} takes no argument '{unknown}' (it takes {})", known.join(", "))));
        }
        Ok(Arguments(map))
    }

    /// A string argument of at most `max` characters (required or not).
    fn text(&self, name: &str, required: bool, max: usize) -> Result<Option<String>, ErrorData> {
        match self.0.get(name) {
            None | Some(Value::Null) if required => Err(invalid(format!("'{name}' is required"))),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Err(invalid(format!("'{name}' is empty"))),
            Some(Value::String(s)) if s.chars().count() > max => {
                Err(invalid(format!("'{name}' is {} characters long; at most {max} are taken", s.chars().count())))
            }
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(invalid(format!("'{name}' must be a string, not {other}"))),
        }
    }

    /// A whole number argument in `range`.
    fn number(&self, name: &str, range: std::ops::RangeInclusive<u64>) -> Result<Option<u64>, ErrorData> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| range.contains(&n)) => Ok(n.as_u64()),
            Some(other) => Err(invalid(format!("'{name}' must be a whole number from {} to {}, not {other}", range.start(), range.end()))),
        }
    }
}

/// `kea://<collection>/<path>`, each part percent-encoded.
pub fn document_uri(collection: &str, path: &str) -> String {
    let parts: Vec<String> = std::iter::once(collection).chain(path.split('/')).map(encode).collect();
    format!("{SCHEME}{}", parts.join("/"))
}

fn encode(part: &str) -> String {
    part.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The collection and document path a `kea://` URI names.
fn parse_uri(uri: &str) -> Result<(String, String), ErrorData> {
    let bad = || invalid(format!("{uri} is not a Kea document (kea://<collection>/<path>)"));
    let rest = uri.strip_prefix(SCHEME).ok_or_else(bad)?;
    let decoded: Vec<String> = rest.split('/').map(decode).collect::<Option<_>>().ok_or_else(bad)?;
    match decoded.split_first() {
        Some((collection, path)) if !collection.is_empty() && !path.is_empty() => Ok((collection.clone(), path.join("/"))),
        _ => Err(bad()),
    }
}

fn decode(part: &str) -> Option<String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(part.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl Kea {
    /// The collections as they are now (a damaged registry still serves the default one).
    fn library(&self) -> Library {
        Library::load(&self.scope.data_dir).unwrap_or_else(|e| {
            eprintln!("kea mcp: {e}");
            Library::empty(&self.scope.data_dir)
        })
    }

    /// The collections `kb` names (`all`, one name; none: the server's
    /// default), each with the read-only configuration it opens with (the
    /// registry read once per call).
    fn collections(&self, kb: Option<&str>) -> Result<Vec<Served>, ErrorData> {
        let names = kb.map_or_else(|| self.scope.default_kb.clone(), |kb| vec![kb.to_string()]);
        let library = self.library();
        let found = library.resolve(&names, &self.scope.settings, self.scope.knowledge.clone()).map_err(|e| engine_error(&e))?;
        Ok(found
            .iter()
            .map(|c| {
                let mut config = library.engine_config(c, &self.scope.settings, &self.scope.overrides);
                config.read_only = true;
                Served { name: c.name.clone(), config }
            })
            .collect())
    }

    /// The names of every collection (for the tools' descriptions).
    fn collection_names(&self) -> Vec<String> {
        self.library().list(&self.scope.settings, self.scope.knowledge.clone()).into_iter().map(|c| c.name).collect()
    }

    /// `collection`'s engine, opened read-only (again when the app changed
    /// it, at most every [`REOPEN_EVERY`] or ten times as long as the last
    /// open took, so a collection the app is busy indexing is not rebuilt
    /// over and over). Opened outside the lock: other requests go on.
    fn engine(&self, collection: &Served) -> Result<Arc<Engine>, ErrorData> {
        let current = self.engines.lock().unwrap_or_else(|p| p.into_inner()).get(&collection.name).map(|o| (o.engine.clone(), o.at, o.took));
        if let Some((engine, at, took)) = current {
            let due = at.elapsed() >= REOPEN_EVERY.max(took * 10);
            if !due || !engine.changed_since_open().unwrap_or(true) {
                return Ok(engine);
            }
        }
        let started = Instant::now();
        let engine = Arc::new(Engine::open(collection.config.clone()).map_err(|e| engine_error(&e))?);
        let opened = Opened { engine: engine.clone(), at: Instant::now(), took: started.elapsed() };
        self.engines.lock().unwrap_or_else(|p| p.into_inner()).insert(collection.name.clone(), opened);
        Ok(engine)
    }

    fn engines(&self, collections: &[Served]) -> Result<Vec<Arc<Engine>>, ErrorData> {
        collections.iter().map(|c| self.engine(c)).collect()
    }

    /// The `search` tool: `kea search --json`'s hits, each with a citation id and its document's URI.
    fn search(&self, args: &Arguments) -> Result<Value, ErrorData> {
        let query = args.text("query", true, MAX_QUERY_CHARS)?.unwrap_or_default();
        let top_k = args.number("top_k", 1..=MAX_TOP_K)?.unwrap_or(5) as usize;
        let collections = self.collections(args.text("kb", false, 200)?.as_deref())?;
        let opened = self.engines(&collections)?;
        let retrieval = RetrievalConfig { top_k, ..self.scope.settings.retrieval.clone() };
        let result = crate::search::retrieve(&opened.iter().map(Arc::as_ref).collect::<Vec<_>>(), &query, &retrieval).map_err(|e| anyhow_error(&e))?;
        let passages: Vec<Value> = result
            .hits
            .iter()
            .map(|hit| {
                let collection = hit.chunk.collection.clone().unwrap_or_else(|| collections[0].name.clone());
                let mut passage = crate::search::hit_json(hit);
                passage["collection"] = json!(collection);
                passage["citation_id"] = json!(format!("{collection}#{}", hit.chunk.id));
                passage["title"] = json!(hit.chunk.title);
                passage["uri"] = json!(document_uri(&collection, &hit.chunk.source));
                passage["url"] = json!(hit.chunk.url);
                passage
            })
            .collect();
        Ok(json!({ "query": query, "collections": collections.iter().map(|c| &c.name).collect::<Vec<_>>(), "passages": passages }))
    }

    /// The language model and options `ask` answers with.
    fn answering(&self, collection: &Served) -> Result<Arc<(LlmChoice, ChatOptions)>, ErrorData> {
        let mut chosen = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(chosen) = chosen.as_ref() {
            return Ok(chosen.clone());
        }
        let choice = crate::chat::answering(&collection.config, &self.scope.settings, &self.scope.llm, 384)
            .map_err(|e| ErrorData::internal_error(format!("no language model: {e}"), None))?;
        Ok(chosen.insert(Arc::new(choice)).clone())
    }

    /// The `ask` tool: Kea's own decision, answer and citations.
    fn ask(&self, args: &Arguments) -> Result<Value, ErrorData> {
        let question = args.text("question", true, MAX_QUERY_CHARS)?.unwrap_or_default();
        let collections = self.collections(args.text("kb", false, 200)?.as_deref())?;
        let opened = self.engines(&collections)?;
        let (first, rest) = opened.split_first().ok_or_else(|| invalid("no collection to ask"))?;
        let answering = self.answering(&collections[0])?;
        let (choice, options) = (&answering.0, &answering.1);
        let answerer = match rest {
            [] => first.answerer(),
            _ => first.answerer_over(Box::new(first.across(&rest.iter().map(Arc::as_ref).collect::<Vec<_>>()))),
        };
        let answer = answerer.ask(choice.provider.as_ref(), None, &question, options, &mut |_| {}, &|| false).map_err(|e| engine_error(&e))?;
        let citations: Vec<Value> = answer
            .citations
            .iter()
            .map(|c| {
                let collection = c.collection.clone().unwrap_or_else(|| collections[0].name.clone());
                json!({
                    "label": c.id, "citation_id": format!("{collection}#{}", c.chunk_id), "collection": collection,
                    "source": c.source, "heading_path": c.heading_path, "page": c.page,
                    "uri": document_uri(&collection, &c.source), "url": c.url,
                })
            })
            .collect();
        Ok(json!({
            "outcome": answer.shown.outcome, "answer": answer.answer, "notice": answer.shown.notice,
            "citations": citations, "language_model": choice.provider.describe(),
        }))
    }

    /// How many documents `collections` hold, and `limit` of them from the
    /// `offset`-th (collection by collection, in path order).
    fn documents(&self, collections: &[Served], offset: usize, limit: usize) -> Result<(usize, Vec<(String, DocRecord)>), ErrorData> {
        let (mut total, mut page) = (0, Vec::new());
        for collection in collections {
            let skip = offset.saturating_sub(total);
            let (count, documents) = self.engine(collection)?.documents().page(skip, limit - page.len()).map_err(|e| engine_error(&e))?;
            total += count;
            page.extend(documents.into_iter().map(|d| (collection.name.clone(), d)));
        }
        Ok((total, page))
    }

    /// The `list_documents` tool: each document with its state and URI.
    fn list_documents(&self, args: &Arguments) -> Result<Value, ErrorData> {
        let collections = self.collections(args.text("kb", false, 200)?.as_deref())?;
        let offset = args.number("offset", 0..=u64::from(u32::MAX))?.unwrap_or(0) as usize;
        let limit = args.number("limit", 1..=1000)?.unwrap_or(200) as usize;
        let (total, page) = self.documents(&collections, offset, limit)?;
        let documents: Vec<Value> = page
            .into_iter()
            .map(|(collection, d)| {
                json!({
                    "collection": collection, "path": d.path, "title": d.title, "kind": d.kind.map(|k| k.as_str()),
                    "state": if d.error.is_some() { "error" } else { "indexed" }, "error": d.error, "chunks": d.chunk_count,
                    "indexed_at": d.indexed_at, "uri": document_uri(&collection, &d.path), "url": d.link(),
                })
            })
            .collect();
        Ok(json!({ "total": total, "offset": offset, "documents": documents }))
    }

    /// A document's indexed text, by its URI.
    fn read(&self, uri: &str) -> Result<String, ErrorData> {
        let (name, path) = parse_uri(uri)?;
        if name.eq_ignore_ascii_case(kea_engine::collections::ALL_COLLECTIONS) {
            return Err(invalid(format!("{uri}: a document is in one collection, not in \"{name}\"")));
        }
        let collection = self.collections(Some(&name))?.remove(0);
        self.engine(&collection)?.documents().indexed_text(&path).map_err(|e| match e.kind() {
            ErrorKind::NotFound => ErrorData::resource_not_found(e.to_string(), None),
            _ => engine_error(&e),
        })
    }

    /// One page of every document of the default collections, as resources.
    fn resources(&self, cursor: Option<&str>) -> Result<(Vec<Resource>, Option<String>), ErrorData> {
        let start: usize = cursor.map_or(Ok(0), str::parse).map_err(|_| invalid("not a cursor of this server"))?;
        let (total, page) = self.documents(&self.collections(None)?, start, RESOURCE_PAGE)?;
        let resources = page
            .into_iter()
            .map(|(collection, d)| {
                let name = d.title.clone().unwrap_or_else(|| d.path.clone());
                Resource::new(document_uri(&collection, &d.path), name).with_description(format!("{collection} › {}", d.path)).with_mime_type("text/markdown")
            })
            .collect();
        Ok((resources, (start + RESOURCE_PAGE < total).then(|| (start + RESOURCE_PAGE).to_string())))
    }
}

/// The tools, their descriptions naming the collections there are.
fn tools(names: &[String], default: &[String]) -> Vec<Tool> {
    let kb = json!({
        "type": "string",
        "description": format!(
            "Which collection: one of {}, or \"all\" for every one. Default: {}.",
            names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", "),
            if default.is_empty() { names.first().cloned().unwrap_or_default() } else { default.join(", ") }
        ),
    });
    let schema = |properties: Value, required: &[&str]| -> Arc<JsonObject> {
        let value = json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
        Arc::new(value.as_object().cloned().unwrap_or_default())
    };
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            "search",
            "Search the user's own documents (their Kea collections: notes, PDFs, Word files, spreadsheets, saved web pages) \
             and return the best passages, each with its document path and title, section heading path, page, relevance score, \
             a citation id and the document's resource URI. Use it for any question about the user's files; cite passages by \
             their citation id. Works in Chinese and English. An empty list means nothing relevant is indexed.",
            schema(
                json!({
                    "query": { "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "What to look for: a question or keywords, in the user's words." },
                    "kb": kb,
                    "top_k": { "type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5, "description": "How many passages to return." },
                }),
                &["query"],
            ),
        )
        .annotate(read_only.clone()),
        Tool::new(
            "ask",
            "Answer a question from the user's documents as Kea's own chat does: Kea first decides whether its documents \
             answer it (outcome \"answered\", \"unsure\" or \"refused\"; refused means the documents do not cover it: do not \
             make an answer up then) and returns its answer with citations (document, heading path, page, URI). Prefer \
             `search` to read the passages and write the answer yourself.",
            schema(
                json!({
                    "question": { "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "The question, in Chinese or English." },
                    "kb": kb,
                }),
                &["question"],
            ),
        )
        .annotate(read_only.clone()),
        Tool::new(
            "list_documents",
            "List the documents indexed in the user's collections: path, title, kind, state (\"indexed\", or \"error\" with \
             the reason), number of passages, when it was indexed (Unix seconds) and the resource URI to read it whole.",
            schema(
                json!({
                    "kb": kb,
                    "offset": { "type": "integer", "minimum": 0, "default": 0, "description": "How many documents to skip." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "default": 200, "description": "How many documents to list." },
                }),
                &[],
            ),
        )
        .annotate(read_only),
    ]
}

/// The rmcp handler over the shared state.
#[derive(Clone)]
struct Server(Arc<Kea>);

impl Server {
    /// Runs `f` on the state away from the protocol's thread.
    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce(&Kea) -> Result<T, ErrorData> + Send + 'static) -> Result<T, ErrorData> {
        let kea = self.0.clone();
        tokio::task::spawn_blocking(move || f(&kea)).await.map_err(|e| ErrorData::internal_error(format!("the request failed: {e}"), None))?
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("kea", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Kea indexes the user's own documents. Call `search` for passages about anything in the user's files, `ask` \
                 for Kea's own cited answer, `list_documents` to see what is indexed; read a whole document at its kea:// URI.",
            )
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let (names, default) = (self.0.collection_names(), self.0.scope.default_kb.clone());
        Ok(ListToolsResult::with_all_items(tools(&names, &default)))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let known: &'static [&'static str] = match name.as_str() {
            "search" => &["query", "kb", "top_k"],
            "ask" => &["question", "kb"],
            "list_documents" => &["kb", "offset", "limit"],
            other => return Err(invalid(format!("no tool '{other}' (Kea has search, ask and list_documents)"))),
        };
        let args = Arguments::of(&name, request.arguments, known)?;
        let value = self
            .blocking(move |kea| match name.as_str() {
                "search" => kea.search(&args),
                "ask" => kea.ask(&args),
                _ => kea.list_documents(&args),
            })
            .await?;
        Ok(CallToolResult::structured(value).into())
    }

    async fn list_resources(&self, request: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let (resources, next) = self.blocking(move |kea| kea.resources(cursor.as_deref())).await?;
        let mut page = ListResourcesResult::with_all_items(resources);
        page.next_cursor = next;
        Ok(page)
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("kea://{collection}/{+path}", "document")
            .with_description("A document of a collection, its indexed text section by section (the `uri` of a search result or listed document)")
            .with_mime_type("text/markdown");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let text = self.blocking(move |kea| kea.read(&uri)).await?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("text/markdown")]).into())
    }
}

/// Serves MCP on stdin/stdout until the client closes it.
pub fn run(scope: Scope) -> anyhow::Result<ExitCode> {
    let server = Server(Arc::new(Kea { scope, engines: Mutex::new(HashMap::new()), llm: Mutex::new(None) }));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let running = server.serve(rmcp::transport::stdio()).await?;
        let reason = running.waiting().await?;
        eprintln!("kea mcp: stopped ({reason:?})");
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_uris_round_trip_any_name_and_refuse_others() {
        for (collection, path) in [("default", "parrots/cockatiel.md"), ("My notes", "鹦鹉/玄凤 鹦鹉.md"), ("a%b", "Web pages/Q&A #1.html")] {
            let uri = document_uri(collection, path);
            assert!(uri.is_ascii() && !uri.contains(' '), "{uri}");
            assert_eq!(parse_uri(&uri).unwrap(), (collection.to_string(), path.to_string()));
        }
        for bad in ["kea://default", "kea:///a.md", "file:///etc/passwd", "kea://x/%zz.md", "kea://x/%e9.md"] {
            assert!(parse_uri(bad).is_err(), "{bad}");
        }
    }
}
