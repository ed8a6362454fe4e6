//! The retrieval pipeline through `kea search` and `kea eval` on the sample
//! knowledge: Chinese word matching, the reranker (a generated fixture
//! model, see scripts/make_fixture_models.py) and its fallbacks, cited
//! context, and the golden-set metrics.

use serde_json::Value;

use super::util::{repo_root, Sandbox};

fn indexed() -> Sandbox {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    sandbox
}

fn sources(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap().iter().map(|h| h["source"].as_str().unwrap().to_string()).collect()
}

#[test]
fn chinese_query_found_by_segmented_bm25_and_not_by_the_english_embedder() {
    let sandbox = indexed();
    // 墨鱼骨 (cuttlebone) sits inside a long Chinese sentence of the budgerigar document.
    let bm25 = sandbox.json(&["search", "墨鱼骨", "--mode", "fts", "--json"]);
    assert_eq!(sources(&bm25)[0], "鹦鹉/虎皮鹦鹉.md");
    let dense = sandbox.json(&["search", "墨鱼骨", "--mode", "dense", "--json"]);
    assert_ne!(sources(&dense)[0], "鹦鹉/虎皮鹦鹉.md", "MiniLM is English-only");
    let hybrid = sandbox.json(&["search", "墨鱼骨", "--json"]);
    assert_eq!(sources(&hybrid)[0], "鹦鹉/虎皮鹦鹉.md");
}

#[test]
fn trace_shows_every_stage_and_the_missing_reranker_fallback() {
    let sandbox = indexed();
    let out = sandbox.decided(&["search", "What do cockatiels eat?", "--trace", "--json"], crate::decisions::Expect::Not("refused"));
    let stages: Vec<&str> = out["trace"]["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["embed", "dense", "sparse", "fusion", "mmr", "context", "relevance"], "search compares no sentences: only an answer does");
    let fallbacks = out["trace"]["fallbacks"].to_string();
    assert!(fallbacks.contains("no reranker configured"), "{fallbacks}");
    assert_eq!(out["hits"][0]["source"], "parrots/cockatiel.md");

    let broken = sandbox.json(&["--reranker", "no-such-reranker", "search", "What do cockatiels eat?", "--trace", "--json"]);
    assert!(broken["trace"]["fallbacks"].to_string().contains("no-such-reranker"), "the failure is named");
    assert!(!broken["hits"].as_array().unwrap().is_empty(), "a failing reranker never fails the query");
}

#[test]
fn fixture_reranker_reorders_and_the_filter_applies() {
    let sandbox = indexed();
    let out = sandbox.json(&["--reranker", "fixture-reranker", "search", "cuttlebone mineral block calcium", "--trace", "--json"]);
    let stages: Vec<&str> = out["trace"]["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["embed", "dense", "sparse", "fusion", "mmr", "rerank", "filter", "context", "relevance"]);
    assert!(!out["trace"]["fallbacks"].to_string().contains("rerank"), "{}", out["trace"]["fallbacks"]);
    let hits = out["hits"].as_array().unwrap();
    assert_eq!(hits[0]["source"], "parrots/budgerigar.md");
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "ordered by rerank score: {scores:?}");
    assert!(scores.iter().all(|&s| s >= 0.28), "the absolute filter dropped low scores: {scores:?}");
    assert!(hits.iter().all(|h| h["scores"]["rerank"].is_number()));
}

#[test]
fn context_blocks_cite_only_retrieved_chunks() {
    let sandbox = indexed();
    let out = sandbox.json(&["search", "How long do African grey parrots live?", "--trace", "--json", "--top-k", "6"]);
    let hit_ids: Vec<i64> = out["hits"].as_array().unwrap().iter().map(|h| h["chunk_id"].as_i64().unwrap()).collect();
    let blocks = out["context"]["blocks"].as_array().unwrap();
    assert!(!blocks.is_empty());
    for (i, block) in blocks.iter().enumerate() {
        assert_eq!(block["label"], format!("S{}", i + 1));
        for id in block["chunk_ids"].as_array().unwrap() {
            assert!(hit_ids.contains(&id.as_i64().unwrap()), "block {block} cites a chunk that was not retrieved");
        }
    }
    let text = out["context"]["text"].as_str().unwrap();
    assert!(text.starts_with("[S1] parrots/african-grey.md | African Grey Parrot > "), "{text}");
    assert!(out["context"]["estimated_tokens"].as_u64().unwrap() <= 1500);
}

fn eval(sandbox: &Sandbox, golden: &str) -> Vec<Value> {
    let path = repo_root().join("tests/golden").join(golden);
    let out = sandbox.json(&["--reranker", "fixture-reranker", "eval", path.to_str().unwrap(), "--json"]);
    out["results"].as_array().unwrap().clone()
}

fn metric(results: &[Value], config: &str, name: &str) -> f64 {
    let r = results.iter().find(|r| r["name"] == config).unwrap_or_else(|| panic!("no config {config}"));
    r["metrics"][name].as_f64().unwrap()
}

#[test]
fn golden_set_hybrid_beats_each_retriever_alone() {
    let sandbox = indexed();
    let results = eval(&sandbox, "sample-knowledge.jsonl");
    let names: Vec<&str> = results.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dense", "bm25", "hybrid", "hybrid+mmr", "hybrid+mmr+rerank", "full"]);
    assert_eq!(results[0]["metrics"]["queries"], 40);
    for m in ["recall_5", "mrr_10"] {
        assert!(metric(&results, "hybrid", m) >= metric(&results, "dense", m), "{m}: hybrid < dense");
        assert!(metric(&results, "hybrid", m) >= metric(&results, "bm25", m), "{m}: hybrid < bm25");
    }
    assert!(metric(&results, "hybrid", "recall_10") >= 0.9);
}

#[test]
fn species_names_in_chinese_and_english_hit_the_top_3() {
    let sandbox = indexed();
    let results = eval(&sandbox, "species-names.jsonl");
    assert_eq!(metric(&results, "hybrid+mmr", "queries"), 67.0, "names, Latin names and aliases from front matter");
    assert_eq!(metric(&results, "hybrid+mmr", "hit_3"), 1.0, "every species name finds its documents in the top 3");
}

/// The engine holds its vector index through one seam: the exact in-RAM
/// index (rebuilt from the store at start) finds what usearch finds.
#[test]
fn the_exact_vector_index_agrees_with_usearch() {
    let sandbox = indexed();
    for query in ["What do cockatiels eat?", "How long do African grey parrots live?", "toxic foods for birds"] {
        let top = |backend: &str| -> Vec<String> {
            let hits = sandbox.json(&["--vector-index", backend, "search", query, "--mode", "dense", "--top-k", "3", "--json"]);
            hits.as_array().unwrap().iter().map(|h| format!("{}#{}", h["source"], h["chunk_id"])).collect()
        };
        assert_eq!(top("exact")[0], top("usearch")[0], "{query}");
    }
    let after = sandbox.json(&["--vector-index", "exact", "index", "--json"]);
    assert_eq!(after["errors"].as_array().map_or(0, Vec::len), 0, "{after}");
    assert!(!sandbox.search("What do cockatiels eat?", 3).is_empty(), "usearch reopens after an exact-index run");
}

/// A question naming a subject whose documents are all in the other
/// language is also searched with the other language's name, until the
/// subject gets a document in the question's language (the same engine,
/// after a sync: the names are rebuilt when the store changes).
#[test]
fn a_name_is_translated_until_its_subject_has_a_document_in_the_question_language() {
    use kea_engine::{CancelToken, Engine, EngineConfig, RetrievalConfig};
    let sandbox = Sandbox::empty();
    let front = "---\nzh: 玄凤鹦鹉\nen: Cockatiel\nlatin: Nymphicus hollandicus\n---\n";
    std::fs::write(sandbox.path("cockatiel.md"), format!("{front}# Cockatiel\n\n## Diet\n\nSeeds, pellets and greens.\n")).unwrap();
    let mut config = EngineConfig::new(&sandbox.knowledge, &sandbox.data);
    config.model_paths.dirs.insert(0, repo_root().join("models"));
    let engine = Engine::open(config).unwrap();
    engine.indexer().sync(&(), &CancelToken::new()).unwrap();
    let searched = |engine: &Engine| engine.retriever().retrieve("玄凤鹦鹉吃什么", &RetrievalConfig::default()).unwrap().trace.query;
    // The English-only embedder also gets the question word for word (the words the page holds).
    assert_eq!(searched(&engine), "玄凤鹦鹉吃什么 | Cockatiel 吃什么 | cockatiel");
    std::fs::write(sandbox.path("玄凤鹦鹉.md"), format!("{front}# 玄凤鹦鹉\n\n## 饮食\n\n草籽、颗粒饲料和蔬菜。\n")).unwrap();
    engine.indexer().sync(&(), &CancelToken::new()).unwrap();
    assert_eq!(searched(&engine), "玄凤鹦鹉吃什么", "the subject has a Chinese page now: nothing to translate, nor to cross");
}
